//! Argv parity with Megatron's CI over the whole shared corpus: every run goldgate plans is
//! compared, word for word, with an independent emulation of `run_ci_test.sh` and
//! `_run_training.sh` (`tests/parity/megatron_argv.py`: PyYAML for the YAML, the real `xargs`
//! and bash `eval` for the shell steps). Skips with a message when the corpus, Python 3 with
//! PyYAML, bash or xargs is missing; CI installs PyYAML so the test runs there.

// Test helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;

use common::cli;

const EMULATOR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/parity/megatron_argv.py");

/// The caller's environment both sides see: the data root, the Megatron checkout, and a value
/// for every name corpus cases use that neither goldgate nor the case itself sets.
fn caller_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
        ("DATA_PATH".to_owned(), "/data".to_owned()),
        ("MEGATRON_LM_DIR".to_owned(), "/mlm".to_owned()),
    ]);
    for name in [
        "DATA_BLEND",
        "WANDB_SAVE_PATH",
        "WANDB_EXPERIMENT",
        "TOKENIZER_TYPE",
        "TOKENIZER_MODEL_PATH",
    ] {
        env.insert(name.to_owned(), format!("/env/{name}"));
    }
    env
}

/// Why the test cannot run here, if it cannot (the corpus itself is `goldgate_core::fixtures::corpus`'s).
fn missing_prerequisite() -> Option<String> {
    let yaml = Command::new("python3").args(["-c", "import yaml"]).output();
    if !yaml.is_ok_and(|o| o.status.success()) {
        return Some("python3 with PyYAML is not installed (pip install pyyaml)".to_owned());
    }
    for tool in ["bash", "xargs"] {
        let found = Command::new(tool).arg("--version").output();
        if !found.is_ok_and(|o| o.status.success()) {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// `goldgate plan --format json` over `names` (all cases when empty) with `extra` flags.
fn plan(corpus: &Path, dir: &Path, names: &[String], extra: &[&str]) -> Vec<Value> {
    let root = corpus.join("tests/functional_tests/test_cases");
    let out = cli::goldgate()
        .arg("plan")
        .args(names)
        .arg("--root")
        .arg(&root)
        .args(["--platform", "dgx_h100", "--format", "json", "--out"])
        .arg(dir.join("out"))
        .args(extra)
        .env_clear()
        .envs(caller_env())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("plan JSON: {e}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["schema_version"], 1);
    doc["jobs"].as_array().unwrap().clone()
}

/// The emulation's runs for `jobs`: `(job id, run) → argv` or the reason it skipped one.
fn emulate(
    corpus: &Path,
    dir: &Path,
    jobs: &[Value],
) -> BTreeMap<(String, u64), Result<Vec<String>, String>> {
    let tests = corpus.join("tests");
    let plan_path = dir.join("plan.json");
    std::fs::write(&plan_path, serde_json::to_string(jobs).unwrap()).unwrap();
    let env_path = dir.join("env.json");
    std::fs::write(&env_path, serde_json::to_string(&caller_env()).unwrap()).unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new("python3")
        .arg(EMULATOR)
        .arg("--root")
        .arg(tests.join("functional_tests/test_cases"))
        .arg("--recipes")
        .arg(tests.join("test_utils/recipes"))
        .arg("--plan")
        .arg(&plan_path)
        .arg("--env")
        .arg(&env_path)
        .arg("--cwd")
        .arg(&empty)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut runs = BTreeMap::new();
    for r in parsed["runs"].as_array().unwrap() {
        let key = (
            r["job"].as_str().unwrap().to_owned(),
            r["run"].as_u64().unwrap(),
        );
        let value = match r.get("argv") {
            Some(argv) => Ok(strings(argv)),
            None => Err(r["skip"].as_str().unwrap_or("").to_owned()),
        };
        runs.insert(key, value);
    }
    runs
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect()
}

/// goldgate's words with the two harness choices the emulation writes differently made
/// comparable: the training script in `$MEGATRON_LM_DIR` (Megatron runs it relative to its
/// checkout) and NeMo's program found on PATH (Megatron's image has it in /opt/venv/bin).
fn normalise(words: Vec<String>) -> Vec<String> {
    words
        .into_iter()
        .map(|w| {
            match w
                .strip_prefix("/mlm/")
                .or_else(|| w.strip_prefix("/opt/venv/bin/"))
            {
                Some(rest) => rest.to_owned(),
                None => w,
            }
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    same: usize,
    nemo_same: usize,
    different: Vec<String>,
    skipped: BTreeSet<String>,
}

fn compare(
    jobs: &[Value],
    emulated: &BTreeMap<(String, u64), Result<Vec<String>, String>>,
    t: &mut Tally,
) {
    for job in jobs {
        let id = job["id"].as_str().unwrap().to_owned();
        let nemo = job["case"].as_str().unwrap().starts_with("gpt-nemo/");
        for (i, run) in job["runs"].as_array().unwrap().iter().enumerate() {
            let n = i as u64 + 1;
            let theirs = emulated
                .get(&(id.clone(), n))
                .or_else(|| emulated.get(&(id.clone(), 0)));
            match theirs {
                None => t.different.push(format!("{id} run {n}: not emulated")),
                Some(Err(why)) => {
                    t.skipped.insert(format!("{id}: {why}"));
                }
                Some(Ok(want)) => {
                    let got = normalise(strings(&run["argv"]));
                    let want = normalise(want.clone());
                    if got != want {
                        t.different.push(format!(
                            "{id} run {n}:\n  goldgate {got:?}\n  megatron {want:?}"
                        ));
                    } else if nemo {
                        t.nemo_same += 1;
                    } else {
                        t.same += 1;
                    }
                }
            }
        }
    }
}

#[test]
fn every_corpus_run_matches_megatrons_command_line() {
    let Some(root) = goldgate_core::fixtures::corpus::test_cases() else {
        return;
    };
    // `<corpus>/tests/functional_tests/test_cases` → `<corpus>`.
    let corpus = root.join("../../..");
    if !corpus.join("tests/test_utils/recipes").is_dir() {
        goldgate_core::fixtures::prereq::missing(
            "argv parity needs the corpus's tests/test_utils/recipes",
        );
        return;
    }
    if let Some(why) = missing_prerequisite() {
        goldgate_core::fixtures::prereq::missing(&format!("argv parity needs {why}"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut tally = Tally::default();
    let jobs = plan(&corpus, dir.path(), &[], &[]);
    compare(&jobs, &emulate(&corpus, dir.path(), &jobs), &mut tally);
    // Cases whose parallel layout needs more than one DGX: planned again with the ranks they
    // need (the emulation takes goldgate's node and GPU counts as given).
    let planned: BTreeSet<&str> = jobs.iter().map(|j| j["case"].as_str().unwrap()).collect();
    let refused: Vec<String> = goldgate_core::case::discover(&root)
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .filter(|n| !planned.contains(n.as_str()))
        .collect();
    let big = plan(&corpus, dir.path(), &refused, &["--gpus-per-node", "128"]);
    assert_eq!(
        big.len(),
        refused.len(),
        "every refused case plans with 128 ranks"
    );
    compare(&big, &emulate(&corpus, dir.path(), &big), &mut tally);
    println!(
        "argv parity: {} Megatron runs and {} NeMo runs identical, {} different, {} refused by the rank check on one DGX (compared with 128 ranks), not run by run_ci_test.sh: {:?}",
        tally.same,
        tally.nemo_same,
        tally.different.len(),
        refused.len(),
        tally.skipped
    );
    assert!(tally.different.is_empty(), "{}", tally.different.join("\n"));
    assert!(tally.same >= 429, "only {} runs compared", tally.same);
    assert_eq!(tally.nemo_same, 6);
}
