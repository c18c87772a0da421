//! The two-sample test end to end: `bless` from ten unchanged jobs keeps their
//! per-job samples beside Megatron's keys; `compare` under `test: two-sample` passes three
//! unchanged jobs, fails three jobs 30 % slower with the estimated change and its interval,
//! and falls back to the band, saying why, on a golden written without samples.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use goldgate_schema::{RunRecord, StepValues, VariantRecord};

use crate::common;

use common::cli::{self, text};

const CASE: &str = "demo/ckpt-demo";
const GOLDEN: &str = "golden/demo/ckpt-demo/golden_values_dev_dev_cpu.json";
const CONFIG: &str =
    "rules:\n  checkpoint-blocking-time:\n    test: two-sample\n    min_effect: 0.02\n";

/// A passed job whose saves after the first take `t` seconds (±3 % within the job).
fn record(run: &str, repeat: u32, t: f64) -> RunRecord {
    let saves = (1..=10u64).map(|k| {
        let wobble = if k % 2 == 0 { 1.03 } else { 0.97 };
        (2 * k, if k == 1 { 9.0 } else { t * wobble })
    });
    let metrics = BTreeMap::from([
        (
            "lm loss".to_string(),
            StepValues((1..=20).map(|i| (i, 10.0 - i as f64 * 0.1)).collect()),
        ),
        (
            "checkpoint-blocking-time".to_string(),
            StepValues(saves.collect()),
        ),
    ]);
    RunRecord {
        run_id: run.into(),
        started_at: "2026-12-01T07:00:00Z".into(),
        wall_seconds: 12.0,
        metrics,
        ..RunRecord::passed(CASE, VariantRecord::baseline(), repeat, "dev_cpu")
    }
}

fn write_run(dir: &Path, run: &str, times: &[f64]) {
    for (i, t) in times.iter().enumerate() {
        let r = record(run, i as u32 + 1, *t);
        let p = dir.join(run).join(r.rel_dir()).join("results.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    }
}

fn goldgate(dir: &Path, args: &[&str]) -> Output {
    cli::goldgate()
        .args(args)
        .args(["--config", "goldgate.yaml"])
        .current_dir(dir)
        .output()
        .unwrap()
}

const UNCHANGED: [f64; 10] = [2.0, 2.04, 1.97, 2.02, 1.99, 2.01, 1.96, 2.03, 2.0, 1.98];

fn blessed() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("goldgate.yaml"), CONFIG).unwrap();
    write_run(dir.path(), "golden-run", &UNCHANGED);
    let o = goldgate(dir.path(), &["bless", "--from", "golden-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(
            "per-job samples of 10 job(s) kept for the two-sample test: checkpoint-blocking-time"
        ),
        "{}",
        text(&o)
    );
    dir
}

#[test]
fn bless_keeps_per_job_samples_beside_megatrons_keys() {
    let dir = blessed();
    let golden = std::fs::read_to_string(dir.path().join(GOLDEN)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&golden).unwrap();
    assert!(json["lm loss"]["values"]["20"].is_number());
    let jobs = json["goldgate-samples"]["metrics"]["checkpoint-blocking-time"]
        .as_array()
        .unwrap();
    assert_eq!(jobs.len(), 10);
    assert_eq!(jobs[1]["4"], serde_json::json!(2.1012));
    // Megatron's byte style: 4-space indent, no trailing newline.
    assert!(golden.starts_with("{\n    \"") && !golden.ends_with('\n'));
    // Per-step metrics keep no samples.
    assert!(json["goldgate-samples"]["metrics"]["lm loss"].is_null());
}

#[test]
fn unchanged_jobs_pass_and_thirty_percent_slower_is_a_regression() {
    let dir = blessed();
    write_run(dir.path(), "same", &[2.01, 1.98, 2.02]);
    let o = goldgate(dir.path(), &["compare", "--results", "same"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    write_run(dir.path(), "slower", &[2.6, 2.62, 2.58]);
    let json = dir.path().join("slower.json");
    let o = goldgate(
        dir.path(),
        &[
            "compare",
            "--results",
            "slower",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = c["jobs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "checkpoint-blocking-time")
        .unwrap()
        .clone();
    assert_eq!(m["verdict"], "regression");
    assert_eq!(m["tolerance"], "two-sample: min effect 2%, alpha 1%");
    let detail = m["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("change +30.") && detail.contains("98% CI"),
        "{detail}"
    );
}

#[test]
fn a_golden_without_samples_is_judged_by_the_band_and_says_so() {
    let dir = blessed();
    let path = dir.path().join(GOLDEN);
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("goldgate-samples");
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    write_run(dir.path(), "same", &[2.01, 1.98, 2.02]);
    let json = dir.path().join("same.json");
    let o = goldgate(
        dir.path(),
        &[
            "compare",
            "--results",
            "same",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(
        report.contains("band rule: the golden file keeps no per-job samples"),
        "{report}"
    );
}

/// `goldgate power` over the ten unchanged jobs and three real jobs 30 % slower: the report
/// names each rule, the two-sample test sees +30 % with 3 repeats, the markdown is written.
#[test]
fn power_reports_each_rule_and_the_planted_jobs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("goldgate.yaml"), CONFIG).unwrap();
    write_run(dir.path(), "unchanged", &UNCHANGED);
    write_run(dir.path(), "planted", &[2.6, 2.62, 2.58]);
    let md = dir.path().join("power.md");
    let o = goldgate(
        dir.path(),
        &[
            "power",
            "--results",
            "unchanged",
            "--planted",
            "+30%=planted",
            "--repeats",
            "1,3",
            "--metric",
            "checkpoint-blocking-time",
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    for needle in [
        "demo/ckpt-demo (default) · checkpoint-blocking-time · 10 unchanged jobs, 9 samples each",
        "Megatron: 1 run, rtol 5%",
        "band: rtol 10% + atol 0.05 s",
        "two-sample: min effect 2%, alpha 1%",
        "planted +30% (+30.0% of the unchanged median), 3 real jobs",
    ] {
        assert!(out.contains(needle), "{needle:?} not in\n{out}");
    }
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("| two-sample: min effect 2%, alpha 1% | 3 | 7 | 0 of 120 (0.0%) |"),
        "{markdown}"
    );

    let o = goldgate(
        dir.path(),
        &["power", "--results", "unchanged", "--planted", "x"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
