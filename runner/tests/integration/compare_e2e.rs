//! End-to-end exit codes of `goldgate bless` and `goldgate compare`, on synthetic results
//! written with serde into a temporary run folder (the shape `goldgate run` writes).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use goldgate_schema::{Attempt, CheckpointRecord, Outcome, RunRecord, StepValues, VariantRecord};

use crate::common;

use common::cli::{self, code, text};

const CASE: &str = "demo/ckpt-demo";

fn series(pairs: impl IntoIterator<Item = (u64, f64)>) -> StepValues {
    StepValues(pairs.into_iter().collect())
}

/// A passed 20-step job with saves every 5 steps; `jitter` scales timings a little.
fn record(repeat: u32, jitter: f64) -> RunRecord {
    let mut metrics = BTreeMap::new();
    metrics.insert(
        "lm loss".to_string(),
        series((1..=20).map(|i| (i, 10.0 - i as f64 * 0.1))),
    );
    metrics.insert(
        "num-zeros".to_string(),
        series((1..=20).map(|i| (i, 1000.0 + i as f64))),
    );
    metrics.insert(
        "iteration-time".to_string(),
        series((1..=20).map(|i| (i, 0.32 * jitter))),
    );
    metrics.insert(
        "checkpoint-blocking-time".to_string(),
        series([
            (5, 3.6),
            (10, 0.5 * jitter),
            (15, 0.5 * jitter),
            (20, 0.5 * jitter),
        ]),
    );
    metrics.insert(
        "host-peak-pss-bytes".to_string(),
        series([(20, 2.0e9 * jitter)]),
    );
    RunRecord {
        run_id: "20261130-070000-abcd".into(),
        started_at: "2026-11-30T07:00:00Z".into(),
        wall_seconds: 12.0,
        argv: vec![vec!["fake-trainer".into()]],
        metrics,
        ..RunRecord::passed(CASE, VariantRecord::baseline(), repeat, "dev_cpu")
    }
}

fn write_records(dir: &Path, records: &[RunRecord]) {
    for r in records {
        let p = dir.join(r.rel_dir()).join("results.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_vec_pretty(r).unwrap()).unwrap();
    }
}

fn goldgate(args: &[&str], cwd: &Path) -> Output {
    cli::goldgate()
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
}

/// The shipped `goldgate.yaml` (its rules) with `dev_cpu`'s clocks judged against goldens, as
/// a GPU platform's are: these records' times are given, not measured, so the timing rules are
/// this file's subject. (The shipped `dev_cpu` says `clocks: ab`.)
fn golden_clocks_config() -> String {
    let shipped = include_str!("../../../goldgate.yaml");
    let config = shipped.replace("    clocks: ab\n", "");
    assert_ne!(
        config, shipped,
        "the shipped dev_cpu no longer says clocks: ab"
    );
    config
}

impl Setup {
    /// A results folder with three repeats, blessed into `golden/`.
    fn blessed() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("goldgate.yaml"), golden_clocks_config()).unwrap();
        let results = dir.path().join("results/run1");
        write_records(
            &results,
            &[record(1, 1.0), record(2, 1.02), record(3, 0.99)],
        );
        let out = goldgate(&["bless", "--from", "results/run1"], dir.path());
        assert_eq!(code(&out), 0, "{}", text(&out));
        Setup { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn golden(&self) -> PathBuf {
        self.path("golden/demo/ckpt-demo/golden_values_dev_dev_cpu.json")
    }

    fn compare(&self, extra: &[&str]) -> Output {
        let mut args = vec!["compare", "--results", "results", "--root", "no-cases"];
        args.extend_from_slice(extra);
        goldgate(&args, self.dir.path())
    }
}

#[test]
fn bless_then_compare_passes() {
    let s = Setup::blessed();
    let golden = std::fs::read_to_string(s.golden()).unwrap();
    assert!(golden.contains("\"checkpoint-blocking-time\""), "{golden}");
    assert!(!golden.ends_with('\n'));
    let out = s.compare(&["--json", "out/c.json", "--junit", "out/j.xml"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("out/c.json")).unwrap()).unwrap();
    assert_eq!(json["counts"]["pass"], 1);
    assert_eq!(json["jobs"][0]["metrics"].as_array().unwrap().len(), 5);
    let junit = std::fs::read_to_string(s.path("out/j.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
}

#[test]
fn golden_twice_as_fast_on_checkpoints_regresses_with_junit_failure() {
    let s = Setup::blessed();
    let mut g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.golden()).unwrap()).unwrap();
    let values = g["checkpoint-blocking-time"]["values"]
        .as_object_mut()
        .unwrap();
    for v in values.values_mut() {
        *v = serde_json::json!(v.as_f64().unwrap() / 2.0);
    }
    std::fs::write(s.golden(), serde_json::to_string(&g).unwrap()).unwrap();
    let out = s.compare(&["--junit", "out/j.xml"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let junit = std::fs::read_to_string(s.path("out/j.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert!(junit.contains("checkpoint-blocking-time"), "{junit}");
}

#[test]
fn a_folder_of_runs_is_judged_by_its_newest_run_unless_asked_otherwise() {
    let s = Setup::blessed();
    // A later run of the same job whose saves block three times as long: a regression.
    let mut slow = record(1, 3.0);
    slow.run_id = "20261130-080000-beef".into();
    slow.started_at = "2026-11-30T08:00:00Z".into();
    write_records(&s.path("results/run2"), &[slow]);
    let out = s.compare(&[]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains(
            "goldgate: judging run 20261130-080000-beef, the newest of 2 in this folder \
             (1 older run left out; --all-runs merges them, --run ID picks others)"
        ),
        "{}",
        text(&out)
    );
    // Merged with the three earlier repeats, the slow one is outvoted: why it is not the default.
    let merged = s.compare(&["--all-runs"]);
    assert_eq!(code(&merged), 0, "{}", text(&merged));
    let older = s.compare(&["--run", "20261130-070000-abcd"]);
    assert_eq!(code(&older), 0, "{}", text(&older));
    let unknown = s.compare(&["--run", "nope"]);
    assert_eq!(code(&unknown), 2, "{}", text(&unknown));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    let error = stderr.lines().skip_while(|l| !l.starts_with("error:"));
    insta::assert_snapshot!(error.collect::<Vec<_>>().join("\n"), @r"
    error: no run `nope` in the results folder (runs: 20261130-070000-abcd, 20261130-080000-beef)
      help: run ids are the folder names under the results folder
    ");
    // A usage error clap finds reads the same: `error:` first.
    let clap = s.compare(&["--no-such-flag"]);
    assert_eq!(code(&clap), 2, "{}", text(&clap));
    assert!(
        String::from_utf8_lossy(&clap.stderr).starts_with("error: "),
        "{}",
        text(&clap)
    );
    // bless takes the newest run too: its golden now holds the slow saves.
    let out = goldgate(&["bless", "--from", "results", "--dry-run"], s.dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("goldgate: blessing run 20261130-080000-beef"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("(+200.0%)"), "{}", text(&out));
}

#[test]
fn a_list_of_lists_golden_metric_is_reported_as_an_unsupported_shape() {
    let s = Setup::blessed();
    let mut g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.golden()).unwrap()).unwrap();
    g["lm loss"]["values"] = serde_json::json!([[10.0, 9.9], [9.8, 9.7]]);
    std::fs::write(s.golden(), serde_json::to_string(&g).unwrap()).unwrap();
    let out = s.compare(&["--json", "c.json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains(
            "demo/ckpt-demo (default): `lm loss` not compared: unsupported shape in \
             golden/demo/ckpt-demo/golden_values_dev_dev_cpu.json (a list of lists (2 rows of 2 values))"
        ),
        "{}",
        text(&out)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("c.json")).unwrap()).unwrap();
    let compared: Vec<&str> = json["jobs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(!compared.contains(&"lm loss"), "{compared:?}");
}

#[test]
fn truncated_golden_is_a_usage_error_naming_the_file() {
    let s = Setup::blessed();
    let g = std::fs::read_to_string(s.golden()).unwrap();
    std::fs::write(s.golden(), &g[..g.len() / 2]).unwrap();
    let out = s.compare(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("golden_values_dev_dev_cpu.json"),
        "{}",
        text(&out)
    );
}

#[test]
fn crashed_job_is_an_infrastructure_failure() {
    let s = Setup::blessed();
    let mut crashed = record(1, 1.0);
    crashed.run_id = "run2".into();
    crashed.outcome = Outcome::Failed { exit_code: 139 };
    crashed.attempts = vec![Attempt {
        number: 1,
        started_at: "2026-11-30T07:10:00Z".into(),
        wall_seconds: 3.0,
        outcome: crashed.outcome.clone(),
        failure_line: Some("Segmentation fault (core dumped)".into()),
        log_tail: Vec::new(),
        log: "logs/attempt-1.log".into(),
        queued_seconds: None,
    }];
    write_records(&s.path("crash"), &[crashed]);
    let out = goldgate(
        &["compare", "--results", "crash", "--root", "no-cases"],
        s.dir.path(),
    );
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert!(text(&out).contains("failed (exit 139)"), "{}", text(&out));
    // bless refuses it, naming the job (usage error).
    let out = goldgate(&["bless", "--from", "crash", "--dry-run"], s.dir.path());
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("refusing to bless demo/ckpt-demo@default#1"),
        "{}",
        text(&out)
    );
}

#[test]
fn missing_golden_and_env_mismatch_are_usage_errors() {
    let s = Setup::blessed();
    let out = s.compare(&["--platform", "dev_other"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("missing-golden"), "{}", text(&out));
    // A golden for an H100 platform, results from a machine without a GPU.
    let h100 = s.path("golden/demo/ckpt-demo/golden_values_dev_dgx_h100.json");
    std::fs::copy(s.golden(), &h100).unwrap();
    let out = s.compare(&["--platform", "dgx_h100"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("expects GPU model"), "{}", text(&out));
    let out = s.compare(&["--platform", "dgx_h100", "--allow-env-mismatch"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
}

#[test]
fn unstable_passes_with_a_warning_and_fails_under_strict() {
    let s = Setup::blessed();
    let noisy = [record(1, 1.0), record(2, 1.9), record(3, 0.6)];
    let mut noisy = noisy.to_vec();
    for r in &mut noisy {
        r.run_id = "noisy".into();
    }
    write_records(&s.path("noisy"), &noisy);
    let args = ["compare", "--results", "noisy", "--root", "no-cases"];
    let out = goldgate(&args, s.dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("is unstable"), "{}", text(&out));
    let out = goldgate(&[&args[..], &["--strict"]].concat(), s.dir.path());
    assert_eq!(code(&out), 1, "{}", text(&out));
}

#[test]
fn improvement_fails_only_when_asked() {
    let s = Setup::blessed();
    let mut fast: Vec<RunRecord> = (1..=3).map(|i| record(i, 0.5)).collect();
    for r in &mut fast {
        r.run_id = "fast".into();
    }
    write_records(&s.path("fast"), &fast);
    let args = ["compare", "--results", "fast", "--root", "no-cases"];
    assert_eq!(code(&goldgate(&args, s.dir.path())), 0);
    let out = goldgate(
        &[&args[..], &["--fail-on-improvement"]].concat(),
        s.dir.path(),
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
}

#[test]
fn bless_prints_a_per_metric_diff() {
    let s = Setup::blessed();
    let mut slower: Vec<RunRecord> = (1..=2).map(|i| record(i, 1.5)).collect();
    for r in &mut slower {
        r.run_id = "slower".into();
    }
    write_records(&s.path("slower"), &slower);
    let out = goldgate(&["bless", "--from", "slower", "--dry-run"], s.dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    let before = std::fs::read_to_string(s.golden()).unwrap();
    insta::assert_snapshot!(text(&out));
    assert_eq!(
        before,
        std::fs::read_to_string(s.golden()).unwrap(),
        "dry run wrote"
    );
}

#[test]
fn calibrate_writes_rtols_and_keeps_the_config_comments() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<RunRecord> = [1.0, 1.04, 0.97, 1.01]
        .iter()
        .enumerate()
        .map(|(i, j)| record(i as u32 + 1, *j))
        .collect();
    write_records(&dir.path().join("reps"), &runs);
    let config = dir.path().join("goldgate.yaml");
    std::fs::write(
        &config,
        "# my comment\nrules:\n  iteration-time:\n    max_cv: 0.1\n",
    )
    .unwrap();
    let out = goldgate(
        &[
            "calibrate",
            "--results",
            "reps",
            "--repeats",
            "3",
            "--write",
        ],
        dir.path(),
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("checkpoint-blocking-time"),
        "{}",
        text(&out)
    );
    let edited = std::fs::read_to_string(&config).unwrap();
    assert!(
        edited.starts_with("# my comment\nrules:\n  iteration-time:\n"),
        "{edited}"
    );
    assert!(edited.contains("    max_cv: 0.1\n"), "{edited}");
    assert!(
        edited.contains("  \"checkpoint-blocking-time\":\n    rtol: "),
        "{edited}"
    );
}

#[test]
fn the_case_metrics_list_selects_what_is_compared() {
    let s = Setup::blessed();
    let case_dir = s.path("cases/demo/ckpt-demo");
    std::fs::create_dir_all(&case_dir).unwrap();
    std::fs::write(
        case_dir.join("model_config.yaml"),
        "ENV_VARS: {}\nTEST_TYPE: regular\nMODEL_ARGS:\n  --train-iters: 20\nMETRICS:\n  - \"lm loss\"\n",
    )
    .unwrap();
    let out = goldgate(
        &[
            "compare",
            "--results",
            "results",
            "--root",
            "cases",
            "--json",
            "c.json",
        ],
        s.dir.path(),
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("c.json")).unwrap()).unwrap();
    let job = &json["jobs"][0];
    let names: Vec<&str> = job["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    // `lm loss` from METRICS, plus goldgate's own keys the golden file holds.
    assert_eq!(
        names,
        ["checkpoint-blocking-time", "host-peak-pss-bytes", "lm loss"]
    );
    assert!(
        job["config_path"]
            .as_str()
            .unwrap()
            .ends_with("model_config.yaml")
    );
}

#[test]
fn calibrate_without_a_config_starts_from_the_shipped_one() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<RunRecord> = [1.0, 1.04, 0.97]
        .iter()
        .enumerate()
        .map(|(i, j)| record(i as u32 + 1, *j))
        .collect();
    write_records(&dir.path().join("reps"), &runs);
    let out = goldgate(&["calibrate", "--results", "reps", "--write"], dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    let written = std::fs::read_to_string(dir.path().join("goldgate.yaml")).unwrap();
    assert!(written.contains("platforms:"), "{written}");
    assert!(
        written.contains("\"iteration-time\":\n    rtol: "),
        "{written}"
    );
    // What calibrate wrote, compare reads.
    let out = goldgate(
        &["compare", "--results", "reps", "--root", "no-cases"],
        dir.path(),
    );
    assert_eq!(code(&out), 2, "no golden yet: {}", text(&out));
    assert!(text(&out).contains("missing-golden"), "{}", text(&out));
}

/// An async save the next one overlapped is flagged by the gate (detail of
/// `checkpoint-async-latency`, warning) in the terminal, markdown and JSON.
#[test]
fn overlapped_async_saves_are_flagged_by_the_gate() {
    let with_latency = |repeat, overlapped: &[u64]| {
        let mut r = record(repeat, 1.0);
        r.checkpoints = [5u64, 10, 15, 20]
            .iter()
            .map(|&iteration| CheckpointRecord {
                iteration,
                asynchronous: true,
                async_latency_seconds: Some(2.0),
                overlapped_by_next: overlapped.contains(&iteration),
                started_before_previous_finished: overlapped.contains(&(iteration - 5)),
                ..CheckpointRecord::default()
            })
            .collect();
        let kept = r.checkpoints.iter().filter(|c| !c.overlapped_by_next);
        r.metrics.insert(
            "checkpoint-async-latency".into(),
            series(kept.map(|c| (c.iteration, 2.0))),
        );
        r.overlapping_saves = overlapped.len() as u64;
        r
    };
    let dir = tempfile::tempdir().unwrap();
    write_records(
        &dir.path().join("golden-run"),
        &[with_latency(1, &[]), with_latency(2, &[])],
    );
    let out = goldgate(&["bless", "--from", "golden-run"], dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    write_records(
        &dir.path().join("results/run1"),
        &[with_latency(1, &[5, 10]), with_latency(2, &[])],
    );
    let out = goldgate(
        &[
            "compare",
            "--results",
            "results",
            "--root",
            "no-cases",
            "--markdown",
            "c.md",
            "--json",
            "c.json",
        ],
        dir.path(),
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let note =
        "async saves overlapped by the next save, latency left out (iterations): repeat 1: 5, 10";
    assert!(text(&out).contains(note), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("c.md")).unwrap();
    assert!(md.contains(note), "{md}");
    let json = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let latency = v["jobs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "checkpoint-async-latency")
        .unwrap();
    assert!(
        latency["detail"].as_str().unwrap().contains(note),
        "{latency}"
    );
}

/// A blessed setup whose golden checkpoint times are halved: the comparison regresses.
fn regressed() -> Setup {
    let s = Setup::blessed();
    let mut g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.golden()).unwrap()).unwrap();
    for v in g["checkpoint-blocking-time"]["values"]
        .as_object_mut()
        .unwrap()
        .values_mut()
    {
        *v = serde_json::json!(v.as_f64().unwrap() / 2.0);
    }
    std::fs::write(s.golden(), serde_json::to_string(&g).unwrap()).unwrap();
    s
}

#[test]
fn a_dash_sends_one_report_to_stdout_and_the_table_to_stderr() {
    let s = regressed();
    let out = s.compare(&["--json", "-"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["schema_version"].as_u64().is_some(), "{json}");
    assert_eq!(json["counts"]["regression"], 1, "{json}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("checkpoint-blocking-time"), "{stderr}");
    assert!(!s.path("-").exists(), "no file named `-`");

    let junit = s.compare(&["--junit", "-"]);
    assert_eq!(code(&junit), 1, "{}", text(&junit));
    assert!(String::from_utf8_lossy(&junit.stdout).starts_with("<?xml"));

    let two = s.compare(&["--json", "-", "--junit", "-"]);
    assert_eq!(code(&two), 2, "{}", text(&two));
    assert!(text(&two).contains("only one of --json, --junit and --markdown can be `-`"));
}

#[test]
fn colour_follows_color_then_no_color_then_clicolor_force() {
    let s = regressed();
    let run = |color: Option<&str>, env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_goldgate"));
        cmd.args(["compare", "--results", "results", "--root", "no-cases"])
            .current_dir(s.path(""))
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR")
            .envs(env.iter().copied());
        if let Some(c) = color {
            cmd.args(["--color", c]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(code(&out), 1, "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).contains('\u{1b}')
    };
    assert!(!run(None, &[]), "a pipe is not a terminal");
    assert!(run(None, &[("CLICOLOR_FORCE", "1")]));
    assert!(!run(None, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(run(Some("always"), &[("NO_COLOR", "1")]));
    assert!(!run(Some("never"), &[("CLICOLOR_FORCE", "1")]));
}

/// A job's outcome is its results.json's, and the run's run.json must say the
/// same. A job that run.json records as failed does not pass because its results.json says
/// passed: the run is refused, exit 3, naming both files.
#[test]
fn run_json_and_results_json_that_disagree_on_an_outcome_are_refused() {
    use goldgate_schema::{JobEntry, RunIndex, SCHEMA_VERSION};
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results/20261130-070000-abcd");
    let records = [record(1, 1.0), record(2, 1.01)];
    write_records(&run, &records);
    let index = |second: Outcome| RunIndex {
        schema_version: SCHEMA_VERSION,
        run_id: "20261130-070000-abcd".into(),
        started_at: "2026-11-30T07:00:00Z".into(),
        finished_at: Some("2026-11-30T07:01:00Z".into()),
        platform: "dev_cpu".into(),
        goldgate_version: "0.1.0".into(),
        command: vec!["goldgate".into(), "run".into()],
        runner: None,
        ab: None,
        rerun_of: None,
        keep_raw_log: false,
        secret_salt: None,
        jobs: records
            .iter()
            .zip([Outcome::Passed, second])
            .map(|(r, outcome)| JobEntry {
                job_id: r.job_id.clone(),
                dir: r.rel_dir(),
                outcome: Some(outcome),
                scheduler_job_ids: Vec::new(),
                secret_names: Vec::new(),
                secret_checks: Default::default(),
            })
            .collect(),
    };
    let write_index = |i: RunIndex| {
        std::fs::write(run.join("run.json"), serde_json::to_vec(&i).unwrap()).unwrap();
    };
    write_index(index(Outcome::Passed));
    let out = goldgate(&["bless", "--from", "results"], dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    let compare = || {
        goldgate(
            &["compare", "--results", "results", "--root", "x"],
            dir.path(),
        )
    };
    let out = compare();
    assert_eq!(code(&out), 0, "agreeing files pass: {}", text(&out));

    write_index(index(Outcome::Failed { exit_code: 1 }));
    let out = compare();
    assert_eq!(code(&out), 3, "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("results/20261130-070000-abcd/run.json and the jobs' results.json disagree"),
        "{said}"
    );
    assert!(
        said.contains(
            "demo/ckpt-demo@default#2: run.json says failed (exit 1), \
             results/20261130-070000-abcd/demo/ckpt-demo/default/2/results.json says passed"
        ),
        "{said}"
    );
    let out = goldgate(&["bless", "--from", "results"], dir.path());
    assert_eq!(code(&out), 3, "bless refuses it too: {}", text(&out));
}

/// A job that ended before its memory could first be read has no `host-peak-pss-bytes`, and
/// its record says why: the metric is `not-sampled` (exit 0, said in the table; exit 1 under
/// `--strict`), never a regression. Without that note the same gap is a missing metric.
#[test]
fn a_metric_the_job_could_not_sample_is_not_sampled_not_missing() {
    let s = Setup::blessed();
    let unsampled = |why: Option<&str>| -> Vec<RunRecord> {
        (1..=3)
            .map(|i| {
                let mut r = record(i, 1.0);
                r.run_id = "short".into();
                r.metrics.remove("host-peak-pss-bytes");
                if let Some(why) = why {
                    r.memory
                        .not_sampled
                        .insert("host-peak-pss-bytes".into(), why.into());
                }
                r
            })
            .collect()
    };
    let why = "none of the 1 PSS read(s), the first as the job started, found a process of the \
               job (it ended before its memory could be read)";
    write_records(&s.path("short"), &unsampled(Some(why)));
    let args = ["compare", "--results", "short", "--root", "no-cases"];
    let out = goldgate(&args, s.dir.path());
    assert_eq!(code(&out), 0, "{}", text(&out));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
    let out = goldgate(&[&args[..], &["--strict"]].concat(), s.dir.path());
    assert_eq!(code(&out), 1, "{}", text(&out));
    std::fs::remove_dir_all(s.path("short")).unwrap();
    write_records(&s.path("short"), &unsampled(None));
    let out = goldgate(&args, s.dir.path());
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(text(&out).contains("missing-metric"), "{}", text(&out));
}
