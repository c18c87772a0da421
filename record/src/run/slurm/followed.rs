//! Stage "run", Slurm executor: one submitted batch job being followed — [`Followed`], what
//! goldgate knows of it so far (started, exit line, pending reason, cancel, the outage of
//! Slurm's commands), why goldgate should cancel it, and the lines that explain how it ended.

use std::time::{Duration, Instant};

use super::command::{scancel_within, show_job};

/// How long a job given up after an outage waits for its `scancel`.
const GIVE_UP_CANCEL: Duration = Duration::from_secs(2);
use super::queue::Outage;
use super::state::{Cancelled, field, never_clears};
use crate::launch::StopFlag;
use crate::plan::EXIT_MARKER;
use crate::run::event::ExecEvent;

/// One submitted batch job being followed.
pub(crate) struct Followed {
    pub(crate) id: u64,
    pub(crate) submitted: Instant,
    pub(crate) started: Option<Instant>,
    pub(crate) ended: Option<Instant>,
    /// The exit code the batch script printed last.
    pub(crate) exit: Option<i32>,
    /// Slurm's step daemon reported an oom-kill event in the log.
    pub(crate) oom_kill: bool,
    /// `srun` or `slurmstepd` reported an error in the log (a node failure, a step killed):
    /// then even an exit line of 0 waits for Slurm's own end state.
    pub(crate) slurm_error: bool,
    /// The exit code of the first node task that failed (`srun: error: n2: task 1: Exited
    /// with exit code 1`): srun's own code is the largest, often a node stopped after it.
    pub(crate) first_task_exit: Option<i32>,
    pub(crate) nodes: String,
    pub(crate) cancel: Option<(Cancelled, Instant, bool)>,
    /// Slurm's last pending reason.
    pub(crate) pending: Option<String>,
    /// The queue time allowed, and the controller's silence allowed.
    pub(crate) pending_limit: Duration,
    pub(crate) outage_limit: Duration,
    /// `scontrol`/`scancel` failing since (`squeue`'s own outage is the queue's).
    pub(crate) failing: Option<Outage>,
}

pub(crate) fn mark_started(job: &mut Followed, on_event: &mut dyn FnMut(ExecEvent)) {
    if job.started.is_none() {
        job.started = Some(Instant::now());
        on_event(ExecEvent::RunStarted { run: 1 });
    }
}

/// The batch script's last line: the exit code of its nodes, and the end of the running time.
pub(crate) fn see_exit(line: &[u8], job: &mut Followed) {
    let Some(rest) = line.strip_prefix(EXIT_MARKER.as_bytes()) else {
        // slurmstepd: `Detected 1 oom-kill event(s) in StepId=...` (older: `oom_kill event`).
        if memchr::memmem::find(line, b"oom-kill event").is_some()
            || memchr::memmem::find(line, b"oom_kill event").is_some()
        {
            job.oom_kill = true;
        }
        if line.starts_with(b"srun: error:") || line.starts_with(b"slurmstepd: error:") {
            job.slurm_error = true;
            if job.first_task_exit.is_none() {
                job.first_task_exit = task_exit_code(line);
            }
        }
        return;
    };
    if let Ok(code) = String::from_utf8_lossy(rest).trim().parse() {
        job.exit = Some(code);
        job.ended.get_or_insert_with(Instant::now);
    }
}

/// `srun: error: n2: task 1: Exited with exit code 3` → 3.
fn task_exit_code(line: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(line).ok()?;
    let (_, code) = text.rsplit_once(": Exited with exit code ")?;
    code.trim().parse().ok()
}

/// The nodes' exit code as goldgate records it: the first failed task's, when srun's own
/// (the largest) is a signal's (128 + N) from a task stopped after that one failed.
pub(crate) fn job_exit(job: &Followed) -> Option<i32> {
    match (job.exit, job.first_task_exit) {
        (Some(code), Some(first)) if code > 128 && first != 0 => Some(first),
        (exit, _) => exit,
    }
}

/// What Slurm said of a job that did not pass: `Slurm job 12 ended FAILED (exit 1)`, with
/// its nodes after a node failure (`... ended NODE_FAIL on n2`).
pub(crate) fn slurm_line(id: u64, state: &str, exit: Option<i32>, nodes: &str) -> String {
    let on = match state {
        "NODE_FAIL" if !nodes.is_empty() => format!(" on {nodes}"),
        _ => String::new(),
    };
    match exit {
        Some(code) => format!("Slurm job {id} ended {state}{on} (exit {code})"),
        None => format!("Slurm job {id} ended {state}{on}"),
    }
}

/// The failure line of a job goldgate gave up itself: never started, or Slurm unreachable.
pub(crate) fn cancelled_line(id: u64, why: &Cancelled, failing: Option<&Outage>) -> Option<String> {
    match why {
        Cancelled::NotStarted {
            reason,
            pending_seconds,
        } => Some(match never_clears(reason) {
            Some(meaning) => {
                format!("Slurm job {id} cannot start: pending for {reason} ({meaning}); cancelled")
            }
            None => format!(
                "Slurm job {id} was still pending ({reason}) after {pending_seconds:.0} s, past the pending limit (--pending-limit, slurm.pending_limit); cancelled"
            ),
        }),
        Cancelled::Unreachable => Some(format!(
            "Slurm's controller did not answer for longer than slurm.outage_limit ({}); Slurm job {id} may still be in the queue: goldgate cancel cancels what the run left there",
            failing.map_or("", |o| o.error.as_str())
        )),
        Cancelled::No | Cancelled::Interrupt | Cancelled::Timeout => None,
    }
}

/// Gives a job up after an outage past its limit: cancels it if Slurm listens again by
/// now (it may not: `scancel` gets [`GIVE_UP_CANCEL`]), and ends its following.
pub(crate) fn give_up(job: &mut Followed, outage: &Outage) -> String {
    let _ = scancel_within(job.id, GIVE_UP_CANCEL);
    job.failing = Some(outage.clone());
    job.cancel = Some((Cancelled::Unreachable, Instant::now(), true));
    "UNKNOWN".to_owned()
}

impl Followed {
    pub(crate) fn new(id: u64, (pending_limit, outage_limit): (Duration, Duration)) -> Followed {
        Followed {
            id,
            submitted: Instant::now(),
            started: None,
            ended: None,
            exit: None,
            oom_kill: false,
            slurm_error: false,
            first_task_exit: None,
            nodes: String::new(),
            cancel: None,
            pending: None,
            pending_limit,
            outage_limit,
            failing: None,
        }
    }

    /// A Slurm command failed: the outage it starts or continues.
    pub(crate) fn failed(&mut self, error: impl std::fmt::Display) {
        let since = self.failing.as_ref().map_or_else(Instant::now, |o| o.since);
        self.failing = Some(Outage {
            since,
            error: error.to_string(),
        });
    }

    /// Why goldgate should cancel the job now, if it should.
    pub(crate) fn cancel_reason(
        &self,
        stop: &StopFlag,
        watchdog: Option<Duration>,
    ) -> Option<Cancelled> {
        if stop.is_requested() {
            return Some(Cancelled::Interrupt);
        }
        if let Some(started) = self.started {
            let late = watchdog.is_some_and(|w| started.elapsed() > w);
            return late.then_some(Cancelled::Timeout);
        }
        let reason = self.pending.as_deref()?;
        let pending = self.submitted.elapsed();
        (never_clears(reason).is_some() || pending > self.pending_limit).then(|| {
            Cancelled::NotStarted {
                reason: reason.to_owned(),
                pending_seconds: pending.as_secs_f64(),
            }
        })
    }
}

/// The end state of a job `squeue` no longer lists, from `scontrol show job`.
pub(crate) fn final_state(id: u64) -> Result<String, String> {
    let text = show_job(id).map_err(|e| e.to_string())?;
    Ok(text
        .as_deref()
        .and_then(|t| field(t, "JobState"))
        .map_or_else(|| "UNKNOWN".to_owned(), str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failed_tasks_code_wins_over_a_stopped_tasks_signal() {
        let mut job = Followed::new(7, (Duration::from_secs(1), Duration::from_secs(1)));
        for line in [
            "srun: error: n2: task 1: Exited with exit code 1",
            "srun: error: n1: task 0: Exited with exit code 143",
            "goldgate: the nodes exited with 143",
        ] {
            see_exit(line.as_bytes(), &mut job);
        }
        assert_eq!(job.exit, Some(143));
        assert_eq!(job_exit(&job), Some(1));
        let mut alone = Followed::new(8, (Duration::from_secs(1), Duration::from_secs(1)));
        see_exit(b"goldgate: the nodes exited with 137", &mut alone);
        assert_eq!(job_exit(&alone), Some(137));
    }
}
