//! Stage "observe", the probe's tests against a real PyTorch: `dcp_async_save.py` (beside this
//! file) saves with `torch.distributed.checkpoint` on CPU under the embedded `sitecustomize.py`,
//! read back by [`super::read`]. PyTorch is several GB: `.ci/run` installs it (torch 2.11, the
//! device's version) and sets `GOLDGATE_TORCH_PYTHON`, which makes these tests required (they
//! fail where that interpreter lacks it). Elsewhere they run where `python3` has PyTorch and
//! print one `skipped:` line where it does not (`goldgate_core::fixtures::prereq::missing_unless`).
//! The device script
//! `docs/archive/probe-dcp-process/check.sh` runs the same workload on the H200's PyTorch.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::Command;

use super::install::{ProbeMode, install};
use super::read::read;

/// The variable naming a Python that has PyTorch (its presence makes PyTorch required).
const TORCH_PYTHON: &str = "GOLDGATE_TORCH_PYTHON";

/// What the workload needs: the process-based async executor, and numpy (DCP's writer uses it).
const NEEDS: &str = "import numpy, torch.distributed.checkpoint._async_process_executor";

/// A Python with PyTorch: `$GOLDGATE_TORCH_PYTHON`, else `python3` if it has it.
fn torch_python() -> Option<String> {
    let python = std::env::var(TORCH_PYTHON).unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", NEEDS])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    goldgate_core::fixtures::prereq::missing_unless(
        TORCH_PYTHON,
        &format!(
            "`{python}` has no PyTorch with torch.distributed.checkpoint's process-based \
             async_save and numpy (set {TORCH_PYTHON} to a Python that has them)"
        ),
    );
    None
}

/// Runs the workload in `job` under the probe with `MODE=mode`; panics with its stderr if it
/// fails.
fn run_workload(python: &str, job: &Path, mode: &str) {
    let env = install(
        job,
        ProbeMode {
            torch: true,
            history: false,
        },
        0.05,
        None,
    )
    .unwrap();
    let workload =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/observe/probe/dcp_async_save.py");
    let out = Command::new(python)
        .arg(workload)
        .arg(job)
        .envs(env)
        .env("RANK", "0")
        .env("MODE", mode)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// DCP's async saves hand their writes on: to a writer thread (`THREAD`), or to a persistent
/// background process that DCP spawns at the first save and sends each save's staged state dict
/// (`PROCESS`), which writes after the save's window has closed. Each save still counts the
/// bytes of its own folder (the shard and `.metadata`), and not the 300,000 bytes the training
/// process wrote while it was in flight; the blocking save counts its own too.
#[test]
fn a_dcp_async_save_counts_what_its_writer_thread_or_background_process_wrote() {
    let Some(python) = torch_python() else {
        return;
    };
    for mode in ["THREAD", "PROCESS"] {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("job");
        run_workload(&python, &job, mode);
        let summary = read(&job).expect("probe files");
        assert!(
            summary.warnings.is_empty(),
            "{mode}: {:?}",
            summary.warnings
        );
        let folders = crate::observe::ckpt_folders::folder_sizes(&job.join("ckpt"));
        assert_eq!(folders.len(), 3, "{mode}: {folders:?}");
        assert!(folders.values().all(|b| *b > 1_000_000), "{folders:?}");
        let rank = summary
            .ranks
            .iter()
            .find(|r| r.saves.iter().any(|w| w.counters.is_some()))
            .expect("the training process's file");
        let windows: Vec<_> = rank.saves.iter().filter(|w| w.counters.is_some()).collect();
        let functions: Vec<_> = windows.iter().map(|w| w.function.as_str()).collect();
        assert_eq!(
            functions,
            [
                "torch.distributed.checkpoint.async_save",
                "torch.distributed.checkpoint.async_save",
                "torch.distributed.checkpoint.save"
            ],
            "{mode}"
        );
        // The windows in order are the saves at 3, 6 and 9. Beyond its folder a save counts
        // only the handoff its own threads wrote (in PROCESS, the request on the pipe and the
        // background process's spawn at the first save).
        for (w, (iteration, folder)) in windows.iter().zip(&folders) {
            let c = w.counters.as_ref().unwrap();
            let written = c.wchar.unwrap();
            assert!(
                (*folder..folder + 4096).contains(&written),
                "{mode}, save {iteration}: {written} B counted, its folder has {folder}"
            );
            let parts = match (w.function.ends_with("async_save"), mode) {
                (false, _) => None,
                (true, "THREAD") => Some(1),
                (true, _) => Some(2), // the pool thread's part and the background process's
            };
            assert_eq!(c.async_parts, parts, "{mode}, save {iteration}");
        }
    }
}
