//! Stage "run", Slurm executor: the [`Queue`] every worker asks about its job. It polls Slurm
//! for all of goldgate's jobs at once — one `squeue` call per poll interval, whatever the
//! number of jobs and workers — and keeps the last answer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::command::{SlurmError, squeue};
use super::state::{QueueEntry, parse_squeue};

/// What the last poll said about one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Not polled since it was submitted.
    NotYet,
    /// In the queue (pending, running, or ended while Slurm keeps it).
    Listed(QueueEntry),
    /// Slurm no longer lists it.
    Gone,
}

/// goldgate's jobs in Slurm's queue, polled at most once per `interval`.
pub(crate) struct Queue {
    interval: Duration,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    watched: BTreeSet<u64>,
    /// Jobs of the last poll, and the jobs it was asked about.
    listed: BTreeMap<u64, QueueEntry>,
    asked: BTreeSet<u64>,
    polled_at: Option<Instant>,
    /// `squeue` calls so far.
    calls: u64,
}

impl Queue {
    pub(crate) fn new(interval: Duration) -> Queue {
        Queue {
            interval,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Starts watching job `id` (polled from the next poll on).
    pub(crate) fn watch(&self, id: u64) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.watched.insert(id);
        }
    }

    /// Stops watching job `id`.
    pub(crate) fn forget(&self, id: u64) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.watched.remove(&id);
            inner.listed.remove(&id);
            inner.asked.remove(&id);
        }
    }

    /// What Slurm says about job `id`, polling all watched jobs when the last poll is older
    /// than the interval (one worker polls; the others wait for its answer).
    pub(crate) fn seen(&self, id: u64) -> Result<Seen, SlurmError> {
        let Ok(mut inner) = self.inner.lock() else {
            return Ok(Seen::NotYet);
        };
        let due = inner
            .polled_at
            .is_none_or(|at| at.elapsed() >= self.interval);
        if due && !inner.watched.is_empty() {
            let ids: Vec<u64> = inner.watched.iter().copied().collect();
            inner.polled_at = Some(Instant::now());
            inner.calls += 1;
            let text = squeue(&ids)?;
            inner.listed = parse_squeue(&text);
            inner.asked = ids.into_iter().collect();
        }
        Ok(match inner.listed.get(&id) {
            Some(entry) => Seen::Listed(entry.clone()),
            None if inner.asked.contains(&id) => Seen::Gone,
            None => Seen::NotYet,
        })
    }

    /// `squeue` calls made so far.
    pub(crate) fn calls(&self) -> u64 {
        self.inner.lock().map(|i| i.calls).unwrap_or(0)
    }
}
