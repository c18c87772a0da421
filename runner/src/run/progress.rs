//! Stage "run": the progress reporter. Consumes [`RunEvent`]s: on a terminal, one progress bar
//! whose message follows the latest job (iteration, checkpoint saves); elsewhere (CI logs)
//! one plain line when a job starts, is retried or ends. The lines are rendered by pure
//! functions; write errors are ignored (a closed stderr must not stop a run).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::event::{ExecEvent, RunEvent};
use crate::metrics::{Attempt, RunRecord};
use crate::observe::log::one_line;

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
}

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
        Progress {
            sink,
            total: 0,
            done: 0,
            shown: std::collections::HashSet::new(),
        }
    }

    /// Plain lines into `out` (tests, logs).
    pub fn lines(out: Box<dyn Write + Send>) -> Progress {
        Progress {
            sink: Sink::Lines(out),
            total: 0,
            done: 0,
            shown: std::collections::HashSet::new(),
        }
    }

    /// Handles one event.
    pub fn event(&mut self, event: &RunEvent<'_>) {
        match event {
            RunEvent::RunStarted { jobs, .. } => {
                self.total = jobs.len();
                if let Sink::Bar(bar) = &self.sink {
                    bar.set_length(jobs.len() as u64);
                }
            }
            RunEvent::JobStarted { job, .. } => self.say(&job.id, &start_line(&job.id)),
            RunEvent::Exec { job, event, .. } => self.status(&exec_status(&job.id, event)),
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

    /// A line in plain mode; the bar's message on a terminal.
    fn say(&mut self, job_id: &str, line: &str) {
        match &mut self.sink {
            Sink::Bar(bar) => bar.set_message(job_id.to_owned()),
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
    if let Some(line) = &attempt.failure_line {
        out.push_str(&format!("\n      error: {}", one_line(line)));
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
        ExecEvent::Step { step, of } => {
            let of = of.map(|o| format!("/{o}")).unwrap_or_default();
            format!("{job_id}  iteration {step}{of}")
        }
        ExecEvent::CheckpointSave { iteration } => {
            format!("{job_id}  saving checkpoint {iteration}")
        }
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
            let mut record = crate::metrics::record::tests::sample();
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
