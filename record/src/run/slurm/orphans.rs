//! Stage "run", Slurm executor: what a run left in Slurm's queue — this user's jobs whose
//! `--comment` names the run (every batch job goldgate submits carries it) — found and
//! cancelled. `goldgate cancel` calls it, and so does `goldgate run` on a results folder
//! whose last run died (`--rerun-failed` included), before it submits anything new behind the
//! orphans. The job ids a `run.json` records are not trusted on their own: a job is the run's
//! only when Slurm says it is the user's and carries the run's comment.

use std::collections::BTreeSet;

use super::command::{SlurmError, own_jobs, scancel_all};
use super::executor::run_comment;
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

/// Cancels the run's jobs still in the queue; returns their ids (empty: nothing was left).
pub fn cancel_left(index: &RunIndex) -> Result<Vec<u64>, SlurmError> {
    let ids = left_in_queue(index)?;
    scancel_all(&ids)?;
    Ok(ids)
}
