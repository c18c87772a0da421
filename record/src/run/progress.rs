//! Stage "run": the progress reporter. Consumes [`RunEvent`]s: on a terminal, one progress bar
//! whose message follows the latest job (iteration, checkpoint saves); elsewhere (CI logs)
//! one plain line when a job starts, is retried or ends, and every 30 s a heartbeat line per
//! running job ([`heartbeats`]: its running time, latest step and iteration time). The lines
//! are rendered by pure functions; write errors are ignored (a closed stderr must not stop a
//! run).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::event::{ExecEvent, RunEvent};
use goldgate_core::log::one_line;
use goldgate_schema::{Attempt, RunRecord};

/// Where progress goes.
enum Sink {
    /// A live bar on a terminal.
    Bar(ProgressBar),
    /// One line per event worth a line.
    Lines(Box<dyn Write + Send>),
}

/// Shows a run's progress.
pub struct Progress {
    sink: Sink,
    total: usize,
    done: usize,
    /// Warnings already shown: one that every job repeats (no GPU driver) is shown once.
    shown: std::collections::HashSet<String>,
    /// Plain lines only: how often [`heartbeats`] writes a line per running job.
    heartbeat: Option<Duration>,
    /// The running jobs by plan index, for the heartbeat.
    running: BTreeMap<usize, Running>,
}

/// What the heartbeat says about one running job.
struct Running {
    job_id: String,
    /// When the job started, or when it left the batch queue (then running time only).
    since: Instant,
    /// The latest iteration line: step, of, iteration time (ms).
    step: Option<(u64, Option<u64>, Option<f64>)>,
    /// Waiting in the batch scheduler's queue, for this reason.
    pending: Option<String>,
}

/// The heartbeat's interval in plain-line output unless `GOLDGATE_HEARTBEAT` says otherwise.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

impl Progress {
    /// A bar when stderr is a terminal, plain lines on stderr otherwise.
    pub fn stderr() -> Progress {
        let sink = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed_precise} {wide_msg}")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            Sink::Bar(bar)
        } else {
            Sink::Lines(Box::new(std::io::stderr()))
        };
        Progress::new(sink).with_heartbeat(Some(DEFAULT_HEARTBEAT))
    }

    /// Plain lines into `out` (tests, logs), no heartbeat.
    pub fn lines(out: Box<dyn Write + Send>) -> Progress {
        Progress::new(Sink::Lines(out))
    }

    fn new(sink: Sink) -> Progress {
        Progress {
            sink,
            total: 0,
            done: 0,
            shown: std::collections::HashSet::new(),
            heartbeat: None,
            running: BTreeMap::new(),
        }
    }

    /// Carries the warnings an earlier progress of the same command showed (`ab` runs one run
    /// per job): each is shown once per command, not once per job.
    pub fn with_shown(mut self, shown: std::collections::HashSet<String>) -> Progress {
        self.shown = shown;
        self
    }

    /// The warnings shown so far, for the command's next progress ([`Progress::with_shown`]).
    pub fn into_shown(self) -> std::collections::HashSet<String> {
        self.shown
    }

    /// Sets the heartbeat's interval (`None` or zero: no heartbeat). A terminal's bar has none.
    pub fn with_heartbeat(mut self, every: Option<Duration>) -> Progress {
        self.heartbeat = every.filter(|d| !d.is_zero());
        self
    }

    /// The heartbeat's interval, if this output has one.
    pub fn heartbeat(&self) -> Option<Duration> {
        self.heartbeat
            .filter(|_| matches!(self.sink, Sink::Lines(_)))
    }

    /// Writes one heartbeat line per running job, in plan order.
    pub fn beat(&mut self, now: Instant) {
        let Sink::Lines(out) = &mut self.sink else {
            return;
        };
        for job in self.running.values() {
            let since = now.duration_since(job.since);
            let line = match &job.pending {
                Some(reason) => pending_line(&job.job_id, since, reason),
                None => heartbeat_line(&job.job_id, since, job.step),
            };
            let _ = writeln!(out, "{}", goldgate_core::printable::terminal(&line, false));
        }
    }

    /// Keeps the heartbeat's view of the running jobs.
    fn track(&mut self, event: &RunEvent<'_>) {
        match event {
            RunEvent::JobStarted { index, job } => {
                let running = Running {
                    job_id: job.id.clone(),
                    since: Instant::now(),
                    step: None,
                    pending: None,
                };
                self.running.insert(*index, running);
            }
            RunEvent::Exec {
                index,
                event: ExecEvent::Pending { reason },
                ..
            } => {
                if let Some(job) = self.running.get_mut(index) {
                    job.pending = Some(reason.clone());
                }
            }
            RunEvent::Exec {
                index,
                event: ExecEvent::RunStarted { .. },
                ..
            } => {
                // Out of the queue: from now on the heartbeat counts running time.
                if let Some(job) = self.running.get_mut(index).filter(|j| j.pending.is_some()) {
                    job.pending = None;
                    job.since = Instant::now();
                }
            }
            RunEvent::Exec {
                index,
                event:
                    ExecEvent::Step {
                        step,
                        of,
                        iteration_ms,
                    },
                ..
            } => {
                if let Some(job) = self.running.get_mut(index) {
                    job.step = Some((*step, *of, *iteration_ms));
                }
            }
            RunEvent::JobFinished { index, .. } => {
                self.running.remove(index);
            }
            RunEvent::RunFinished { .. } => self.running.clear(),
            _ => {}
        }
    }

    /// Handles one event.
    pub fn event(&mut self, event: &RunEvent<'_>) {
        self.track(event);
        match event {
            RunEvent::RunStarted { jobs, .. } => {
                self.total = jobs.len();
                if let Sink::Bar(bar) = &self.sink {
                    bar.set_length(jobs.len() as u64);
                }
            }
            RunEvent::JobStarted { job, .. } => self.say(&job.id, &start_line(&job.id)),
            RunEvent::Exec { job, event, .. } => self.exec(&job.id, event),
            RunEvent::AttemptFinished {
                job,
                attempt,
                retrying: true,
                ..
            } => self.say(&job.id, &retry_line(&job.id, attempt)),
            RunEvent::AttemptFinished { .. } => {}
            RunEvent::JobFinished { job, record, .. } => {
                self.done += 1;
                let new: Vec<&str> = record
                    .warnings
                    .iter()
                    .filter(|w| self.shown.insert((*w).clone()))
                    .map(String::as_str)
                    .collect();
                let mut line = finish_line(&job.id, self.done, self.total, record, &new);
                line.push_str(&failure_lines(record, &job.dirs.job));
                let line = goldgate_core::printable::terminal(&line, false).into_owned();
                match &mut self.sink {
                    Sink::Bar(bar) => {
                        bar.inc(1);
                        bar.println(line);
                    }
                    Sink::Lines(out) => {
                        let _ = writeln!(out, "{line}");
                    }
                }
            }
            RunEvent::RunFinished { .. } => {
                if let Sink::Bar(bar) = &self.sink {
                    bar.finish_and_clear();
                }
            }
        }
    }

    /// Handles an event of a job's attempt.
    fn exec(&mut self, job_id: &str, event: &ExecEvent) {
        match event {
            // Slurm's `None`: not looked at yet, as nearly every job for a moment.
            ExecEvent::Pending { reason } if reason == "None" => {}
            ExecEvent::Pending { reason } => self.say(job_id, &pending_start_line(job_id, reason)),
            ExecEvent::ControllerSilent { error, limit } => self.print(&silent_line(error, *limit)),
            ExecEvent::ControllerAnswers { after } => self.print(&answers_line(*after)),
            event => self.status(&exec_status(job_id, event)),
        }
    }

    /// A line in plain mode; the bar's message on a terminal.
    fn say(&mut self, job_id: &str, line: &str) {
        match &mut self.sink {
            Sink::Bar(bar) => bar.set_message(goldgate_core::log::one_line(job_id)),
            Sink::Lines(out) => {
                let _ = writeln!(out, "{}", goldgate_core::printable::terminal(line, false));
            }
        }
    }

    /// A line in plain mode and above the bar on a terminal (rare, and worth keeping).
    fn print(&mut self, line: &str) {
        let line = goldgate_core::printable::terminal(line, false);
        match &mut self.sink {
            Sink::Bar(bar) => bar.println(line),
            Sink::Lines(out) => {
                let _ = writeln!(out, "{line}");
            }
        }
    }

    /// The bar's message only (too frequent for plain lines).
    fn status(&self, message: &str) {
        if let Sink::Bar(bar) = &self.sink {
            bar.set_message(message.to_owned());
        }
    }
}

/// Runs `body` with the heartbeat thread writing `progress`'s heartbeat beside it.
pub fn beside_heartbeat<T>(
    progress: &Mutex<Progress>,
    body: impl FnOnce(&Mutex<Progress>) -> T,
) -> T {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || heartbeats(progress, &stopped));
        let result = body(progress);
        drop(stop);
        result
    })
}

/// Writes `progress`'s heartbeat every interval until `stop` is dropped or sent to (run it
/// on its own thread beside the run; nothing if the output has no heartbeat).
fn heartbeats(progress: &Mutex<Progress>, stop: &Receiver<()>) {
    let lock = || progress.lock().unwrap_or_else(|p| p.into_inner());
    let Some(every) = lock().heartbeat() else {
        return;
    };
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
        lock().beat(Instant::now());
    }
}

/// `  …    <job> running 1m30s: step 812/2000, iteration 231 ms`, or `…: no iteration yet`.
fn heartbeat_line(
    job_id: &str,
    running: Duration,
    step: Option<(u64, Option<u64>, Option<f64>)>,
) -> String {
    let detail = match step {
        None => "no iteration yet".to_owned(),
        Some((step, of, ms)) => {
            let of = of.map(|o| format!("/{o}")).unwrap_or_default();
            let ms = ms.map(|ms| format!(", iteration {ms:.0} ms"));
            format!("step {step}{of}{}", ms.unwrap_or_default())
        }
    };
    format!(
        "  …    {} running {}: {detail}",
        one_line(job_id),
        clock(running)
    )
}

/// `  …    <job> pending 2m29s: PartitionDown` (Slurm's reason; its `None`: not yet one).
fn pending_line(job_id: &str, pending: Duration, reason: &str) -> String {
    let reason = match reason {
        "None" => "no reason yet",
        other => other,
    };
    format!(
        "  …    {} pending {}: {}",
        one_line(job_id),
        clock(pending),
        one_line(reason)
    )
}

/// `pend   <job>: PartitionDown`, when the queue's reason for a job changes.
fn pending_start_line(job_id: &str, reason: &str) -> String {
    format!("pend   {}: {}", one_line(job_id), one_line(reason))
}

/// `slurm  controller not answering: <the failed call>; ...`, when the batch scheduler's
/// controller stops answering.
fn silent_line(error: &str, limit: Duration) -> String {
    format!(
        "slurm  controller not answering: {}; jobs are followed on its last answer and given up after {} of silence (slurm.outage_limit)",
        one_line(error),
        clock(limit)
    )
}

/// `slurm  controller answers again after 47s`.
fn answers_line(after: Duration) -> String {
    format!("slurm  controller answers again after {}", clock(after))
}

/// `45s`, `1m30s`, `2h05m`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// `start  <job>`.
fn start_line(job_id: &str) -> String {
    format!("start  {}", one_line(job_id))
}

/// `retry  <job> after attempt 1: failed (exit 1)`.
fn retry_line(job_id: &str, attempt: &Attempt) -> String {
    format!(
        "retry  {} after attempt {}: {}",
        one_line(job_id),
        attempt.number,
        attempt.outcome.label()
    )
}

/// `ok    <job> [1/3] passed in 12.3 s` or `FAIL  <job> [2/3] out of memory in 4.0 s`, then
/// one `warning:` line per warning not shown before (processes that escaped the job, samplers
/// that could not run).
fn finish_line(
    job_id: &str,
    n: usize,
    total: usize,
    record: &RunRecord,
    warnings: &[&str],
) -> String {
    let mark = if record.outcome.passed() {
        "ok    "
    } else {
        "FAIL  "
    };
    let mut line = format!(
        "{mark}{} [{n}/{total}] {} in {:.1} s",
        one_line(job_id),
        one_line(&record.outcome.label()),
        record.wall_seconds
    );
    for warning in warnings {
        line.push_str("\n      warning: ");
        line.push_str(&one_line(warning));
    }
    line
}

/// Under a failed job: the line that explains it, the log's path and its last lines.
fn failure_lines(record: &RunRecord, job_dir: &std::path::Path) -> String {
    let Some(attempt) = record.attempts.last().filter(|_| !record.outcome.passed()) else {
        return String::new();
    };
    let mut out = String::new();
    // A launch error's label on the FAIL line is its message already.
    if let Some(line) = attempt.failure_line.as_deref().map(one_line)
        && !record.outcome.label().contains(&line)
    {
        out.push_str(&format!("\n      error: {line}"));
    }
    if !attempt.log.as_os_str().is_empty() {
        out.push_str(&format!(
            "\n      log: {}",
            one_line(&job_dir.join(&attempt.log).display().to_string())
        ));
    }
    if !attempt.log_tail.is_empty() {
        out.push_str(&format!(
            "\n      last {} line(s) of the log:",
            attempt.log_tail.len()
        ));
        for l in &attempt.log_tail {
            out.push_str(&format!("\n      | {}", one_line(l)));
        }
    }
    out
}

/// The bar's message while a job runs.
fn exec_status(job_id: &str, event: &ExecEvent) -> String {
    match event {
        ExecEvent::RunStarted { run } => format!("{job_id}  run {run}"),
        ExecEvent::Step { step, of, .. } => {
            let of = of.map(|o| format!("/{o}")).unwrap_or_default();
            format!("{job_id}  iteration {step}{of}")
        }
        ExecEvent::CheckpointSave { iteration } => {
            format!("{job_id}  saving checkpoint {iteration}")
        }
        ExecEvent::Submitted { id } => format!("{job_id}  submitted (Slurm job {id})"),
        ExecEvent::Pending { reason } => format!("{job_id}  pending: {reason}"),
        ExecEvent::ControllerSilent { error, limit } => silent_line(error, *limit),
        ExecEvent::ControllerAnswers { after } => answers_line(*after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_messages_follow_the_job() {
        let step = ExecEvent::Step {
            step: 3,
            of: Some(30),
            iteration_ms: Some(12.5),
        };
        assert_eq!(
            exec_status("a@default#1", &step),
            "a@default#1  iteration 3/30"
        );
        let save = ExecEvent::CheckpointSave { iteration: 10 };
        assert_eq!(
            exec_status("a@default#1", &save),
            "a@default#1  saving checkpoint 10"
        );
        let run = ExecEvent::RunStarted { run: 2 };
        assert_eq!(exec_status("a@default#1", &run), "a@default#1  run 2");
    }

    #[test]
    fn heartbeat_lines_say_running_time_step_and_iteration_time() {
        let t = Duration::from_secs;
        assert_eq!(
            heartbeat_line("a@default#1", t(90), Some((812, Some(2000), Some(231.4)))),
            "  …    a@default#1 running 1m30s: step 812/2000, iteration 231 ms"
        );
        assert_eq!(
            heartbeat_line("a@default#1", t(7), None),
            "  …    a@default#1 running 7s: no iteration yet"
        );
        assert_eq!(
            heartbeat_line("b@x=1#2", t(2 * 3600 + 5 * 60 + 9), Some((3, None, None))),
            "  …    b@x=1#2 running 2h05m: step 3"
        );
    }

    #[test]
    fn a_pending_job_is_shown_pending_with_slurms_reason() {
        assert_eq!(
            pending_line("a@default#1", Duration::from_secs(149), "PartitionDown"),
            "  …    a@default#1 pending 2m29s: PartitionDown"
        );
        assert_eq!(
            pending_start_line("a@default#1", "Priority"),
            "pend   a@default#1: Priority"
        );
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut progress = Progress::lines(Box::new(Shared(out.clone())));
        let job = crate::plan::Job::fixture(std::path::Path::new("/o"), "m/a", 1);
        progress.event(&RunEvent::JobStarted {
            index: 0,
            job: &job,
        });
        let pending = ExecEvent::Pending {
            reason: "PartitionDown".into(),
        };
        let exec = |event| RunEvent::Exec {
            index: 0,
            job: &job,
            event,
        };
        progress.event(&exec(pending));
        progress.beat(Instant::now());
        progress.event(&exec(ExecEvent::RunStarted { run: 1 }));
        progress.beat(Instant::now());
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(lines[1], format!("pend   {}: PartitionDown", job.id));
        assert!(lines[2].ends_with(": PartitionDown"), "{text}");
        assert!(lines[2].contains(" pending "), "{text}");
        assert!(lines[3].ends_with("running 0s: no iteration yet"), "{text}");
    }

    #[test]
    fn a_controller_outage_is_said_when_it_starts_and_when_it_ends() {
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut progress = Progress::lines(Box::new(Shared(out.clone())));
        let job = crate::plan::Job::fixture(std::path::Path::new("/o"), "m/a", 1);
        let exec = |event| RunEvent::Exec {
            index: 0,
            job: &job,
            event,
        };
        let silent = ExecEvent::ControllerSilent {
            error: "`squeue --noheader --jobs=12` failed (exit status: 1): slurm_load_jobs error: Unable to contact slurm controller (connect failure)".into(),
            limit: Duration::from_secs(600),
        };
        progress.event(&exec(silent));
        let back = ExecEvent::ControllerAnswers {
            after: Duration::from_secs(47),
        };
        progress.event(&exec(back));
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        insta::assert_snapshot!(text);
    }

    #[test]
    fn heartbeat_follows_running_jobs_only_and_never_a_bar() {
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut progress = Progress::lines(Box::new(Shared(out.clone())))
            .with_heartbeat(Some(Duration::from_secs(30)));
        assert_eq!(progress.heartbeat(), Some(Duration::from_secs(30)));
        let out_dir = std::path::Path::new("/o");
        let jobs = [
            crate::plan::Job::fixture(out_dir, "m/a", 1),
            crate::plan::Job::fixture(out_dir, "m/b", 1),
        ];
        for (index, job) in jobs.iter().enumerate() {
            progress.event(&RunEvent::JobStarted { index, job });
        }
        let event = ExecEvent::Step {
            step: 4,
            of: Some(10),
            iteration_ms: Some(20.0),
        };
        progress.event(&RunEvent::Exec {
            index: 1,
            job: &jobs[1],
            event,
        });
        let record = goldgate_core::records::fixtures::sample();
        progress.event(&RunEvent::JobFinished {
            index: 0,
            job: &jobs[0],
            record: &record,
        });
        out.lock().unwrap().clear();
        progress.beat(Instant::now());
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert!(
            lines[0].starts_with(&format!("  …    {} running ", jobs[1].id)),
            "{text}"
        );
        assert!(lines[0].ends_with(": step 4/10, iteration 20 ms"), "{text}");
        assert_eq!(Progress::lines(Box::new(std::io::sink())).heartbeat(), None);
    }

    /// `ab` runs each job as a run of its own: the warnings carried from one run's progress to
    /// the next are shown once for the whole command (no NVML: one line, not one per job).
    #[test]
    fn warnings_carried_to_the_next_run_are_not_shown_again() {
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let jobs = [crate::plan::Job::fixture(
            std::path::Path::new("/o"),
            "m/a",
            1,
        )];
        let mut record = goldgate_core::records::fixtures::sample();
        record.warnings = vec!["GPU memory not sampled: NVML unavailable".into()];
        let mut shown = std::collections::HashSet::new();
        for run in ["01-a", "02-b"] {
            let mut progress = Progress::lines(Box::new(Shared(out.clone()))).with_shown(shown);
            progress.event(&RunEvent::RunStarted {
                run_id: run,
                jobs: &jobs,
            });
            progress.event(&RunEvent::JobFinished {
                index: 0,
                job: &jobs[0],
                record: &record,
            });
            shown = progress.into_shown();
        }
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches("NVML unavailable").count(), 1, "{text}");
    }

    #[test]
    fn warnings_are_shown_under_the_job_each_text_once_per_run() {
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut progress = Progress::lines(Box::new(Shared(out.clone())));
        let out_dir = std::path::Path::new("/o");
        let jobs = [
            crate::plan::Job::fixture(out_dir, "m/a", 1),
            crate::plan::Job::fixture(out_dir, "m/b", 1),
        ];
        progress.event(&RunEvent::RunStarted {
            run_id: "r",
            jobs: &jobs,
        });
        for (index, escaped) in [(0, "pid 7 (sleep)"), (1, "pid 9 (sleep)")] {
            let mut record = goldgate_core::records::fixtures::sample();
            record.warnings = vec!["no GPU driver".into(), format!("escaped: {escaped}")];
            progress.event(&RunEvent::JobFinished {
                index,
                job: &jobs[index],
                record: &record,
            });
        }
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches("warning: no GPU driver").count(), 1, "{text}");
        assert!(text.contains("warning: escaped: pid 7 (sleep)"), "{text}");
        assert!(text.contains("warning: escaped: pid 9 (sleep)"), "{text}");
    }

    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
