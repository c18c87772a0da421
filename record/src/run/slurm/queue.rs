//! Stage "run", Slurm executor: the [`Queue`] every worker asks about its job. It polls Slurm
//! for all of goldgate's jobs at once — one `squeue` call per poll interval, whatever the
//! number of jobs and workers — and keeps the last answer. A failed `squeue` (the controller
//! restarting, failing over) is an [`Outage`]: the last answer stands, the next poll waits
//! twice as long each time (up to [`MAX_BACKOFF`]), and the workers decide when to give up.
//! The outage's start and end are kept as [`Change`]s, each taken by one worker, which says it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::command::squeue;
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

/// The longest wait between two polls while `squeue` fails.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Slurm's controller has not answered since `since`; `error` is the last failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outage {
    pub since: Instant,
    pub error: String,
}

/// The controller stopped or started answering `squeue`: said once per run, by whichever
/// worker takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// A call failed after the last one answered; `error` is its failure.
    Silent { error: String },
    /// A call answered again after an outage of `after`, since its first failed call began.
    Answers { after: Duration },
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
    /// Failed polls in a row, and the outage they make.
    failures: u32,
    outage: Option<Outage>,
    /// The outage's start and end, not yet taken by a worker.
    changes: Vec<Change>,
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
    /// than the interval (one worker polls; the others wait for its answer). During an
    /// outage the last answer stands; [`Queue::outage`] says since when.
    pub(crate) fn seen(&self, id: u64) -> Seen {
        let Ok(mut inner) = self.inner.lock() else {
            return Seen::NotYet;
        };
        let backoff = self.interval.saturating_mul(1 << inner.failures.min(8));
        let wait = backoff.min(MAX_BACKOFF.max(self.interval));
        let due = inner.polled_at.is_none_or(|at| at.elapsed() >= wait);
        if due && !inner.watched.is_empty() {
            let ids: Vec<u64> = inner.watched.iter().copied().collect();
            let asked_at = Instant::now();
            inner.polled_at = Some(asked_at);
            inner.calls += 1;
            match squeue(&ids) {
                Ok(text) => {
                    inner.listed = parse_squeue(&text);
                    inner.asked = ids.into_iter().collect();
                    inner.failures = 0;
                    if let Some(outage) = inner.outage.take() {
                        let after = outage.since.elapsed();
                        inner.changes.push(Change::Answers { after });
                    }
                }
                Err(e) => {
                    inner.failures = inner.failures.saturating_add(1);
                    // From when the first failed call began: `squeue` itself may take
                    // seconds to give up on the controller.
                    let since = inner.outage.as_ref().map_or(asked_at, |o| o.since);
                    let error = e.to_string();
                    if inner.outage.is_none() {
                        inner.changes.push(Change::Silent {
                            error: error.clone(),
                        });
                    }
                    inner.outage = Some(Outage { since, error });
                }
            }
        }
        match inner.listed.get(&id) {
            Some(entry) => Seen::Listed(entry.clone()),
            None if inner.asked.contains(&id) => Seen::Gone,
            None => Seen::NotYet,
        }
    }

    /// The outage `squeue` is in, if its last call failed.
    pub(crate) fn outage(&self) -> Option<Outage> {
        self.inner.lock().ok()?.outage.clone()
    }

    /// The outage changes no worker has taken yet (each is taken once).
    pub(crate) fn take_changes(&self) -> Vec<Change> {
        self.inner
            .lock()
            .map(|mut i| std::mem::take(&mut i.changes))
            .unwrap_or_default()
    }

    /// `squeue` calls made so far.
    pub(crate) fn calls(&self) -> u64 {
        self.inner.lock().map(|i| i.calls).unwrap_or(0)
    }
}
