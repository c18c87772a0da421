//! Stage "run": [`RunOptions`], the validated form of `goldgate run`'s flags (ripgrep's
//! low-args → high-args split: `cmd::run` parses, this type is what the stage trusts).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::observe::probe::install::ProbeMode;

/// How a run runs its jobs. Built once from the command line, then read by the scheduler,
/// the executors and the results writer.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `YYYYMMDD-HHMMSS-xxxx` ([`new_run_id`]).
    pub run_id: String,
    /// `--out`, absolute: results go to `OUT/<run-id>/...`.
    pub out_dir: PathBuf,
    /// goldgate's working directory (where relative entry paths point).
    pub base_dir: PathBuf,
    /// `--jobs`: attempts running at once (at least 1).
    pub workers: u32,
    /// `--retries`: extra attempts for a job whose failure matched a flaky marker.
    pub retries: u32,
    /// `--timeout`: running time allowed per run (queue time not included).
    pub timeout: Option<Duration>,
    /// `--grace`: SIGTERM → SIGKILL.
    pub grace: Duration,
    /// `--pending-limit`: time a batch job may wait in the queue (the Slurm executor; the
    /// platform's `slurm.pending_limit` when `None`).
    pub pending_limit: Option<Duration>,
    /// `--sample-interval` of the memory samplers.
    pub sample_interval: Duration,
    /// `--probe` for Python jobs.
    pub probe: ProbeMode,
    /// `--keep-checkpoints`.
    pub keep_checkpoints: bool,
    /// `--settle`: `sync` or `drop-caches` before each job (checked before the first).
    pub settle: crate::launch::Settle,
    /// Run each case's `BEFORE_SCRIPT` and `AFTER_SCRIPT` around its runs (`--no-scripts`: no).
    pub scripts: bool,
    /// `--no-capture`: each job's output also goes to goldgate's stderr as it arrives (the
    /// command line forces one worker with it).
    pub no_capture: bool,
    /// `--keep-raw-log`: also keep each job's output unredacted (`console.raw.log`) beside
    /// the redacted log goldgate keeps.
    pub keep_raw_log: bool,
    /// `--tensorboard`: read each run's TensorBoard folder (`TENSORBOARD_PATH`) into its metrics.
    pub tensorboard: bool,
}

impl RunOptions {
    /// `OUT/<run-id>`.
    pub fn run_dir(&self) -> PathBuf {
        self.out_dir.join(&self.run_id)
    }

    /// The number of workers for `jobs` jobs: never more workers than jobs, at least one.
    pub fn workers_for(&self, jobs: usize) -> usize {
        (self.workers.max(1) as usize).min(jobs.max(1))
    }

    /// Options for tests and tools: one worker, no retries, no timeout, no probe.
    pub fn new(run_id: &str, out_dir: &Path, base_dir: &Path) -> RunOptions {
        RunOptions {
            run_id: run_id.to_owned(),
            out_dir: out_dir.to_path_buf(),
            base_dir: base_dir.to_path_buf(),
            workers: 1,
            retries: 0,
            timeout: None,
            grace: crate::launch::DEFAULT_GRACE,
            pending_limit: None,
            sample_interval: crate::observe::sample::DEFAULT_INTERVAL,
            probe: ProbeMode::default(),
            keep_checkpoints: false,
            settle: crate::launch::Settle::None,
            scripts: true,
            no_capture: false,
            keep_raw_log: false,
            tensorboard: false,
        }
    }
}

/// `YYYYMMDD-HHMMSS-xxxx` (UTC): sortable, and unique enough for runs started the same second.
pub fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let salt = (now.subsec_nanosecond() as u32 ^ std::process::id()) & 0xffff;
    format!("{}-{salt:04x}", now.strftime("%Y%m%d-%H%M%S"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_time() {
        let id = new_run_id();
        assert_eq!(id.len(), "20261130-062900-abcd".len(), "{id}");
    }

    #[test]
    fn never_more_workers_than_jobs() {
        let mut o = RunOptions::new("r", Path::new("/o"), Path::new("/b"));
        o.workers = 4;
        assert_eq!(o.workers_for(2), 2);
        assert_eq!(o.workers_for(9), 4);
        o.workers = 0;
        assert_eq!(o.workers_for(3), 1);
        assert_eq!(o.run_dir(), Path::new("/o/r"));
    }
}
