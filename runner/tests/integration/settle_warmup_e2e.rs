//! `goldgate run --warmup` and `--settle` end to end with the fake trainer: a
//! warm-up job is recorded but never judged, and every job's fingerprint says what the node's
//! page cache and disks did while it ran.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;

use common::cli::{self, repo, text};

fn run(out: &Path, args: &[&str]) -> Output {
    cli::goldgate()
        .current_dir(repo())
        .args(["run", "fake/quick", "--root", "runner/tests/fixtures/cases"])
        .args(["--out", out.to_str().unwrap(), "--no-compare"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Every `results.json` under `dir`, warm-ups included, as JSON.
fn all_results(dir: &Path) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "results.json") {
                out.push(serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap());
            }
        }
    }
    out.sort_by_key(|r| r["repeat"].as_u64());
    out
}

#[test]
fn a_warmup_job_runs_first_and_is_never_judged() {
    let out = tempfile::tempdir().unwrap();
    let o = run(
        out.path(),
        &["--warmup", "1", "--repeat", "2", "--settle", "sync"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = all_results(out.path());
    let flags: Vec<(u64, bool)> = all
        .iter()
        .map(|r| (r["repeat"].as_u64().unwrap(), r["warmup"] == true))
        .collect();
    assert_eq!(flags, [(1, true), (2, false), (3, false)]);
    let judged = goldgate_core::records::load_results(out.path()).unwrap();
    let repeats: Vec<u32> = judged.iter().map(|(_, r)| r.repeat).collect();
    assert_eq!(repeats, [2, 3], "load_results leaves the warm-up out");

    let io = &all[1]["fingerprint"]["io"];
    assert_eq!(io["settle"], "sync");
    assert!(io["settle_seconds"].as_f64().unwrap() >= 0.0);
    assert!(io["checkpoint_fs"].is_string(), "{io}");
    if Path::new("/proc/meminfo").exists() {
        let (start, peak) = (&io["dirty_start_bytes"], &io["dirty_peak_bytes"]);
        assert!(peak.as_u64().unwrap() >= start.as_u64().unwrap(), "{io}");
    }
}

#[test]
fn a_bad_settle_mode_is_a_usage_error() {
    let out = tempfile::tempdir().unwrap();
    let o = run(out.path(), &["--settle", "flush"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("none, sync or drop-caches"),
        "{}",
        text(&o)
    );
}
