//! Stage "run", Slurm executor: one submitted batch job being followed — [`Followed`], what
//! goldgate knows of it so far (started, exit line, pending reason, cancel, the outage of
//! Slurm's commands), why goldgate should cancel it, and the lines that explain how goldgate
//! ended it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::command::scancel_within;
use super::ended::EndState;
use super::queue::Outage;
use super::state::{Cancelled, never_clears};
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
    /// Given up after an outage: whether its cancel was sent (the error when not).
    pub(crate) given_up: Option<Result<(), String>>,
}

/// How long goldgate goes on sending `scancel` to a job it gave up after an outage: a
/// controller that answers again within it (a restart, a failover) gets the cancel.
pub(crate) const GIVE_UP_CANCEL: Duration = Duration::from_secs(30);

/// The pause between two `scancel`s of a job given up.
const GIVE_UP_RETRY: Duration = Duration::from_secs(2);

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

/// The failure line of a job goldgate ended itself: on Ctrl-C, past its time limit, never
/// started (pending for
/// `pending_seconds`, its whole time in the queue), or given up after Slurm's controller did
/// not answer — cancelled then, or how to cancel it when the cancel could not be sent (`out`:
/// the run's results folder).
pub(crate) fn cancelled_line(job: &Followed, why: &Cancelled, out: &Path) -> Option<String> {
    let id = job.id;
    match why {
        Cancelled::NotStarted {
            reason,
            pending_seconds,
        } => Some(match never_clears(reason) {
            Some(meaning) => {
                format!("Slurm job {id} cannot start: pending for {reason} ({meaning}); cancelled")
            }
            None => format!(
                "Slurm job {id} was pending ({reason}) for {pending_seconds:.0} s, past the pending limit (--pending-limit, slurm.pending_limit); cancelled"
            ),
        }),
        Cancelled::Unreachable => {
            let silent = format!(
                "Slurm's controller did not answer for longer than slurm.outage_limit ({}); goldgate gave Slurm job {id} up",
                clock(job.outage_limit)
            );
            let error = match &job.given_up {
                Some(Ok(())) => return Some(format!("{silent} and cancelled it (scancel {id})")),
                Some(Err(e)) => e.as_str(),
                None => job.failing.as_ref().map_or("", |o| o.error.as_str()),
            };
            Some(format!(
                "{silent}; its cancel could not be sent within {} s ({error}): the job may still run; once the controller answers, `goldgate cancel --out {}` (or `scancel {id}`) cancels it",
                GIVE_UP_CANCEL.as_secs(),
                out.display()
            ))
        }
        Cancelled::Interrupt => Some(format!(
            "goldgate cancelled Slurm job {id} (Ctrl-C or SIGTERM to goldgate)"
        )),
        Cancelled::Timeout => Some(format!(
            "goldgate cancelled Slurm job {id}: still running a minute past its Slurm time limit (--timeout)"
        )),
        Cancelled::No => None,
    }
}

/// `2s`, `10m`, `1h30m`: an outage limit as a user writes it.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

/// Gives a job up after an outage past its limit: sends `scancel` until it is taken or
/// [`GIVE_UP_CANCEL`] passed (a stop request ends the tries early), keeps whether it was
/// sent, and ends its following.
pub(crate) fn give_up(job: &mut Followed, outage: &Outage, stop: &StopFlag) -> EndState {
    let deadline = Instant::now() + GIVE_UP_CANCEL;
    let sent = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match scancel_within(job.id, left.max(Duration::from_secs(1))) {
            Ok(()) => break Ok(()),
            Err(e) if stop.is_requested() || Instant::now() + GIVE_UP_RETRY >= deadline => {
                break Err(e.to_string());
            }
            Err(_) => std::thread::sleep(GIVE_UP_RETRY),
        }
    };
    job.given_up = Some(sent);
    job.failing = Some(outage.clone());
    job.cancel = Some((Cancelled::Unreachable, Instant::now(), true));
    EndState::of("UNKNOWN")
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
            given_up: None,
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

    #[test]
    fn a_job_given_up_says_whether_its_cancel_was_sent_and_else_how_to_cancel_it() {
        let out = Path::new("/ci/out");
        let mut job = Followed::new(12, (Duration::from_secs(3600), Duration::from_secs(600)));
        job.given_up = Some(Ok(()));
        let sent = cancelled_line(&job, &Cancelled::Unreachable, out).unwrap();
        insta::assert_snapshot!("given_up_and_cancelled", sent);
        job.given_up = Some(Err(
            "`scancel 12` failed (exit status: 1): scancel: error: Kill job error on job id 12: Unable to contact slurm controller (connect failure)".into(),
        ));
        let unsent = cancelled_line(&job, &Cancelled::Unreachable, out).unwrap();
        insta::assert_snapshot!("given_up_not_cancelled", unsent);
        assert!(unsent.contains("may still run"), "{unsent}");
        assert!(
            unsent.contains("`goldgate cancel --out /ci/out`"),
            "{unsent}"
        );
        assert!(unsent.contains("`scancel 12`"), "{unsent}");
    }

    #[test]
    fn outage_limits_read_as_written() {
        let cases = [
            (2, "2s"),
            (90, "1m30s"),
            (600, "10m"),
            (3600, "1h"),
            (5400, "1h30m"),
        ];
        for (seconds, want) in cases {
            assert_eq!(clock(Duration::from_secs(seconds)), want);
        }
    }
}
