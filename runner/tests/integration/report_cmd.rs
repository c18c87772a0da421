//! `goldgate report` end to end: results folders written as `goldgate run` writes them, the
//! binary run on them, its terminal output, markdown and SVG files checked.

// Test helpers unwrap: a failure here is a broken test set-up, reported by the panic.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use goldgate::metrics::{
    CheckpointRecord, MemoryRecord, RunRecord, StepValues, Timeline, VariantRecord,
};

use crate::common;

use common::cli;
use common::redact::redact;

const GIB: u64 = 1 << 30;

fn variant(name: &str, slug: &str) -> VariantRecord {
    VariantRecord {
        name: name.into(),
        slug: slug.into(),
        choices: BTreeMap::new(),
    }
}

/// A demo job: 3 saves, a 20-sample timeline; `save_s` is the blocking time of later saves.
fn record(v: VariantRecord, repeat: u32, save_s: f64, shm_gib: u64) -> RunRecord {
    let t: Vec<f64> = (0..20).map(|i| f64::from(i) * 0.5).collect();
    let checkpoints = [4u64, 8, 12]
        .iter()
        .enumerate()
        .map(|(i, &it)| CheckpointRecord {
            iteration: it,
            blocking_max_seconds: Some(if i == 0 { 2.0 } else { save_s }),
            asynchronous: shm_gib > 0,
            async_latency_seconds: (shm_gib > 0).then_some(1.5),
            started_before_previous_finished: false,
            overlapped_by_next: false,
            ..CheckpointRecord::default()
        })
        .collect();
    let metrics = BTreeMap::from([
        (
            "lm loss".to_string(),
            StepValues(BTreeMap::from([(1, 10.9), (12, 9.25)])),
        ),
        (
            "iteration-time".to_string(),
            StepValues((1..=12).map(|s| (s, 0.25)).collect()),
        ),
    ]);
    RunRecord {
        run_id: "20261130-070000-beef".into(),
        started_at: "2026-11-30T07:00:00Z".into(),
        wall_seconds: 10.0,
        metrics,
        checkpoints,
        overlapping_saves: 0,
        memory: MemoryRecord {
            gpu: None,
            host_peak_pss_bytes: Some(3 * GIB),
            host_pss_reads: Some(10),
            host_pss_read_cpu_seconds: Some(0.01),
            host_peak_rss_bytes: Some(4 * GIB),
            mem_available: None,
            shm_peak_bytes: Some(shm_gib * GIB),
            host_interval_seconds: 0.5,
            timeline: Timeline {
                gpu_used_bytes: vec![None; t.len()],
                host_rss_bytes: t
                    .iter()
                    .map(|x| 2 * GIB + (*x * 0.2 * GIB as f64) as u64)
                    .collect(),
                host_pss_bytes: t
                    .iter()
                    .map(|x| GIB + (*x * 0.2 * GIB as f64) as u64)
                    .collect(),
                shm_bytes: t
                    .iter()
                    .map(|x| {
                        if *x > 4.0 && *x < 6.0 {
                            shm_gib * GIB
                        } else {
                            0
                        }
                    })
                    .collect(),
                t_seconds: t,
                saves: vec![(1.0, Some(3.0), 4), (4.5, Some(4.5 + save_s), 8)],
            },
        },
        ..RunRecord::passed("demo/ckpt", v, repeat, "dev_cpu")
    }
}

fn write_record(run_dir: &Path, r: &RunRecord) {
    let path = run_dir.join(r.rel_dir()).join("results.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(r).unwrap()).unwrap();
}

fn goldgate(args: &[&str]) -> (i32, String, String) {
    let out = cli::goldgate().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn renders_variants_markdown_and_one_svg_per_job() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("20261130-070000-beef");
    for repeat in 1..=2 {
        write_record(&run, &record(variant("default", "default"), repeat, 1.0, 0));
        write_record(
            &run,
            &record(
                variant("checkpoint=async", "checkpoint-async"),
                repeat,
                0.1,
                2,
            ),
        );
    }
    let out = dir.path().join("report");
    let svg = out.join("svg");
    let md = out.join("report.md");
    let (code, stdout, stderr) = goldgate(&[
        "report",
        "--results",
        run.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let stdout = redact(&stdout, &[dir.path()]);
    insta::assert_snapshot!(stdout);

    let mut names: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "demo-ckpt__checkpoint-async__1.svg",
            "demo-ckpt__checkpoint-async__2.svg",
            "demo-ckpt__default__1.svg",
            "demo-ckpt__default__2.svg",
        ]
    );
    let one = std::fs::read_to_string(svg.join("demo-ckpt__checkpoint-async__1.svg")).unwrap();
    assert!(one.starts_with("<svg") && one.contains("/dev/shm"), "{one}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("[svg](svg/demo-ckpt__default__2.svg)"),
        "{markdown}"
    );
    assert!(markdown.contains("| checkpoint blocking, saves after the first (median) | 1.00 s | 100 ms<br>Δ -900 ms (-90.00 %) |"), "{markdown}");
}

#[test]
fn bad_results_are_usage_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = goldgate(&["report", "--results", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no results.json under"), "{stderr}");

    let job = dir.path().join("demo/ckpt/default/1");
    std::fs::create_dir_all(&job).unwrap();
    std::fs::write(
        job.join("results.json"),
        "{\"schema_version\": 1,\n  \"run_id\": }",
    )
    .unwrap();
    let (code, _, stderr) = goldgate(&["report", "--results", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("results.json: line 2"), "{stderr}");
}

#[test]
fn an_unwritable_svg_folder_is_a_failure_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write_record(
        dir.path(),
        &record(variant("default", "default"), 1, 1.0, 0),
    );
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let (code, _, stderr) = goldgate(&[
        "report",
        "--results",
        dir.path().to_str().unwrap(),
        "--svg",
        blocker.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    assert!(stderr.contains("not-a-dir"), "{stderr}");
}
