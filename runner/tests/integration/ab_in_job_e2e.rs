//! `goldgate ab --within-job` end to end with the fake trainer, which reads the probe's
//! schedule and switches as the Python probe does: a delay planted on B's saves is caught in
//! one job of 22 save pairs, an in-job A/A raises no alarm, what a running job cannot switch is
//! refused before any job runs, and `ab.json` says which mode ran and why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::ab_e2e::{ab_json, metric};
use crate::common;

use common::cli::{self, code, repo, text};

fn ab(out: &Path, args: &[&str]) -> Output {
    cli::goldgate()
        .current_dir(repo())
        .args(["ab", "fake/injob", "--root", "runner/tests/fixtures/cases"])
        .args(["--out", out.to_str().unwrap(), "--seed", "3"])
        .args(args)
        .env_remove("GOLDGATE_PLANT_SAVE_DELAY_S")
        .env_remove("GOLDGATE_PLANT_EMPTY_CACHE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_delay_planted_on_alternating_saves_is_caught_in_one_job() {
    let out = tempfile::tempdir().unwrap();
    // 0.25 s on B's saves against saves of a few ms: a heavily loaded machine's stalls hit
    // both arms alike, and the signed-rank test needs only most pairs to agree.
    let o = ab(out.path(), &["--b-switch", "save-delay=0.25"]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    let (dir, ab) = ab_json(out.path());
    assert_eq!(ab["mode"]["kind"], "within-job", "{}", ab["mode"]);
    assert!(
        ab["mode"]["reason"]
            .as_str()
            .unwrap()
            .contains("save-delay=0.25"),
        "{}",
        ab["mode"]
    );
    let window = metric(&ab, "checkpoint-window-time");
    assert_eq!(window["verdict"], "regression", "{window}");
    assert_eq!(window["test"], "signed-rank");
    assert_eq!(window["pairs"], 22, "{window}");
    let jobs = ab["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "decided after one job: {jobs:?}");
    assert_eq!(jobs[0]["arm"], "ab");
    // The job's own record holds each save's arm, as the schedule put it.
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(jobs[0]["results"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let schedule = record["env"]["GOLDGATE_INJOB_SCHEDULE"].as_str().unwrap();
    let saves = record["checkpoints"].as_array().unwrap();
    assert_eq!(saves.len(), 45);
    for (save, letter) in saves.iter().zip(schedule.chars()) {
        let arm = save["probe"]["arm"].as_str().unwrap_or("-");
        assert_eq!(arm, letter.to_string(), "{save}");
        if letter == 'b' {
            let seconds = save["probe"]["seconds"].as_f64().unwrap();
            assert!(seconds >= 0.25, "B's saves carry the delay: {save}");
        }
    }
    let t = text(&o);
    assert!(t.contains("mode: within-job"), "{t}");
}

#[test]
fn an_in_job_a_a_raises_no_alarm() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(out.path(), &["--within-job", "--max-jobs", "2"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let (_, ab) = ab_json(out.path());
    assert_eq!(ab["mode"]["kind"], "within-job");
    for m in ab["metrics"].as_array().unwrap() {
        assert_ne!(m["verdict"], "regression", "{m}");
    }
    let window = metric(&ab, "checkpoint-window-time");
    assert!(window["pairs"].as_u64().unwrap() >= 22, "{window}");
}

#[test]
fn what_a_running_job_cannot_switch_is_refused_before_any_job_runs() {
    let out = tempfile::tempdir().unwrap();
    let o = ab(
        out.path(),
        &[
            "--within-job",
            "--b-env",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ],
    );
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("--a-env/--b-env"), "{}", text(&o));
    let o = ab(out.path(), &["--b-switch", "expandable-segments=true"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("job-level"), "{}", text(&o));
    let o = ab(out.path(), &["--b-switch", "gc-threshold=0.8"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("both arms"), "{}", text(&o));
    assert!(
        std::fs::read_dir(out.path()).unwrap().next().is_none(),
        "no job ran"
    );
}

/// An A/B's exit code is its verdicts': 1 after a regression, else 0 (an inconclusive passes).
fn exits_as_its_verdicts_decide(o: &Output) {
    let t = text(o);
    let expected = if t.contains("verdict: regression") {
        1
    } else {
        0
    };
    assert_eq!(code(o), expected, "{t}");
}

/// `--precision`: a target the first job's intervals meet ends the run there, as reached; one
/// no job can meet runs every job allowed, exits as the verdicts decide (never a usage error: an
/// A/A's timing on a machine at a load of 10 and more has been judged a regression), and says
/// how narrow the intervals got and how many more pairs would reach it.
#[test]
fn precision_runs_until_the_intervals_are_that_narrow() {
    let loose = tempfile::tempdir().unwrap();
    let o = ab(
        loose.path(),
        &["--within-job", "--max-jobs", "3", "--precision", "99%"],
    );
    exits_as_its_verdicts_decide(&o);
    let (_, json) = ab_json(loose.path());
    assert_eq!(json["precision"]["target"], 0.99, "{}", json["precision"]);
    assert_eq!(json["precision"]["reached"], true, "{}", json["precision"]);
    assert_eq!(
        json["jobs"].as_array().unwrap().len(),
        1,
        "{}",
        json["jobs"]
    );
    assert!(
        text(&o).contains("precision ±99 % asked: reached"),
        "{}",
        text(&o)
    );

    let tight = tempfile::tempdir().unwrap();
    let o = ab(
        tight.path(),
        &["--within-job", "--max-jobs", "2", "--precision", "0.01%"],
    );
    exits_as_its_verdicts_decide(&o);
    let (_, json) = ab_json(tight.path());
    assert_eq!(json["precision"]["reached"], false, "{}", json["precision"]);
    assert_eq!(
        json["jobs"].as_array().unwrap().len(),
        2,
        "every job allowed ran"
    );
    assert_eq!(json["precision"]["pairs"], 44, "{}", json["precision"]);
    let t = text(&o);
    assert!(
        t.contains("precision ±0.01 % not reached after 44 save pair(s)"),
        "{t}"
    );
    assert!(t.contains("save pairs would reach it (--max-jobs"), "{t}");
    // The design checks come with every within-job report.
    assert!(t.contains("design checks on checkpoint-window-time"), "{t}");
    assert!(
        json["checks"]["checks"].as_array().unwrap().len() >= 3,
        "{}",
        json["checks"]
    );

    let o = ab(tight.path(), &["--within-job", "--precision", "150%"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("--precision"), "{}", text(&o));
}
