//! Megatron's test types end to end with the fake trainer: what each runs, what it compares,
//! and that dropping the semantics fails these tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

mod common;

use common::cli::{self, text};
use common::results::records;

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

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `goldgate ARGS` in `dir` (the fake trainer is goldgate's hidden subcommand, found on PATH).
fn goldgate(dir: &Path, args: &[&str]) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_goldgate"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cli::goldgate()
        .current_dir(dir)
        .args(args)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap()
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
    write(
        &d.join("cases/demo/resume/model_config.yaml"),
        &resume_case(""),
    );
    let o = goldgate(d, &run_args("out1", &["--no-compare", "demo/resume"]));
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

    let o = goldgate(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate(
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
    let o = goldgate(d, &run_args("out1", &["--no-compare", "demo/drift"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = goldgate(d, &run_args("out2", &["--json", "gate.json", "demo/drift"]));
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
