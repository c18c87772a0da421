//! `goldgate report` end to end: results folders written as `goldgate run` writes them, the
//! binary run on them, its terminal output, markdown and SVG files checked.

// Test helpers unwrap: a failure here is a broken test set-up, reported by the panic.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use goldgate_schema::metric_names::{CHECKPOINT_ASYNC_LATENCY, CHECKPOINT_BLOCKING};
use goldgate_schema::{
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
    let checkpoints: Vec<CheckpointRecord> = [4u64, 8, 12]
        .iter()
        .map(|&it| CheckpointRecord {
            iteration: it,
            asynchronous: shm_gib > 0,
            async_latency_seconds: (shm_gib > 0).then_some(1.5),
            started_before_previous_finished: false,
            overlapped_by_next: false,
            ..CheckpointRecord::default()
        })
        .collect();
    let blocking = [(4, 2.0), (8, save_s), (12, save_s)];
    let mut metrics = BTreeMap::from([
        (
            CHECKPOINT_BLOCKING.to_string(),
            StepValues(BTreeMap::from(blocking)),
        ),
        (
            "lm loss".to_string(),
            StepValues(BTreeMap::from([(1, 10.9), (12, 9.25)])),
        ),
        (
            "iteration-time".to_string(),
            StepValues((1..=12).map(|s| (s, 0.25)).collect()),
        ),
    ]);
    // The per-save async latency, as the record stage writes it for async saves.
    let latency: BTreeMap<u64, f64> = (checkpoints.iter())
        .filter_map(|c| c.async_latency_seconds.map(|l| (c.iteration, l)))
        .collect();
    if !latency.is_empty() {
        metrics.insert(CHECKPOINT_ASYNC_LATENCY.to_string(), StepValues(latency));
    }
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
            not_sampled: Default::default(),
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
            "20261130-070000-beef__demo-ckpt__checkpoint-async__1.svg",
            "20261130-070000-beef__demo-ckpt__checkpoint-async__2.svg",
            "20261130-070000-beef__demo-ckpt__default__1.svg",
            "20261130-070000-beef__demo-ckpt__default__2.svg",
        ]
    );
    let one = std::fs::read_to_string(
        svg.join("20261130-070000-beef__demo-ckpt__checkpoint-async__1.svg"),
    )
    .unwrap();
    assert!(one.starts_with("<svg") && one.contains("/dev/shm"), "{one}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("[svg](svg/20261130-070000-beef__demo-ckpt__default__2.svg)"),
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

/// Two runs of one job in one folder: the older one's saves block 3 s and its final loss is
/// 9.75, the newer one's 1 s and 9.25.
fn two_runs(results: &Path) -> [&'static str; 2] {
    let runs = [
        ("20261130-070000-beef", "2026-11-30T07:00:00Z", 3.0, 9.75),
        ("20261130-080000-cafe", "2026-11-30T08:00:00Z", 1.0, 9.25),
    ];
    for (run, started, save_s, loss) in runs {
        for repeat in 1..=2 {
            let mut r = record(variant("default", "default"), repeat, save_s, 0);
            r.metrics.get_mut("lm loss").unwrap().0.insert(12, loss);
            r.run_id = run.into();
            r.started_at = started.into();
            write_record(&results.join(run), &r);
        }
    }
    runs.map(|(run, ..)| run)
}

#[test]
fn every_command_reads_the_newest_run_of_a_folder_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let [old, new] = two_runs(&results);
    let results = results.to_str().unwrap();
    let golden = dir.path().join("golden");
    let golden = golden.to_str().unwrap();
    let root = [
        "--golden-root",
        golden,
        "--root",
        dir.path().to_str().unwrap(),
    ];
    let newest = |verb: &str| {
        format!(
            "goldgate: {verb} run {new}, the newest of 2 in this folder (1 older run left out; \
             --all-runs merges them, --run ID picks others)"
        )
    };

    let (code, stdout, stderr) = goldgate(&["bless", "--from", results, "--golden-root", golden]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains(&newest("blessing")), "{stderr}");

    // The blessed run judged again: nothing moved. The older run, named, ends on another loss.
    let (code, stdout, stderr) =
        goldgate(&[&["compare", "--results", results][..], &root].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains(&newest("judging")), "{stderr}");
    let compare_old = [&["compare", "--results", results, "--run", old][..], &root].concat();
    let (code, stdout, stderr) = goldgate(&compare_old);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "goldgate: judging run {old} (1 other run in this folder left out)"
        )),
        "{stderr}"
    );

    let comment = [&["comment", "--dry-run", "--results", results][..], &root].concat();
    let (code, stdout, stderr) = goldgate(&comment);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains(&newest("judging")), "{stderr}");
    assert!(!stdout.contains("regression"), "{stdout}");
    let (code, stdout, _) = goldgate(&[&comment[..], &["--run", old]].concat());
    assert_eq!(code, 0);
    assert!(stdout.contains("regression"), "{stdout}");

    let (code, stdout, stderr) = goldgate(&["report", "--results", results]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&newest("showing")), "{stderr}");
    assert!(stdout.contains("2 of 2 passed"), "{stdout}");
    assert!(stdout.contains("1.00 s"), "the newer run's saves: {stdout}");

    let (code, stdout, stderr) = goldgate(&["calibrate", "--results", results]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains(&newest("measuring")), "{stderr}");
}

#[test]
fn report_of_all_runs_writes_one_timeline_per_run_and_job() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    two_runs(&results);
    let svg = dir.path().join("svg");
    let md = dir.path().join("report.md");
    let (code, stdout, stderr) = goldgate(&[
        "report",
        "--all-runs",
        "--results",
        results.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("4 of 4 passed"), "{stdout}");
    let mut names: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    insta::assert_snapshot!(names.join("\n"));
    let markdown = std::fs::read_to_string(&md).unwrap();
    let links: Vec<&str> = markdown
        .lines()
        .filter_map(|l| l.split("[svg](").nth(1))
        .collect();
    assert_eq!(links.len(), 4, "{markdown}");
    for name in &names {
        assert!(
            links.iter().any(|l| l.contains(name.as_str())),
            "{name} not linked: {markdown}"
        );
    }
}

#[test]
fn an_incomplete_newest_run_is_refused_naming_the_newest_complete_one() {
    use goldgate_schema::{JobEntry, RunIndex, SCHEMA_VERSION};
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let [_, complete] = two_runs(&results);
    // A later run killed before its job ended: run.json lists the job, no outcome, no results.
    let killed = "20261130-090000-dead";
    std::fs::create_dir_all(results.join(killed)).unwrap();
    let index = RunIndex {
        schema_version: SCHEMA_VERSION,
        run_id: killed.into(),
        started_at: "2026-11-30T09:00:00Z".into(),
        finished_at: None,
        platform: "dev_cpu".into(),
        goldgate_version: "0.1.0".into(),
        command: vec!["goldgate".into(), "run".into()],
        runner: None,
        ab: None,
        rerun_of: None,
        keep_raw_log: false,
        secret_salt: None,
        jobs: vec![JobEntry {
            job_id: "demo/ckpt@default#1".into(),
            dir: "demo/ckpt/default/1".into(),
            outcome: None,
            scheduler_job_ids: Vec::new(),
            secret_names: Vec::new(),
            secret_checks: Default::default(),
        }],
    };
    let json = serde_json::to_vec(&index).unwrap();
    std::fs::write(results.join(killed).join("run.json"), json).unwrap();
    let results = results.to_str().unwrap();
    for command in ["report", "compare", "calibrate"] {
        let (code, _, stderr) = goldgate(&[command, "--results", results]);
        assert_eq!(code, 3, "{command}: {stderr}");
        let help = stderr
            .lines()
            .find(|l| l.starts_with("  help:"))
            .unwrap_or("");
        assert_eq!(
            help,
            format!(
                "  help: an incomplete run never passes the gate: rerun it (`goldgate run`), or \
                 read the newest complete run of the folder with --run {complete}"
            ),
            "{command}: {stderr}"
        );
    }
    let (code, stdout, stderr) = goldgate(&["report", "--results", results, "--run", complete]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("2 of 2 passed"), "{stdout}");
}
