//! Stage "run", Slurm executor: what a run left in Slurm's queue — this user's jobs whose
//! `--comment` names the run (every batch job goldgate submits carries it) — found and
//! cancelled. `goldgate cancel` calls it, and so does `goldgate run` on a results folder
//! whose last run died (`--rerun-failed` included), before it submits anything new behind the
//! orphans. The job ids a `run.json` records are not trusted on their own: a job is the run's
//! only when Slurm says it is the user's and carries the run's comment. Then, once no goldgate
//! may be running the run (`run::leftovers::still_running`), what the run's jobs left in their
//! folders is settled (`raw`: Slurm's raw output, and per-rank logs through `run::leftovers`):
//! a goldgate killed mid-job never did. A local run's jobs leave no queue, only per-rank logs:
//! `run::leftovers::settle_left` settles those for the next local run.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use super::command::{SlurmError, own_jobs, scancel_all};
use super::executor::run_comment;
use super::raw::Leftovers;
use super::state::{Phase, phase};
use crate::run::leftovers::still_running;
use goldgate_schema::RunIndex;

/// This user's jobs of the run still pending or running in Slurm's queue, in id order.
pub fn left_in_queue(index: &RunIndex) -> Result<Vec<u64>, SlurmError> {
    let comment = run_comment(&index.run_id);
    let mut live = BTreeSet::new();
    own_jobs(&mut |id, state, c| {
        if c == comment && phase(state) != Phase::Ended {
            live.insert(id);
        }
    })?;
    Ok(live.into_iter().collect())
}

/// What cleaning up after a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanedUp {
    /// The jobs it cancelled, in id order (empty: nothing was left in the queue).
    pub cancelled: Vec<u64>,
    /// What it could not settle of what the run's jobs left in their folders, or settled only
    /// in part (output left out for want of a secret).
    pub warnings: Vec<String>,
}

/// Cancels the run's jobs still in the queue and, once no goldgate may be running the run,
/// settles what its jobs left in their folders (under `run_dir`, the run's folder) — Slurm's
/// raw output and per-rank logs that a goldgate killed mid-job never masked — after waiting
/// (up to [`LEAVE_WAIT`]) for the cancelled jobs to leave the queue, so that their last lines
/// are settled too. A run whose goldgate may still run it (`cancel --force`) settles its own:
/// two runs into one folder never mask each other's live files.
pub fn cancel_left(run_dir: &Path, index: &RunIndex) -> Result<CleanedUp, SlurmError> {
    let on_slurm = index.jobs.iter().any(|j| !j.scheduler_job_ids.is_empty());
    let ids = match left_in_queue(index) {
        // A local run on a host without Slurm left nothing in a queue, only its jobs' folders.
        Err(SlurmError::Spawn { source, .. })
            if !on_slurm && source.kind() == std::io::ErrorKind::NotFound =>
        {
            Vec::new()
        }
        ids => ids?,
    };
    scancel_all(&ids)?;
    if still_running(index).is_some() {
        return Ok(CleanedUp {
            cancelled: ids,
            warnings: Vec::new(),
        });
    }
    if !ids.is_empty() && Leftovers::find(run_dir, index).has_raw() {
        wait_until_gone(index, &ids);
    }
    let warnings = Leftovers::find(run_dir, index).settle(run_dir, index.keep_raw_log);
    Ok(CleanedUp {
        cancelled: ids,
        warnings,
    })
}

/// How long cleaning up waits for cancelled jobs to leave the queue (Slurm's `KillWait`
/// between its TERM and KILL is 30 s by default).
const LEAVE_WAIT: Duration = Duration::from_secs(60);

/// Waits until none of `ids` is in the queue any more, [`LEAVE_WAIT`] at most; a queue that
/// cannot be read ends the wait (what is there is settled).
fn wait_until_gone(index: &RunIndex, ids: &[u64]) {
    let deadline = Instant::now() + LEAVE_WAIT;
    while Instant::now() < deadline {
        match left_in_queue(index) {
            Ok(left) if left.iter().any(|id| ids.contains(id)) => {}
            _ => return,
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
