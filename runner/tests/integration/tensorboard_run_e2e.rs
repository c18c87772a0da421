//! `goldgate run --tensorboard` end to end with the fake trainer writing TensorBoard event files
//! (`--tensorboard-dir ${TENSORBOARD_PATH}`, its own writer): a ckpt-resume case whose two runs'
//! folders reach results.json, the log and TensorBoard agreeing where both have a metric; a case
//! gated on `mem-allocated-bytes`, which only TensorBoard has per step; and, with python's
//! tensorboard, Megatron's golden script on the job's own event files giving the bytes
//! `bless --tensorboard` gives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use crate::common;

use common::cli::{goldgate_in, text, write};
use common::results::records;

fn case(test_type: &str, extra: &str) -> String {
    format!(
        "TEST_TYPE: {test_type}
LAUNCHER: direct
MODEL_ARGS:
  --train-iters: 20
  --save: ${{CHECKPOINT_SAVE_PATH}}
  --load: ${{CHECKPOINT_LOAD_PATH}}
  --save-interval: 10
  --log-interval: 1
  --tensorboard-dir: ${{TENSORBOARD_PATH}}
  --log-memory-to-tensorboard: true
  --step-ms: 2
  --ckpt-mb: 2
{extra}METRICS: [\"lm loss\", \"num-zeros\", \"mem-allocated-bytes\"]
GOLDGATE:
  entry: [goldgate, fake-trainer]
  nproc: 1
"
    )
}

#[test]
fn resume_case_records_both_runs_tensorboard_folders() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        &d.join("cases/demo/resume/model_config.yaml"),
        &case("ckpt-resume", "  --model-mb: 4\n"),
    );
    let o = goldgate_in(
        d,
        &[
            "run",
            "--root",
            "cases",
            "--out",
            "out",
            "--no-compare",
            "--tensorboard",
            "demo/resume",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = &records(&d.join("out"))[0];
    let tb = r.tensorboard.as_ref().expect("run 1's folder is recorded");
    assert_eq!(
        (tb.dir.as_str(), tb.files.len(), &tb.error),
        ("tensorboard/run_1", 1, &None)
    );
    for m in [
        "lm loss",
        "num-zeros",
        "iteration-time",
        "mem-allocated-bytes",
        "mem-reserved-bytes",
    ] {
        assert!(tb.metrics.iter().any(|n| n == m), "{m}: {:?}", tb.metrics);
    }
    // The log prints loss to 7 digits, memory to 0.01 MB, time to 0.1 ms: no disagreement.
    assert!(tb.disagreements.is_empty(), "{:?}", tb.disagreements);
    assert!(
        r.warnings.iter().all(|w| !w.contains("TensorBoard")),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.metrics["mem-allocated-bytes"].0.len(), 20);
    assert!(!r.metrics.contains_key("lm loss vs samples"));
    let resumed = r.resumed.as_ref().unwrap();
    let tb2 = resumed
        .tensorboard
        .as_ref()
        .expect("run 2's folder is recorded");
    assert_eq!(tb2.dir, "tensorboard/run_2");
    let steps: Vec<u64> = resumed.metrics["mem-allocated-bytes"]
        .0
        .keys()
        .copied()
        .collect();
    assert_eq!(steps, (11..=20).collect::<Vec<_>>());
    // Megatron's golden script on run 1's own event files (goldgate's fake-trainer writer).
    let job = d.join("out").join(&r.run_id).join(r.rel_dir());
    megatron_matches_bless(&job.join("tensorboard/run_1"), d);
}

/// Without `--tensorboard` nothing is read; the same case gated on `mem-allocated-bytes` (which
/// the log prints only once, TensorBoard every step) passes against its own golden and fails
/// when the model grows.
#[test]
fn a_gate_on_tensorboard_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("goldgate.yaml"), &common::gate::untimed_config());
    let config = d.join("cases/demo/mem/model_config.yaml");
    write(&config, &case("regular", "  --model-mb: 8\n"));
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--root",
            "cases",
            "--out",
            out,
            "--golden-root",
            "golden",
            "--tensorboard",
        ];
        args.extend_from_slice(extra);
        args.push("demo/mem");
        goldgate_in(d, &args)
    };
    let o = run("out1", &["--no-compare"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = &records(&d.join("out1"))[0];
    assert_eq!(r.metrics["mem-allocated-bytes"].0.len(), 20);
    let o = goldgate_in(d, &["bless", "--from", "out1", "--golden-root", "golden"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run("out2", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    write(&config, &case("regular", "  --model-mb: 16\n"));
    let o = run("out3", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("mem-allocated-bytes"), "{}", text(&o));
    let o = goldgate_in(
        d,
        &[
            "run",
            "--root",
            "cases",
            "--out",
            "out4",
            "--no-compare",
            "demo/mem",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = &records(&d.join("out4"))[0];
    assert!(r.tensorboard.is_none());
}

/// `bless --tensorboard` and Megatron's script on `tb` give the same bytes (python's
/// tensorboard and the corpus needed; under CI=true a missing module fails).
fn megatron_matches_bless(tb: &Path, work: &Path) {
    let ok = Command::new("python3")
        .args(["-c", "import tensorboard, click, pydantic, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        goldgate_core::fixtures::prereq::missing(
            "Megatron's script: no python3 with tensorboard, click, pydantic and numpy (.ci/run \
             installs them)",
        );
        return;
    }
    let Some(corpus) = goldgate_core::fixtures::corpus::megatron_corpus() else {
        return;
    };
    let theirs = work.join("megatron.json");
    let o = Command::new("python3")
        .current_dir(&corpus)
        .args([
            "-m",
            "tests.functional_tests.python_test_utils.get_test_results_from_tensorboard_logs",
            "--train-iters",
            "20",
            "--logs-dir",
        ])
        .arg(tb)
        .arg("--output-path")
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let ours = work.join("goldgate.json");
    let o = goldgate_in(
        work,
        &[
            "bless",
            "--tensorboard",
            tb.to_str().unwrap(),
            "--train-iters",
            "20",
            "--output",
            ours.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (a, b) = (
        std::fs::read_to_string(ours).unwrap(),
        std::fs::read_to_string(theirs).unwrap(),
    );
    assert_eq!(a, b);
    assert!(a.contains("\"mem-allocated-bytes\""), "{a}");
}
