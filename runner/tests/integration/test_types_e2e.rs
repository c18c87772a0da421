//! Megatron's test types end to end with the fake trainer: what each runs, what it compares,
//! and that dropping the semantics fails these tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use crate::common;

use common::cli::{goldgate_in, text, write};
use common::results::records;
use goldgate_schema::RunRecord;

/// A ckpt-resume case: 20 iterations, saves at 10 and 20. Megatron's `run_ci_test.sh` removes
/// `iter_0000020` and writes 10 into the tracker before run 2, which resumes at step 11.
fn resume_case(extra: &str) -> String {
    format!(
        "TEST_TYPE: ckpt-resume
LAUNCHER: direct
MODEL_ARGS:
  --train-iters: 20
  --save: ${{CHECKPOINT_SAVE_PATH}}
  --load: ${{CHECKPOINT_LOAD_PATH}}
  --save-interval: 10
  --log-interval: 1
  --step-ms: 2
  --model-mb: 4
  --ckpt-mb: 2
{extra}GOLDGATE:
  entry: [goldgate, fake-trainer]
  nproc: 1
"
    )
}

/// The verdict of each row of a saved comparison: `(metric, verdict)`.
fn rows(json: &Path) -> Vec<(String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["jobs"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metric"].as_str().unwrap().to_owned(),
                m["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn run_args<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--root",
        "cases",
        "--out",
        out,
        "--golden-root",
        "golden",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn ckpt_resume_judges_run_one_against_the_golden_and_the_resumed_half_against_run_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("goldgate.yaml"), &common::gate::untimed_config());
    write(
        &d.join("cases/demo/resume/model_config.yaml"),
        &resume_case(""),
    );
    let o = goldgate_in(d, &run_args("out1", &["--no-compare", "demo/resume"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = &records(&d.join("out1"))[0];
    // The golden side is run 1: every step from 1.
    let loss = &r.metrics["lm loss"].0;
    assert_eq!(loss.keys().next(), Some(&1), "{loss:?}");
    assert_eq!(loss.keys().last(), Some(&20));
    // Run 2 resumed at TRAIN_ITERS / 2: the tracker said 10 and iter_0000020 was gone.
    let resumed = r.resumed.as_ref().expect("the second run is recorded");
    assert_eq!((resumed.from_step, resumed.first_step), (10, Some(11)));
    let half = &resumed.metrics["lm loss"].0;
    assert_eq!(
        half.keys().copied().collect::<Vec<_>>(),
        (11..=20).collect::<Vec<_>>()
    );
    let log2 = d
        .join("out1")
        .join(&r.run_id)
        .join(r.rel_dir())
        .join("logs/console.run2.log");
    let log2 = std::fs::read_to_string(log2).unwrap();
    assert!(log2.contains("at iteration 10"), "{log2}");

    let o = goldgate_in(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate_in(
        d,
        &run_args("out2", &["--json", "gate.json", "demo/resume"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = rows(&d.join("gate.json"));
    for metric in [
        "lm loss",
        "num-zeros",
        "lm loss (resumed)",
        "num-zeros (resumed)",
    ] {
        assert!(
            rows.contains(&(metric.to_owned(), "pass".to_owned())),
            "{metric}: {rows:?}"
        );
    }
}

#[test]
fn a_resumed_run_that_drifts_from_run_one_is_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Only a run that loaded a checkpoint drifts: run 1 (and so the golden) is unchanged.
    let case = resume_case("  --resume-drift: 0.5\n");
    write(&d.join("cases/demo/drift/model_config.yaml"), &case);
    let o = goldgate_in(d, &run_args("out1", &["--no-compare", "demo/drift"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate_in(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate_in(d, &run_args("out2", &["--json", "gate.json", "demo/drift"]));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let rows = rows(&d.join("gate.json"));
    assert!(
        rows.contains(&("lm loss".to_owned(), "pass".to_owned())),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("lm loss (resumed)".to_owned(), "regression".to_owned())),
        "{rows:?}"
    );
}

/// A regular fake-trainer case with `extra` top-level keys.
fn regular_case(extra: &str) -> String {
    format!(
        "TEST_TYPE: regular
LAUNCHER: direct
MODEL_ARGS:
  --train-iters: 5
  --log-interval: 1
  --step-ms: 2
  --model-mb: 4
  --ckpt-mb: 2
{extra}GOLDGATE:
  entry: [goldgate, fake-trainer]
  nproc: 1
"
    )
}

/// The folder of the only job of the newest run under `out`.
fn job_dir(out: &Path) -> (RunRecord, std::path::PathBuf) {
    let r = records(out).remove(0);
    let dir = out.join(&r.run_id).join(r.rel_dir());
    (r, dir)
}

#[test]
fn before_and_after_scripts_run_in_the_job_folder_with_the_jobs_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scripts = "BEFORE_SCRIPT: |
  echo \"before in $(pwd), saving to $CHECKPOINT_SAVE_PATH\"
  touch before-ran
AFTER_SCRIPT: |
  echo \"after, training exit $EXIT_CODE\"
  touch after-ran
";
    write(
        &d.join("cases/demo/scripts/model_config.yaml"),
        &regular_case(scripts),
    );
    // The local executor leaves them out unless asked (they can change the machine), and says so.
    let o = goldgate_in(d, &run_args("out0", &["--no-compare", "demo/scripts"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (_, job) = job_dir(&d.join("out0"));
    assert!(!job.join("before-ran").exists() && !job.join("after-ran").exists());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "note: not running the BEFORE_SCRIPT/AFTER_SCRIPT of 1 case(s) on this machine: \
             demo/scripts (`--scripts` runs them; `goldgate plan` shows them)\n"
        ),
        "{}",
        text(&o)
    );
    // --scripts: what will run is printed first, then both run.
    let o = goldgate_in(
        d,
        &run_args("out", &["--no-compare", "--scripts", "demo/scripts"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let notice = "goldgate: running the cases' scripts on this machine (bash -euo pipefail -c, \
                  in each job folder, around every run):\n  demo/scripts BEFORE_SCRIPT:\n    \
                  | echo \"before in $(pwd), saving to ";
    let at = stderr.find(notice).unwrap_or_else(|| panic!("{stderr}"));
    assert!(at < stderr.find("start ").unwrap(), "{stderr}");
    for line in [
        "    | touch before-ran\n  demo/scripts AFTER_SCRIPT:\n",
        "    | echo \"after, training exit $EXIT_CODE\"\n    | touch after-ran\n",
    ] {
        assert!(stderr.contains(line), "{stderr}");
    }
    let (_, job) = job_dir(&d.join("out"));
    assert!(job.join("before-ran").is_file() && job.join("after-ran").is_file());
    let before = std::fs::read_to_string(job.join("logs/before_script.log")).unwrap();
    let job_abs = job.canonicalize().unwrap();
    let want = format!(
        "before in {}, saving to {}",
        job_abs.display(),
        job_abs.join("checkpoints").display()
    );
    assert!(before.contains(&want), "{before}\nwant: {want}");
    let after = std::fs::read_to_string(job.join("logs/after_script.log")).unwrap();
    assert!(after.contains("after, training exit 0"), "{after}");

    // --no-scripts: neither runs.
    let o = goldgate_in(
        d,
        &run_args("out2", &["--no-compare", "--no-scripts", "demo/scripts"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (_, job) = job_dir(&d.join("out2"));
    assert!(!job.join("before-ran").exists() && !job.join("after-ran").exists());
}

/// `repro` follows `run`'s rule for the case's scripts: the script it prints leaves them out
/// (they may `pip uninstall` packages) and says so on stderr, unless `--scripts` asks, when it
/// lists what the script will run; `--no-scripts` says nothing.
#[test]
fn repro_leaves_the_cases_scripts_out_unless_asked_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scripts = "BEFORE_SCRIPT: |\n  pip uninstall -y nvidia-resiliency-ext\nAFTER_SCRIPT: |\n  echo done\n";
    write(
        &d.join("cases/demo/scripts/model_config.yaml"),
        &regular_case(scripts),
    );
    let repro = |extra: &[&str]| {
        let mut args = vec!["repro", "--root", "cases", "demo/scripts"];
        args.extend_from_slice(extra);
        let o = goldgate_in(d, &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        (out, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (script, note) = repro(&[]);
    assert!(!script.contains("pip uninstall"), "{script}");
    assert!(!script.contains("GOLDGATE_BEFORE_SCRIPT"), "{script}");
    let (with, listed) = repro(&["--scripts"]);
    assert!(
        with.contains("bash -euo pipefail <<'GOLDGATE_BEFORE_SCRIPT'\npip uninstall -y nvidia-resiliency-ext\n"),
        "{with}"
    );
    assert!(
        with.contains("<<'GOLDGATE_AFTER_SCRIPT'\necho done\n"),
        "{with}"
    );
    let (without, silent) = repro(&["--no-scripts"]);
    assert_eq!(without, script);
    assert!(!silent.contains("SCRIPT"), "{silent}");
    insta::assert_snapshot!(format!("{note}---\n{listed}"));
}

#[test]
fn a_failing_script_fails_the_job_with_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let before = "BEFORE_SCRIPT: |\n  echo preparing\n  echo \"dataset not found\" >&2\n  exit 7\n";
    write(
        &d.join("cases/demo/before/model_config.yaml"),
        &regular_case(before),
    );
    let o = goldgate_in(
        d,
        &run_args("out", &["--no-compare", "--scripts", "demo/before"]),
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (r, job) = job_dir(&d.join("out"));
    assert_eq!(r.outcome, goldgate_schema::Outcome::Failed { exit_code: 7 });
    let line = r.attempts.last().unwrap().failure_line.clone().unwrap();
    assert_eq!(line, "BEFORE_SCRIPT failed (exit 7): dataset not found");
    assert!(
        !job.join("logs/console.log").exists(),
        "the training never started"
    );
    // The same case with --no-scripts trains and passes.
    let o = goldgate_in(
        d,
        &run_args("out2", &["--no-compare", "--no-scripts", "demo/before"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let after =
        "AFTER_SCRIPT: |\n  test \"$EXIT_CODE\" -ne 0 || { echo \"no report written\"; false; }\n";
    write(
        &d.join("cases/demo/after/model_config.yaml"),
        &regular_case(after),
    );
    let o = goldgate_in(
        d,
        &run_args("out3", &["--no-compare", "--scripts", "demo/after"]),
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let (r, _) = job_dir(&d.join("out3"));
    let line = r.attempts.last().unwrap().failure_line.clone().unwrap();
    assert_eq!(line, "AFTER_SCRIPT failed (exit 1): no report written");
}

#[test]
fn skip_pytest_judges_by_exit_code_and_xpass_expects_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No golden file: a compared job would miss its golden.
    let skip = "ENV_VARS:\n  SKIP_PYTEST: 1\n";
    write(
        &d.join("cases/demo/skip/model_config.yaml"),
        &regular_case(skip),
    );
    let o = goldgate_in(d, &run_args("out", &["demo/skip"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("SKIP_PYTEST=1: judged by its exit code alone"),
        "{}",
        text(&o)
    );
    let plain = regular_case("");
    write(&d.join("cases/demo/plain/model_config.yaml"), &plain);
    let o = goldgate_in(d, &run_args("out2", &["demo/plain"]));
    assert_ne!(
        o.status.code(),
        Some(0),
        "no golden, compared: {}",
        text(&o)
    );

    let crash = "  --crash-at-step: 3\n";
    let xpass = regular_case("TEST_EVALUATION: xpass\n")
        .replace("  --step-ms: 2\n", &format!("  --step-ms: 2\n{crash}"));
    write(&d.join("cases/demo/xpass/model_config.yaml"), &xpass);
    let o = goldgate_in(d, &run_args("out3", &["demo/xpass"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("as expected (TEST_EVALUATION: xpass)"),
        "{}",
        text(&o)
    );
    let xfail = xpass.replace("TEST_EVALUATION: xpass\n", "");
    write(&d.join("cases/demo/xfail/model_config.yaml"), &xfail);
    let o = goldgate_in(d, &run_args("out4", &["demo/xfail"]));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}

/// A platform whose frozen checkpoints (Megatron's `/mnt/artifacts`) are `frozen/` and a
/// regular case that leaves one behind: iteration 10 of 20. Save times are judged with
/// `common::gate`'s loose rule.
fn frozen_tree(d: &Path) {
    let config = format!(
        "platforms:\n  local:\n    gpus_per_node: 1\n    frozen_checkpoints: {}\n{}",
        d.join("frozen").display(),
        common::gate::UNTIMED_SAVES
    );
    write(&d.join("goldgate.yaml"), &config);
    let maker = resume_case("")
        .replace("ckpt-resume", "regular")
        .replace("  --train-iters: 20\n", "  --train-iters: 10\n");
    write(&d.join("make/demo/maker/model_config.yaml"), &maker);
    let o = goldgate_in(
        d,
        &[
            "run",
            "--root",
            "make",
            "--out",
            "made",
            "--no-compare",
            "--keep-checkpoints",
            "demo/maker",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let made = records(&d.join("made")).remove(0);
    let ckpt = d
        .join("made")
        .join(&made.run_id)
        .join(made.rel_dir())
        .join("checkpoints");
    std::fs::rename(ckpt, d.join("frozen")).unwrap();
    let tracker = std::fs::read_to_string(d.join("frozen/latest_checkpointed_iteration.txt"));
    assert_eq!(tracker.unwrap().trim(), "10");
}

#[test]
fn frozen_start_trains_on_from_the_frozen_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    frozen_tree(d);
    let case = resume_case("").replace("ckpt-resume", "frozen-start");
    write(&d.join("cases/demo/start/model_config.yaml"), &case);
    let o = goldgate_in(d, &run_args("out", &["--no-compare", "demo/start"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = records(&d.join("out")).remove(0);
    let steps: Vec<u64> = r.metrics["lm loss"].0.keys().copied().collect();
    assert_eq!(
        steps,
        (11..=20).collect::<Vec<_>>(),
        "it started from iteration 10"
    );
    assert!(r.resumed.is_none());
}

#[test]
fn frozen_resume_judges_the_run_from_the_frozen_checkpoint_against_run_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    frozen_tree(d);
    let case = resume_case("").replace("ckpt-resume", "frozen-resume");
    write(&d.join("cases/demo/fresume/model_config.yaml"), &case);
    let o = goldgate_in(d, &run_args("out1", &["--no-compare", "demo/fresume"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = records(&d.join("out1")).remove(0);
    // Run 1 trains from scratch; run 2 loads the frozen checkpoint (iteration 10).
    assert_eq!(r.metrics["lm loss"].0.keys().next(), Some(&1));
    let resumed = r.resumed.as_ref().expect("run 2 recorded");
    assert_eq!((resumed.from_step, resumed.first_step), (10, Some(11)));
    let o = goldgate_in(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate_in(
        d,
        &run_args("out2", &["--json", "gate.json", "demo/fresume"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = rows(&d.join("gate.json"));
    let resumed_pass = ("lm loss (resumed)".to_owned(), "pass".to_owned());
    assert!(rows.contains(&resumed_pass), "{rows:?}");
}

/// Stands in for Megatron's inference scripts: writes `--output-path` as they do, one request
/// (id 1) with the tokens given by `--tokens`.
const INFER: &str = r#"#!/usr/bin/env bash
out=; tokens=
while [ $# -gt 0 ]; do
  case $1 in --output-path) out=$2; shift;; --tokens) tokens=$2; shift;; esac; shift
done
[ "$tokens" = none ] && exit 0
printf '{"1": {"generated_tokens": [%s], "logprobs": [-0.5, -0.25], "generated_text": "hello world"}, "throughput": [1.0, 100.0, 102.0]}' "${tokens// /, }" > "$out"
"#;

fn inference_case(script: &Path, tokens: &str) -> String {
    format!(
        "TEST_TYPE: frozen-start
MODE: inference
LAUNCHER: direct
MODEL_ARGS:
  --output-path: ${{INFERENCE_OUTPUT_PATH}}
  --tokens: \"{tokens}\"
METRICS: [generated_tokens, logprobs, generated_text, throughput]
GOLDGATE:
  entry: [bash, {}]
  nproc: 1
",
        script.display()
    )
}

#[test]
fn inference_requests_are_compared_with_their_golden_by_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("infer.sh"), INFER);
    let golden = r#"{"1": {"input_prompt": "hi", "generated_text": "hello world and more", "generated_tokens": [5, 6, 7], "logprobs": [-0.5, -0.2504]}, "throughput": [3.0, 100.0, 100.0]}"#;
    for (case, tokens) in [("same", "5 6 7"), ("other", "5 6 8"), ("silent", "none")] {
        write(
            &d.join(format!("cases/demo/{case}/model_config.yaml")),
            &inference_case(&d.join("infer.sh"), tokens),
        );
        write(
            &d.join(format!("golden/demo/{case}/golden_values_dev_dev_cpu.json")),
            golden,
        );
    }
    let verdicts = |file: &str| rows(&d.join(file));
    let o = goldgate_in(d, &run_args("out1", &["--json", "same.json", "demo/same"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows = verdicts("same.json");
    for metric in [
        "generated_tokens",
        "logprobs",
        "generated_text",
        "throughput",
    ] {
        assert!(
            rows.contains(&(metric.to_owned(), "pass".to_owned())),
            "{metric}: {rows:?}"
        );
    }
    let o = goldgate_in(
        d,
        &run_args("out2", &["--json", "other.json", "demo/other"]),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let rows = verdicts("other.json");
    assert!(
        rows.contains(&("generated_tokens".to_owned(), "regression".to_owned())),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("logprobs".to_owned(), "pass".to_owned())),
        "{rows:?}"
    );
    assert!(
        text(&o).contains("request 1: tokens differ"),
        "{}",
        text(&o)
    );
    let o = goldgate_in(
        d,
        &run_args("out3", &["--json", "silent.json", "demo/silent"]),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let rows = verdicts("silent.json");
    assert!(
        rows.contains(&("generated_tokens".to_owned(), "missing-metric".to_owned())),
        "{rows:?}"
    );
}

/// The lines of a run's output that say how each job ended and what the gate made of it, with
/// the test's folder, the searched `PATH`, the run id and the times redacted.
fn verdict_lines(o: &Output, tmp: &Path) -> String {
    let all = common::redact::redact(&text(o), &[tmp]);
    let all = regex::Regex::new(r"the job's PATH \(\d+ folders\)")
        .unwrap()
        .replace_all(&all, "the job's PATH");
    let all = regex::Regex::new(r"(?m)^(FAIL|PASS|DONE) \[[^\]]*\]")
        .unwrap()
        .replace_all(&all, "$1 [T]");
    let all = regex::Regex::new(r"\(looked in [^)]*\)")
        .unwrap()
        .replace_all(&all, "(looked in [PATH])");
    let all = regex::Regex::new(r"in \d+\.\d+ s")
        .unwrap()
        .replace_all(&all, "in [T] s");
    let all = regex::Regex::new(r"\d{8}-\d{6}-[0-9a-f]{4}")
        .unwrap()
        .replace_all(&all, "[RUN]");
    all.lines()
        .filter(|l| {
            l.contains("FAIL")
                || l.contains("xpass")
                || l.contains("launch error")
                || l.contains("timed out")
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A case that expects its training to fail (`TEST_EVALUATION: xpass`) is
/// not "failed as expected" when goldgate could not start it, or stopped it at its timeout:
/// exit 3, alone and inside a run of several jobs.
#[test]
fn xpass_never_passes_a_launch_error_or_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = regular_case("TEST_EVALUATION: xpass\n").replace(
        "entry: [goldgate, fake-trainer]",
        "entry: [no-such-trainer-4f2a]",
    );
    write(
        &d.join("cases/demo/xpass-missing/model_config.yaml"),
        &missing,
    );
    let o = goldgate_in(d, &run_args("out", &["demo/xpass-missing"]));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(!text(&o).contains("as expected"), "{}", text(&o));
    insta::assert_snapshot!("xpass_launch_error", verdict_lines(&o, d));
    let o = goldgate_in(
        d,
        &run_args("out-nc", &["--no-compare", "demo/xpass-missing"]),
    );
    assert_eq!(o.status.code(), Some(3), "--no-compare: {}", text(&o));

    let slow = regular_case("TEST_EVALUATION: xpass\n")
        .replace("  --step-ms: 2\n", "  --step-ms: 60000\n")
        .replace("  nproc: 1\n", "  nproc: 1\n  timeout: 1s\n");
    write(&d.join("cases/demo/xpass-slow/model_config.yaml"), &slow);
    let skip = regular_case("ENV_VARS:\n  SKIP_PYTEST: 1\n");
    write(&d.join("cases/demo/skip/model_config.yaml"), &skip);
    let crash = regular_case("TEST_EVALUATION: xpass\n")
        .replace("  --step-ms: 2\n", "  --step-ms: 2\n  --crash-at-step: 3\n");
    write(&d.join("cases/demo/xpass-crash/model_config.yaml"), &crash);
    let cases = [
        "demo/xpass-missing",
        "demo/xpass-slow",
        "demo/xpass-crash",
        "demo/skip",
    ];
    let mut args = run_args("out2", &["--grace", "1s"]);
    args.extend(cases);
    let o = goldgate_in(d, &args);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("demo/xpass-crash (default): training failed (exit"),
        "{out}"
    );
    assert!(
        !out.contains("xpass-missing (default): training launch"),
        "{out}"
    );
    insta::assert_snapshot!("xpass_in_a_run_of_several", verdict_lines(&o, d));
}
