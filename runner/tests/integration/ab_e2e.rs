//! `goldgate ab` end to end with the fake trainer (issue 20): every job recorded as `goldgate
//! run` records one (its own `run.json` and `results.json`, the arm in its environment), a
//! planted save delay decided as a regression after one pair, an A/A run that cannot decide
//! with one pair is `inconclusive` (exit 0, or 1 under `--strict`), and a bad arm is refused
//! before any job runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;

use common::cli::{self, code, repo, text};

fn ab(out: &Path, args: &[&str]) -> Output {
    cli::goldgate()
        .current_dir(repo())
        .args(["ab", "fake/quick", "--root", "runner/tests/fixtures/cases"])
        .args(["--out", out.to_str().unwrap(), "--seed", "11"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The one A/B folder under `out` and its `ab.json`.
fn ab_json(out: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let dirs: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let json = std::fs::read(dirs[0].join("ab.json")).unwrap();
    (dirs[0].clone(), serde_json::from_slice(&json).unwrap())
}

fn metric<'a>(ab: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    ab["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("no {name} in {ab}"))
}

#[test]
fn a_planted_save_delay_is_a_regression_after_one_pair() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(
        out.path(),
        &[
            "--b-env",
            "GOLDGATE_PLANT_SAVE_DELAY_S=0.6",
            "--spread",
            "0.1",
            "--max-pairs",
            "3",
            "--warmup",
            "1",
        ],
    );
    assert_eq!(code(&o), 1, "{}", text(&o));
    let (dir, ab) = ab_json(out.path());
    let save = metric(&ab, "checkpoint-blocking-time");
    assert_eq!(save["verdict"], "regression", "{save}");
    assert_eq!(
        save["pairs"], 1,
        "a +0.6 s save stops after one pair: {save}"
    );
    assert!(save["change"].as_f64().unwrap() > 1.0, "{save}");
    assert_eq!(ab["exit_code"], 1);
    assert_eq!(
        metric(&ab, "lm loss")["verdict"],
        "pass",
        "the delay leaves the loss alone"
    );
    let jobs = ab["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3, "a warm-up and one pair: {jobs:?}");
    assert_eq!(jobs[0]["warmup"], true);
    for job in jobs {
        let run = dir.join(job["run_id"].as_str().unwrap());
        assert!(run.join("run.json").is_file(), "{}", run.display());
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join(job["results"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(record["env"]["GOLDGATE_AB_ARM"], job["arm"], "{job}");
        let planted = record["env"].get("GOLDGATE_PLANT_SAVE_DELAY_S").is_some();
        assert_eq!(planted, job["arm"] == "b", "{job}");
        assert_eq!(record["warmup"] == true, job["warmup"] == true, "{job}");
    }
    let t = text(&o);
    assert!(
        t.contains("repro arm b: goldgate repro fake/quick --env GOLDGATE_PLANT_SAVE_DELAY_S=0.6"),
        "{t}"
    );
}

#[test]
fn a_planted_empty_cache_fails_on_the_counters_in_one_pair() {
    let out = tempfile::tempdir().unwrap();
    let o = cli::goldgate()
        .current_dir(repo())
        .args([
            "ab",
            "fake/counters",
            "--root",
            "runner/tests/fixtures/cases",
        ])
        .args(["--out", out.path().to_str().unwrap(), "--seed", "5"])
        .args([
            "--b-env",
            "GOLDGATE_PLANT_EMPTY_CACHE=1",
            "--max-pairs",
            "4",
        ])
        .env_remove("GOLDGATE_PLANT_EMPTY_CACHE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", text(&o));
    let (_, ab) = ab_json(out.path());
    assert_eq!(
        ab["pairs"], 1,
        "a counter regression ends the sequence: {ab}"
    );
    let calls = metric(&ab, "checkpoint-empty-cache-calls");
    assert_eq!(calls["verdict"], "regression", "{calls}");
    assert_eq!(calls["test"], "rule");
    assert_eq!(
        (calls["a"].as_f64(), calls["b"].as_f64()),
        (Some(0.0), Some(1.0))
    );
    assert_eq!(metric(&ab, "lm loss")["verdict"], "pass");
}

#[test]
fn an_undecided_aa_run_is_inconclusive_and_fails_only_when_strict() {
    for (strict, want) in [(false, 0), (true, 1)] {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec!["--spread", "0.5", "--max-pairs", "1"];
        if strict {
            args.push("--strict");
        }
        let o = ab(out.path(), &args);
        assert_eq!(code(&o), want, "strict {strict}: {}", text(&o));
        let (_, ab) = ab_json(out.path());
        assert_eq!(
            metric(&ab, "checkpoint-blocking-time")["verdict"],
            "inconclusive"
        );
        assert!(
            text(&o).contains("warning: INCONCLUSIVE after 1 pair(s)"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn a_bad_arm_is_refused_before_any_job() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(out.path(), &["--b-variant", "allocator=nonsense"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let o = ab(out.path(), &["--b-env", "1BAD=x"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "no job ran: {left:?}");
}

/// An arm's environment is the planning's too: `--a-env MEGATRON_LM_DIR=TREE` moves the
/// default entry (`${MEGATRON_LM_DIR}/pretrain_gpt.py`) into that tree even when the caller's
/// own `MEGATRON_LM_DIR` names another (the head's), as `ab` prints each arm's repro line.
#[test]
fn an_arms_environment_resolves_the_entry_into_its_own_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cases");
    cli::write(
        &root.join("gpt/tiny/model_config.yaml"),
        "MODEL_ARGS:\n  --train-iters: 4\nTEST_TYPE: regular\n",
    );
    std::fs::write(
        dir.path().join("goldgate.yaml"),
        "platforms:\n  cpu:\n    gpus_per_node: 1\n",
    )
    .unwrap();
    let repro = |extra: &[&str]| {
        let o = cli::goldgate()
            .current_dir(dir.path())
            .args(["repro", "gpt/tiny", "--root", "cases", "--platform", "cpu"])
            .args(extra)
            .env("MEGATRON_LM_DIR", "/trees/head")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    assert!(repro(&[]).contains("/trees/head/pretrain_gpt.py"));
    let base = repro(&["--env", "MEGATRON_LM_DIR=/trees/base"]);
    assert!(base.contains("/trees/base/pretrain_gpt.py"), "{base}");
    assert!(!base.contains("/trees/head/pretrain_gpt.py"), "{base}");
}
