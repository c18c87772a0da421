//! Stage "run", Slurm executor: what a run left in Slurm's queue — this user's jobs whose
//! `--comment` names the run (every batch job goldgate submits carries it) — found and
//! cancelled. `goldgate cancel` calls it, and so does `goldgate run` on a results folder
//! whose last run died (`--rerun-failed` included), before it submits anything new behind the
//! orphans. The job ids a `run.json` records are not trusted on their own: a job is the run's
//! only when Slurm says it is the user's and carries the run's comment. Then what the run's
//! jobs left in their folders is settled (`raw`): a goldgate killed mid-job never did. A local
//! run's jobs leave no queue, only per-rank logs; [`settle_left`] settles those, the same way,
//! for the next local run.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use super::command::{SlurmError, own_jobs, scancel_all};
use super::executor::run_comment;
use super::raw::Leftovers;
use super::state::{Phase, phase};
use goldgate_schema::RunIndex;

/// Whether the goldgate process that ran `index` is known to be gone while the run never
/// finished: recorded on this host, and its process no longer exists. A run of another host,
/// or one that recorded no process, is not known to have died.
pub fn died(index: &RunIndex) -> bool {
    let Some(runner) = index
        .runner
        .as_ref()
        .filter(|_| index.finished_at.is_none())
    else {
        return false;
    };
    runner.host == crate::run::provenance::hostname()
        && runner.pid != std::process::id()
        && !std::path::Path::new(&format!("/proc/{}", runner.pid)).exists()
}

/// Why the run's goldgate may still be running it, or `None` when it finished or is known to
/// have died.
pub fn still_running(index: &RunIndex) -> Option<String> {
    if index.finished_at.is_some() || died(index) {
        return None;
    }
    Some(match &index.runner {
        Some(r) if r.host == crate::run::provenance::hostname() => {
            format!("its goldgate (pid {}) is still running", r.pid)
        }
        Some(r) => format!(
            "it never finished, and its goldgate ran on {} (pid {}), where this cannot look",
            r.host, r.pid
        ),
        None => "it never finished, and it records no goldgate process".to_owned(),
    })
}

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
/// are settled too. A run whose goldgate may still run it (`cancel --force`) settles its own.
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
    let warnings = settle_left(run_dir, index);
    Ok(CleanedUp {
        cancelled: ids,
        warnings,
    })
}

/// Settles what the jobs of `index` (its folder `run_dir`) left in their folders — per-rank
/// logs a goldgate killed mid-job never masked, Slurm's raw output — once no goldgate may be
/// running the run (a live run's goldgate settles its own: two runs into one folder never mask
/// each other's live files). Slurm's jobs are out of the queue first ([`cancel_left`]). Returns
/// a line for each thing it could not settle, or settled only in part.
pub fn settle_left(run_dir: &Path, index: &RunIndex) -> Vec<String> {
    if still_running(index).is_some() {
        return Vec::new();
    }
    Leftovers::find(run_dir, index).settle(run_dir, index.keep_raw_log)
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
