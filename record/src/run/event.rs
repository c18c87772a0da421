//! Stage "run": the events of a run. The scheduler emits [`RunEvent`]s, one at a time and in
//! the order they happened, to whatever consumes them (the progress reporter, the results
//! writer); an executor reports [`ExecEvent`]s of the attempt it runs, which the scheduler
//! forwards inside [`RunEvent::Exec`].

use crate::plan::Job;
use goldgate_schema::{Attempt, RunRecord};

/// What an executor reports while one attempt of one job runs.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecEvent {
    /// A batch scheduler accepted the attempt as its job `id` (Slurm's job id): recorded in
    /// `run.json` at once, so that what a run left in the queue can be found and cancelled.
    Submitted { id: u64 },
    /// The attempt waits in the batch scheduler's queue for `reason` (Slurm's pending reason:
    /// `Priority`, `Resources`, `PartitionDown`, ...); said when the reason changes.
    Pending { reason: String },
    /// Run `run` (1-based; ckpt-resume jobs have two) started: its processes exist.
    RunStarted { run: usize },
    /// The log printed iteration `step` of `of`, which took `iteration_ms` (its `elapsed time
    /// per iteration (ms)` field, when the line has one).
    Step {
        step: u64,
        of: Option<u64>,
        iteration_ms: Option<f64>,
    },
    /// The log says a checkpoint save began at `iteration`.
    CheckpointSave { iteration: u64 },
    /// The batch scheduler's controller stopped answering (`error`: the failed call's own
    /// words); the jobs are followed on its last answer and given up after `limit` of
    /// silence. Said once per outage, whichever job's worker noticed it.
    ControllerSilent {
        error: String,
        limit: std::time::Duration,
    },
    /// The controller answers again, `after` its first unanswered call began.
    ControllerAnswers { after: std::time::Duration },
}

/// What happens during a run, in order. `index` is the job's place in the plan.
#[derive(Clone, Debug)]
pub enum RunEvent<'a> {
    /// The run begins with these jobs (nothing has started yet).
    RunStarted { run_id: &'a str, jobs: &'a [Job] },
    /// A worker took the job; its first attempt starts now.
    JobStarted { index: usize, job: &'a Job },
    /// Something happened inside the job's current attempt.
    Exec {
        index: usize,
        job: &'a Job,
        event: ExecEvent,
    },
    /// An attempt ended; `retrying` when `--retries` runs the job again.
    AttemptFinished {
        index: usize,
        job: &'a Job,
        attempt: &'a Attempt,
        retrying: bool,
    },
    /// The job's last attempt ended and its record is built.
    JobFinished {
        index: usize,
        job: &'a Job,
        record: &'a RunRecord,
    },
    /// Every job ended, or the run was interrupted (jobs not started never will be).
    RunFinished { interrupted: bool },
}
