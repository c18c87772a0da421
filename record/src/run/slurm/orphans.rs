//! Stage "run", Slurm executor: what a run left in Slurm's queue — the batch jobs whose ids
//! its `run.json` records, and any job whose `--comment` names the run (submitted, but
//! goldgate died before it wrote the id) — found and cancelled. `goldgate cancel` calls it,
//! and so does `goldgate run` on a results folder whose last run died (`--rerun-failed`
//! included), before it submits anything new behind the orphans.

use std::collections::BTreeSet;

use super::command::{SlurmError, scancel_all, squeue, squeue_comments};
use super::executor::run_comment;
use super::state::{Phase, parse_squeue, phase};
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

/// The jobs of the run still pending or running in Slurm's queue, in id order.
pub fn left_in_queue(index: &RunIndex) -> Result<Vec<u64>, SlurmError> {
    let recorded: Vec<u64> = index
        .jobs
        .iter()
        .flat_map(|j| j.scheduler_job_ids.iter().copied())
        .collect();
    let mut live = BTreeSet::new();
    if !recorded.is_empty() {
        for (id, entry) in parse_squeue(&squeue(&recorded)?) {
            if phase(&entry.state) != Phase::Ended {
                live.insert(id);
            }
        }
    }
    let comment = run_comment(&index.run_id);
    for line in squeue_comments()?.lines() {
        let mut fields = line.trim().splitn(3, '|');
        let (Some(id), Some(state), Some(c)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if c == comment
            && phase(state) != Phase::Ended
            && let Ok(id) = id.parse()
        {
            live.insert(id);
        }
    }
    Ok(live.into_iter().collect())
}

/// Cancels the run's jobs still in the queue; returns their ids (empty: nothing was left).
pub fn cancel_left(index: &RunIndex) -> Result<Vec<u64>, SlurmError> {
    let ids = left_in_queue(index)?;
    scancel_all(&ids)?;
    Ok(ids)
}
