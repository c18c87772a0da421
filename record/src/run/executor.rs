//! Stage "run": the executor seam. The scheduler asks an [`Executor`] to run one attempt of one
//! job from one of its `--jobs N` worker threads and blocks until the attempt ends; what the
//! attempt did comes back as an [`AttemptOutput`]. The local process-group executor
//! (`run::local`) is one implementation; a batch-scheduler executor (Slurm) is another: it may
//! batch its queue polls across the worker threads internally, report per-node samples, and
//! report time spent pending in the queue apart from the running time.

use std::path::PathBuf;
use std::time::Duration;

use super::event::ExecEvent;
use crate::launch::{FailureSigns, StopFlag};
use crate::metrics::Observed;
use crate::plan::Job;
use goldgate_schema::Outcome;

/// Why an executor will not run a job (said before any job starts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong, as a lowercase fragment (`needs 2 nodes; this executor runs on one`).
    pub reason: String,
    /// What to do instead (`use the slurm executor: --executor slurm`).
    pub hint: Option<String>,
}

/// One attempt to run.
#[derive(Clone, Copy, Debug)]
pub struct AttemptContext<'a> {
    pub job: &'a Job,
    /// 1-based attempt number (`--retries` makes more than one).
    pub number: u32,
    /// The worker running it, `0..workers`: the local executor gives each worker its own slice
    /// of GPUs.
    pub worker: usize,
    /// Set on Ctrl-C / SIGTERM: stop the attempt (TERM, grace, KILL) and return
    /// [`Outcome::Interrupted`].
    pub stop: &'a StopFlag,
}

/// What one attempt did.
#[derive(Clone, Debug)]
pub struct AttemptOutput {
    /// How it ended (`TimedOut` carries the timeout in seconds).
    pub outcome: Outcome,
    /// Failure markers the log showed; the scheduler retries only flaky failures.
    pub signs: FailureSigns,
    /// The log line that explains a failure, when one matched.
    pub failure_line: Option<String>,
    /// The last lines of the log of a failed attempt (empty for a passed one).
    pub log_tail: Vec<String>,
    /// The console log of the attempt's last run (empty when nothing ran).
    pub log: PathBuf,
    /// Running time of the attempt's last run, queue time excluded.
    pub wall: Duration,
    /// Time spent pending in a batch scheduler's queue; `None` for executors without a queue.
    /// Never counted against the timeout.
    pub queued: Option<Duration>,
    /// Where rank 0 ran.
    pub host: String,
    /// The log summary and per-node samples of the last run; `None` when nothing ran.
    pub observed: Option<Observed>,
}

/// Makes every folder of the job (its own, checkpoints, logs, ...) before an attempt; the
/// message names the folder that could not be made.
pub(crate) fn create_job_dirs(job: &Job) -> Result<(), String> {
    for dir in job.dirs.all() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    Ok(())
}

impl AttemptOutput {
    /// An attempt that could not start (program not found, folder not writable, ...).
    pub fn launch_error(message: String, host: String) -> AttemptOutput {
        AttemptOutput {
            outcome: Outcome::LaunchError {
                message: message.clone(),
            },
            signs: FailureSigns::NONE,
            failure_line: Some(message),
            log_tail: Vec::new(),
            log: PathBuf::new(),
            wall: Duration::ZERO,
            queued: None,
            host,
            observed: None,
        }
    }
}

/// Runs attempts of planned jobs somewhere: local process groups, a Slurm cluster, ...
///
/// Called from several worker threads at once (hence `Sync`). Each job's runs
/// (`job.runs`, with the actions planned before each) are carried out in order within one
/// attempt, stopping at the first run that fails.
pub trait Executor: Sync {
    /// Its name in messages (`local`, `slurm`).
    fn name(&self) -> &'static str;

    /// Refuses a job this executor cannot run, before any job of the run starts.
    fn admit(&self, job: &Job) -> Result<(), Refusal> {
        let _ = job;
        Ok(())
    }

    /// A line about the executor's own costs once the run ended (the Slurm executor: its
    /// scheduler calls), or `None`.
    fn finish_note(&self) -> Option<String> {
        None
    }

    /// Runs one attempt of `ctx.job`, reporting progress through `on_event`, and blocks until
    /// it ended. Infrastructure errors become [`AttemptOutput::launch_error`], never a panic.
    fn attempt(
        &self,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> AttemptOutput;
}
