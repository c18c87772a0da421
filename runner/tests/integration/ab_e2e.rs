//! `goldgate ab` end to end with the fake trainer: every job recorded as `goldgate
//! run` records one (its own `run.json` and `results.json`, the arm in its environment), a
//! planted save delay decided as a regression within the pairs allowed, an A/A run that cannot decide
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
pub(crate) fn ab_json(out: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let all = ab_jsons(out);
    assert_eq!(all.len(), 1, "{all:?}");
    all.into_iter().next().unwrap()
}

/// Every A/B folder under `out` with its `ab.json`.
fn ab_jsons(out: &Path) -> Vec<(std::path::PathBuf, serde_json::Value)> {
    let mut dirs: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let json = std::fs::read(dir.join("ab.json")).unwrap();
            (dir, serde_json::from_slice(&json).unwrap())
        })
        .collect()
}

/// The entry of `ab.json`'s `metrics` for `name`.
pub(crate) fn metric<'a>(ab: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    ab["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("no {name} in {ab}"))
}

#[test]
fn a_planted_save_delay_is_a_regression_within_the_pairs_allowed() {
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
    // Idle, one pair decides it; on a loaded 2-core machine the unchanged saves stretch too
    // and a second or third pair may be needed. The sequence stops at the pair that decides.
    let pairs = save["pairs"].as_u64().unwrap();
    assert!(
        (1..=3).contains(&pairs),
        "a +0.6 s save is decided within 3 pairs: {save}"
    );
    assert!(save["change"].as_f64().unwrap() > 0.2, "{save}");
    assert_eq!(ab["exit_code"], 1);
    assert_eq!(
        metric(&ab, "lm loss")["verdict"],
        "pass",
        "the delay leaves the loss alone"
    );
    let jobs = ab["jobs"].as_array().unwrap();
    assert_eq!(
        jobs.len() as u64,
        1 + 2 * ab["pairs"].as_u64().unwrap(),
        "a warm-up and the pairs that ran: {jobs:?}"
    );
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

#[test]
fn two_ab_runs_never_share_a_run_id_and_no_command_takes_their_jobs_for_a_run() {
    let out = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let o = ab(out.path(), &["--spread", "0.5", "--max-pairs", "1"]);
        assert_eq!(code(&o), 0, "{}", text(&o));
    }
    let abs = ab_jsons(out.path());
    assert_eq!(abs.len(), 2);
    let mut ids: Vec<String> = Vec::new();
    for (dir, ab) in &abs {
        for job in ab["jobs"].as_array().unwrap() {
            let id = job["run_id"].as_str().unwrap().to_owned();
            assert!(id.starts_with(ab["id"].as_str().unwrap()), "{id}");
            let record: serde_json::Value = serde_json::from_slice(
                &std::fs::read(dir.join(job["results"].as_str().unwrap())).unwrap(),
            )
            .unwrap();
            assert_eq!(record["run_id"], id.as_str());
            assert_eq!(record["ab"]["arm"], job["arm"], "{record}");
            assert_eq!(record["ab"]["ab_id"], ab["id"]);
            ids.push(id);
        }
    }
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    let folder = out.path().to_str().unwrap();
    for cmd in [
        vec![
            "compare",
            "--results",
            folder,
            "--root",
            "runner/tests/fixtures/cases",
        ],
        vec!["bless", "--from", folder, "--dry-run"],
        vec!["report", "--results", folder],
    ] {
        let o = cli::goldgate()
            .current_dir(repo())
            .args(&cmd)
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{cmd:?}: {}", text(&o));
        assert!(
            text(&o).contains("holds only A/B jobs (4 of `goldgate ab`"),
            "{cmd:?}: {}",
            text(&o)
        );
    }
    // Named, one arm's job is judged like any run.
    let o = cli::goldgate()
        .current_dir(repo())
        .args(["compare", "--results", folder, "--run", &ids[0]])
        .args(["--root", "runner/tests/fixtures/cases"])
        .output()
        .unwrap();
    assert!(
        text(&o).contains(&format!("judging run {}", ids[0])),
        "{}",
        text(&o)
    );
    // Each A/B folder holds its jobs' runs (`OUT/<ab-id>/<run-id>/run.json`).
    let db = out.path().join("history.sqlite");
    for (dir, _) in abs.iter().chain(&abs) {
        let o = cli::goldgate()
            .current_dir(repo())
            .args([
                "history",
                "ingest",
                dir.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ])
            .env_remove("GITHUB_SHA")
            .env_remove("GITHUB_REF_NAME")
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        let t = text(&o);
        assert!(
            t.contains("ingested 0 runs, 0 jobs (0 already stored)"),
            "{t}"
        );
        assert!(t.contains("left out 2 job(s) of `goldgate ab`"), "{t}");
    }
}

/// Without `--out`, `ab` writes under `ab-results/`, apart from the `results/` that `run`
/// writes and `compare`, `bless` and `report` read.
#[test]
fn without_out_ab_writes_under_ab_results_never_results() {
    let dir = tempfile::tempdir().unwrap();
    let o = cli::goldgate()
        .current_dir(dir.path())
        .args(["ab", "fake/quick", "--root"])
        .arg(repo().join("runner/tests/fixtures/cases"))
        .arg("--config")
        .arg(repo().join("goldgate.yaml"))
        .args(["--seed", "11", "--spread", "0.5", "--max-pairs", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    let (folder, ab) = ab_json(&dir.path().join("ab-results"));
    assert!(
        folder.ends_with(ab["id"].as_str().unwrap()),
        "{}",
        folder.display()
    );
    assert!(!dir.path().join("results").exists(), "{}", text(&o));
    // Where no GPU can be read (no NVML), the warning every job repeats is shown once, and the
    // jobs' time is not called GPU time.
    let t = text(&o);
    let nvml = t.matches("NVML unavailable").count();
    assert!(nvml <= 1, "{t}");
    if nvml == 1 {
        assert!(t.contains("CPU-minutes (no GPU)"), "{t}");
    }
}

#[test]
fn a_launch_failure_says_what_failed_not_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    cli::write(
        &dir.path().join("cases/fake/nolaunch/model_config.yaml"),
        "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS:\n  --train-iters: 2\n\
         METRICS: [\"lm loss\"]\nGOLDGATE:\n  entry: [goldgate-no-such-trainer]\n",
    );
    let out = dir.path().join("out");
    let o = cli::goldgate()
        .current_dir(repo())
        .args([
            "ab",
            "fake/nolaunch",
            "--root",
            dir.path().join("cases").to_str().unwrap(),
        ])
        .args(["--out", out.to_str().unwrap(), "--seed", "3"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(code(&o), 3, "{t}");
    assert!(t.contains("verdict: job failed"), "{t}");
    assert!(!t.contains("verdict: regression"), "{t}");
    let error = t
        .lines()
        .find(|l| l.starts_with("error: job "))
        .unwrap_or_else(|| panic!("no line says what failed: {t}"));
    assert!(error.contains("goldgate-no-such-trainer"), "{error}");
    let (_, ab) = ab_json(&out);
    let id = ab["id"].as_str().unwrap().to_owned();
    let shown = common::redact::redact(&error.replace(&id, "[AB-ID]"), &[dir.path()]);
    insta::assert_snapshot!(shown.split(" (looked in").next().unwrap_or_default());
}

/// What goldgate printed from its first `error:` line on (the error and its help), with the
/// test's folders redacted.
fn error_lines(o: &Output, tmp: &[&Path]) -> String {
    let all = common::redact::redact(&text(o), tmp);
    let at = all
        .find("error:")
        .unwrap_or_else(|| panic!("no error: {all}"));
    all[at..].to_owned()
}

/// A budget shorter than one pair is a usage error, said in the unit that fits the times
/// (`1.00 ms`, not `0.0 s`): the budget ran out before any job, or after the warm-up job (the
/// warm-up runs whatever the budget, so this holds however loaded the machine is). `ab.json`
/// keeps what ran.
#[test]
fn a_budget_that_fits_no_pair_is_a_usage_error() {
    // The job's time is the machine's: `412 ms`, `1.20 s`.
    let took = regex::Regex::new(r"one job took \d+(\.\d+)? (s|ms|µs)").unwrap();
    let mut said = String::new();
    for (args, jobs) in [(&[][..], 0), (&["--warmup", "1"][..], 1)] {
        let out = tempfile::tempdir().unwrap();
        let args = [&["--budget", "1ms", "--max-pairs", "3"][..], args].concat();
        let o = ab(out.path(), &args);
        let t = text(&o);
        assert_eq!(code(&o), 2, "{t}");
        let (_, ab) = ab_json(out.path());
        assert_eq!(ab["pairs"], 0);
        assert_eq!(ab["jobs"].as_array().unwrap().len(), jobs, "{ab}");
        assert_eq!(ab["exit_code"], 2, "ab.json keeps what ran: {ab}");
        let shown = took
            .replace(&error_lines(&o, &[out.path()]), "one job took [T]")
            .into_owned();
        said.push_str(&format!(
            "$ goldgate ab fake/quick {}\n{shown}",
            args.join(" ")
        ));
    }
    insta::assert_snapshot!(said);
}

#[test]
fn a_missing_or_file_arm_folder_is_refused_before_any_job() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let runs = out.path().join("runs");
    let missing = out.path().join("no-such-checkout");
    let mut said = String::new();
    for (flag, dir) in [("--a-dir", &missing), ("--b-dir", &file)] {
        let o = ab(&runs, &[flag, dir.to_str().unwrap()]);
        let t = text(&o);
        assert_eq!(code(&o), 2, "{t}");
        said.push_str(&format!(
            "$ goldgate ab fake/quick {flag} {}\n{}",
            common::redact::redact(&dir.display().to_string(), &[out.path()]),
            common::redact::redact(&t, &[out.path()])
        ));
    }
    assert!(!runs.exists(), "no job ran");
    insta::assert_snapshot!(said);
}

/// `--covariate` needs a slope measured on the platform, and is for job-level A/B only: both
/// refused before any job.
#[test]
fn the_covariate_is_refused_without_a_measured_slope_and_within_a_job() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(out.path(), &["--covariate"]);
    let t = text(&o);
    assert_eq!(code(&o), 2, "{t}");
    assert!(
        t.contains("--covariate: no ab.platforms.dev_cpu.covariate in goldgate.yaml"),
        "{t}"
    );
    let o = ab(out.path(), &["--covariate", "--within-job"]);
    let t = text(&o);
    assert_eq!(code(&o), 2, "{t}");
    assert!(t.contains("within-job A/B pairs saves of one job"), "{t}");
    assert!(std::fs::read_dir(out.path()).unwrap().next().is_none());
}

#[test]
fn max_pairs_is_bounded() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(out.path(), &["--max-pairs", "4294967295"]);
    let t = text(&o);
    assert_eq!(code(&o), 2, "{t}");
    assert!(std::fs::read_dir(out.path()).unwrap().next().is_none());
    insta::assert_snapshot!(common::redact::redact(&t, &[out.path()]));
}

#[test]
fn a_secret_given_to_an_arm_is_never_stored() {
    let out = tempfile::tempdir().unwrap();
    let secret = "hf_Q9w8E7r6T5y4U3i2O1pAsDfG";
    let o = ab(
        out.path(),
        &[
            "--b-env",
            &format!("HF_TOKEN={secret}"),
            "--spread",
            "0.5",
            "--max-pairs",
            "1",
        ],
    );
    let t = text(&o);
    assert_eq!(code(&o), 0, "{t}");
    assert!(!t.contains(secret), "{t}");
    let mut files = 0;
    let mut stack = vec![out.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains(secret), "{}: {text}", path.display());
                files += 1;
            }
        }
    }
    assert!(
        files >= 5,
        "ab.json, two run.json, two results.json: {files}"
    );
    let (dir, ab) = ab_json(out.path());
    let b = ab["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["arm"] == "b")
        .unwrap();
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(b["run_id"].as_str().unwrap()).join("run.json")).unwrap(),
    )
    .unwrap();
    let command: Vec<&str> = index["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(command.contains(&"HF_TOKEN=<redacted>"), "{command:?}");
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
