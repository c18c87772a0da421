//! `goldgate bless --tensorboard` against Megatron-LM's own
//! `tests/functional_tests/python_test_utils/get_test_results_from_tensorboard_logs.py`: for the
//! same event files the two golden files must be byte-identical. The event files are the
//! committed fixtures (core/tests/fixtures/tensorboard, written by TensorBoard's own writer
//! through `make_events.py`) and a fresh set `make_events.py` writes here. Needs python3 with
//! `tensorboard`, `click`, `pydantic` and `numpy` and the Megatron-LM corpus; without them it
//! prints `skipped:`, except under `CI=true`, where a missing Python module fails it (`.ci/run`
//! installs tensorboard).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::common;

use common::cli;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures/tensorboard")
}

/// `python3` when it imports what Megatron's script needs; `None` after a skip line.
fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .args(["-c", "import tensorboard, click, pydantic, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some("python3");
    }
    goldgate_core::fixtures::prereq::missing(
        "python3 with tensorboard, click, pydantic and numpy not found (.ci/run installs them)",
    );
    None
}

/// Copies a fixture folder, its files' modification times in name order (a checkout gives
/// them all one time; both readers order a folder's files by it).
fn copy_ordered(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, name) in names.iter().enumerate() {
        let dest = to.join(name);
        std::fs::copy(from.join(name), &dest).unwrap();
        let f = std::fs::File::options().write(true).open(&dest).unwrap();
        f.set_modified(t0 + Duration::from_secs(i as u64 * 10))
            .unwrap();
    }
}

fn megatron(py: &str, corpus: &Path, dir: &Path, args: &[String], out: &Path) -> Vec<u8> {
    let o = Command::new(py)
        .current_dir(corpus)
        .args([
            "-m",
            "tests.functional_tests.python_test_utils.get_test_results_from_tensorboard_logs",
        ])
        .arg("--logs-dir")
        .arg(dir)
        .args(args)
        .arg("--output-path")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "Megatron's script failed: {}",
        cli::text(&o)
    );
    std::fs::read(out).unwrap()
}

fn goldgate(dir: &Path, args: &[String], out: &Path) -> Vec<u8> {
    let o = cli::goldgate()
        .args(["bless", "--tensorboard"])
        .arg(dir)
        .args(args)
        .arg("--output")
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(cli::code(&o), 0, "{}", cli::text(&o));
    std::fs::read(out).unwrap()
}

/// Both writers on every folder under `root`, with several option sets.
fn compare_all(py: &str, corpus: &Path, root: &Path, work: &Path) -> usize {
    let option_sets: [&[&str]; 4] = [
        &["--train-iters", "50"],
        &["--train-iters", "50", "--is-convergence-test"],
        &["--train-iters", "23", "--step-size", "3"],
        &[
            "--train-iters",
            "100",
            "--step-size",
            "1",
            "--is-convergence-test",
        ],
    ];
    let mut compared = 0;
    for folder in ["gpt", "resume", "tensor"] {
        let dir = work.join(folder);
        copy_ordered(&root.join(folder), &dir);
        for (i, set) in option_sets.iter().enumerate() {
            let m_args: Vec<String> = set.iter().map(|s| (*s).to_owned()).collect();
            let g_args: Vec<String> = m_args
                .iter()
                .map(|a| {
                    if a == "--is-convergence-test" {
                        "--convergence".to_owned()
                    } else {
                        a.clone()
                    }
                })
                .collect();
            let theirs = megatron(
                py,
                corpus,
                &dir,
                &m_args,
                &work.join(format!("{folder}-{i}-m.json")),
            );
            let ours = goldgate(&dir, &g_args, &work.join(format!("{folder}-{i}-g.json")));
            assert!(
                ours == theirs,
                "{folder} {set:?}: goldgate's golden differs from Megatron's\n--- goldgate\n{}\n--- megatron\n{}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn bless_from_tensorboard_is_byte_identical_to_megatrons_script() {
    let Some(py) = python() else { return };
    let Some(corpus) = goldgate_core::fixtures::corpus::megatron_corpus() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    assert_eq!(
        compare_all(py, &corpus, &fixtures(), &work.path().join("committed")),
        12
    );
    // A fresh set from TensorBoard's writer: the comparison does not hang on the fixtures.
    let fresh = work.path().join("fresh-events");
    let o = Command::new(py)
        .arg(fixtures().join("make_events.py"))
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", cli::text(&o));
    assert_eq!(
        compare_all(py, &corpus, &fresh, &work.path().join("fresh")),
        12
    );
}

/// A damaged file is an error (exit 2) naming the file and the record's offset.
#[test]
fn a_cut_event_file_is_an_error_with_its_offset() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("tb");
    copy_ordered(&fixtures().join("gpt"), &dir);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..1000]).unwrap();
    let o = cli::goldgate()
        .current_dir(work.path())
        .args([
            "bless",
            "--tensorboard",
            "tb",
            "--train-iters",
            "50",
            "--output",
            "g.json",
        ])
        .output()
        .unwrap();
    assert_eq!(cli::code(&o), 2);
    let name = file.file_name().unwrap().to_str().unwrap();
    insta::assert_snapshot!(cli::text(&o).replace(name, "[event file]"));
    assert!(!work.path().join("g.json").exists());
}
