//! Counters instead of clocks, end to end with the fake trainer standing in for the
//! probe: a job blessed once is the golden; re-adding the seed's `empty_cache` in the save path
//! (`GOLDGATE_PLANT_EMPTY_CACHE=1`) or `--empty-unused-memory-level 2` fails the gate on the
//! counters with one job and no statistics, while an unchanged job passes them. Each counter
//! is also checked against an independent reading (the checkpoint folders on disk, the count
//! the flags imply).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use goldgate_schema::RunRecord;
use goldgate_schema::metric_names as names;

use crate::common;

use common::cli::{self, code, repo, text};
use common::results::records;

const CASE: &str = "fake/counters";
/// The case's saves: every 2 of 8 steps.
const SAVES: [u64; 4] = [2, 4, 6, 8];

fn run(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd: Command = cli::goldgate();
    cmd.current_dir(repo())
        .args(["run", "--out", out.to_str().unwrap(), "--no-compare"])
        .args(["--root", "runner/tests/fixtures/cases", CASE])
        .args(extra)
        .env_remove("GOLDGATE_PLANT_EMPTY_CACHE")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    o
}

fn compare(results: &Path, golden: &Path, json: &Path) -> (i32, BTreeMap<String, String>) {
    let o = cli::goldgate()
        .current_dir(repo())
        .args(["compare", "--results", results.to_str().unwrap()])
        .args(["--golden-root", golden.to_str().unwrap()])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap())
        .unwrap_or_else(|e| {
            panic!("{e}: {}", text(&o));
        });
    let verdicts = report["jobs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let name = m["metric"].as_str().unwrap().to_owned();
            (name, m["verdict"].as_str().unwrap().to_owned())
        })
        .collect();
    (code(&o), verdicts)
}

fn per_save(r: &RunRecord, metric: &str) -> Vec<f64> {
    let series = &r
        .metrics
        .get(metric)
        .unwrap_or_else(|| panic!("{metric} recorded"))
        .0;
    assert_eq!(
        series.keys().copied().collect::<Vec<_>>(),
        SAVES,
        "{metric}"
    );
    series.values().copied().collect()
}

fn bless(results: &Path, golden: &Path) {
    let o = cli::goldgate()
        .current_dir(repo())
        .args(["bless", "--from", results.to_str().unwrap()])
        .args(["--golden-root", golden.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn a_planted_empty_cache_fails_the_gate_on_the_counters_with_one_job() {
    let dir = tempfile::tempdir().unwrap();
    let (base, same, planted) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    let golden = dir.path().join("golden");
    run(&base, &[], &[]);
    bless(&base, &golden);
    let r = &records(&base)[0];

    // Independent readings: each save's folder on disk against the bytes the trainer passed to
    // write() in that save (the folder plus the save's log lines and the tracker file).
    let written = per_save(r, names::CKPT_WRITTEN_BYTES);
    let folders = per_save(r, names::CKPT_FOLDER_BYTES);
    for (w, f) in written.iter().zip(&folders) {
        assert!(*f >= 4.0 * 1048576.0, "folder {f}");
        assert!(*w >= *f && *w - *f < 65536.0, "written {w}, folder {f}");
    }
    let job = r.last_value(names::JOB_WRITTEN_BYTES).unwrap();
    assert!(job >= folders.iter().sum::<f64>(), "job {job}");
    assert_eq!(per_save(r, names::CKPT_EMPTY_CACHE_CALLS), [0.0; 4]);
    assert_eq!(r.last_value(names::EMPTY_CACHE_CALLS), Some(0.0));
    // A sync save stages the checkpoint in one fresh buffer and frees it.
    assert_eq!(per_save(r, names::CKPT_CUDA_MALLOC_CALLS), [1.0; 4]);
    assert_eq!(per_save(r, names::CKPT_CUDA_FREE_CALLS), [1.0; 4]);

    // An unchanged job: every counter passes its exact rule.
    run(&same, &[], &[]);
    let (_, verdicts) = compare(&same, &golden, &dir.path().join("same.json"));
    for name in names::EXACT_COUNTERS.iter().chain(&names::BYTE_COUNTERS) {
        if let Some(v) = verdicts.get(*name) {
            assert_eq!(v, "pass", "{name}: {verdicts:?}");
        }
    }
    assert_eq!(
        verdicts[names::CKPT_EMPTY_CACHE_CALLS],
        "pass",
        "{verdicts:?}"
    );

    // The seed's change: one more empty_cache in every save.
    let o = run(&planted, &[], &[("GOLDGATE_PLANT_EMPTY_CACHE", "1")]);
    let r = &records(&planted)[0];
    assert_eq!(
        per_save(r, names::CKPT_EMPTY_CACHE_CALLS),
        [1.0; 4],
        "{}",
        text(&o)
    );
    assert_eq!(per_save(r, names::CKPT_SYNC_ALL_STREAMS_CALLS), [1.0; 4]);
    assert_eq!(r.last_value(names::EMPTY_CACHE_CALLS), Some(4.0));
    let (exit, verdicts) = compare(&planted, &golden, &dir.path().join("planted.json"));
    assert_eq!(exit, 1, "{verdicts:?}");
    for name in [
        names::CKPT_EMPTY_CACHE_CALLS,
        names::CKPT_SYNC_ALL_STREAMS_CALLS,
        names::EMPTY_CACHE_CALLS,
        names::SYNC_ALL_STREAMS_CALLS,
    ] {
        assert_eq!(verdicts[name], "regression", "{name}: {verdicts:?}");
    }
}

#[test]
fn empty_unused_memory_level_2_fails_the_gate_on_the_counters() {
    let dir = tempfile::tempdir().unwrap();
    let (base, level2) = (dir.path().join("a"), dir.path().join("b"));
    let golden = dir.path().join("golden");
    run(&base, &[], &[]);
    bless(&base, &golden);
    // The level-2 job is judged against the level-0 golden: the question the seed asked.
    let case = golden.join(CASE);
    let variant = case.join("variants").join("empty_cache-level2");
    std::fs::create_dir_all(&variant).unwrap();
    for entry in std::fs::read_dir(&case).unwrap().flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), variant.join(entry.file_name())).unwrap();
        }
    }
    run(&level2, &["--variant", "empty_cache=level2"], &[]);
    let r = &records(&level2)[0];
    // Megatron's level 2 empties the cache twice per step: 8 steps, 16 calls, none in a save.
    assert_eq!(r.last_value(names::EMPTY_CACHE_CALLS), Some(16.0));
    assert_eq!(per_save(r, names::CKPT_EMPTY_CACHE_CALLS), [0.0; 4]);
    let (exit, verdicts) = compare(&level2, &golden, &dir.path().join("level2.json"));
    assert_eq!(exit, 1, "{verdicts:?}");
    assert_eq!(
        verdicts[names::EMPTY_CACHE_CALLS],
        "regression",
        "{verdicts:?}"
    );
    assert_eq!(
        verdicts[names::CUDA_MALLOC_CALLS],
        "regression",
        "{verdicts:?}"
    );
}
