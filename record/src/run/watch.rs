//! Stage "run": [`LogWatch`] follows one run's log as it streams — the one [`LogStream`]
//! (split, redact, clean, parse, summarise, tail), the checkpoint-save marks on the memory
//! timeline — and reports progress as [`ExecEvent`]s. Every executor feeds it the bytes it
//! reads (from a pipe, or from a log on a shared filesystem). It also writes the log goldgate
//! keeps (`logs/console.log`): the stream's lines, the job's secrets masked, so what is stored
//! or uploaded is redacted like what is printed; a raw copy exists only on request
//! (`--keep-raw-log`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::event::ExecEvent;
use crate::launch::FailureSigns;
use crate::plan::Job;
use goldgate_core::log::{
    FailureKind, LogEvent, LogLine, LogSink, LogStream, LogSummary, TailSummary,
};
use goldgate_core::redact::{MIN_SECRET_LEN, Redactor, is_secret_name};

/// Checkpoint saves on the memory timeline: (start s, end s, iteration).
pub(super) type Marks = Vec<(f64, Option<f64>, u64)>;

/// The log of one run, parsed as it arrives.
pub struct LogWatch {
    stream: LogStream,
    marks: SaveMarks,
    t0: Instant,
    /// Copy every line to goldgate's stderr (`--no-capture`).
    echo: bool,
    /// The redacted log being written, and the first error writing it.
    store: Option<Store>,
}

/// The log goldgate keeps, written line by line as the stream masks them.
struct Store {
    path: PathBuf,
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl Default for LogWatch {
    fn default() -> LogWatch {
        LogWatch::new()
    }
}

impl LogWatch {
    /// Starts watching; save marks are timed from now (start it as the run launches).
    pub fn new() -> LogWatch {
        LogWatch {
            stream: LogStream::new(),
            marks: SaveMarks::default(),
            t0: Instant::now(),
            echo: false,
            store: None,
        }
    }

    /// Masks `redactor`'s secrets in every line before the stored log, the echo, the parser
    /// and the tail see it: the one place where a job's output enters goldgate ([`redactor`]).
    pub fn redacting(mut self, redactor: Redactor) -> LogWatch {
        self.stream = self.stream.redacting(redactor);
        self
    }

    /// Also writes every line to goldgate's stderr as it arrives (`--no-capture`); a failed
    /// write is ignored (a closed stderr must not stop a run).
    pub fn echoing(mut self, echo: bool) -> LogWatch {
        self.echo = echo;
        self
    }

    /// Writes the stream's lines (redacted) to a new file at `path`, its folder created.
    pub fn storing(mut self, path: &Path) -> Result<LogWatch, String> {
        let err = |e: std::io::Error| format!("cannot write the log {}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let out = BufWriter::with_capacity(64 * 1024, File::create(path).map_err(err)?);
        self.store = Some(Store {
            path: path.to_path_buf(),
            out,
            error: None,
        });
        Ok(self)
    }

    /// The next bytes of the log, any amount; `on_line` sees each line as stored (redacted).
    /// The stored log is flushed after them, so it survives a crash of goldgate.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        on_event: &mut dyn FnMut(ExecEvent),
        on_line: &mut dyn FnMut(&[u8]),
    ) {
        let mut sink = WatchSink {
            marks: &mut self.marks,
            t0: self.t0,
            echo: self.echo,
            store: self.store.as_mut(),
            on_event,
            on_line,
        };
        self.stream.feed(bytes, &mut sink);
        if let Some(store) = &mut self.store {
            store.flush();
        }
    }

    /// The summary of every line seen, and the save marks (start s, end s, iteration).
    pub fn finish(self) -> (LogSummary, Vec<(f64, Option<f64>, u64)>) {
        let (summary, marks, _) = self.finish_with_tail();
        (summary, marks)
    }

    /// [`LogWatch::finish`], and what the log's end says about a failure.
    pub fn finish_with_tail(self) -> (LogSummary, Marks, TailSummary) {
        let (summary, marks, tail, _) = self.finish_all(&mut |_| {}, &mut |_| {});
        (summary, marks, tail)
    }

    /// [`LogWatch::finish_with_tail`] after the last line (one without a line ending), and
    /// whether the stored log was written whole (`Err`: which file, what failed).
    pub fn finish_all(
        mut self,
        on_event: &mut dyn FnMut(ExecEvent),
        on_line: &mut dyn FnMut(&[u8]),
    ) -> (LogSummary, Marks, TailSummary, Result<(), String>) {
        let mut sink = WatchSink {
            marks: &mut self.marks,
            t0: self.t0,
            echo: self.echo,
            store: self.store.as_mut(),
            on_event,
            on_line,
        };
        let (summary, tail) = self.stream.finish(&mut sink);
        let stored = match self.store {
            Some(mut store) => {
                store.flush();
                match store.error {
                    Some(e) => Err(format!(
                        "cannot write the log {}: {e}",
                        store.path.display()
                    )),
                    None => Ok(()),
                }
            }
            None => Ok(()),
        };
        (summary, self.marks.list(), tail, stored)
    }
}

impl Store {
    fn write(&mut self, line: &[u8], dropped: u64, ended: bool) {
        if self.error.is_some() {
            return;
        }
        let note = match dropped {
            0 => String::new(),
            n => format!(" [goldgate: {n} more bytes of this line not kept]"),
        };
        let end: &[u8] = if ended { b"\n" } else { b"" };
        let written = (self.out.write_all(line))
            .and_then(|()| self.out.write_all(note.as_bytes()))
            .and_then(|()| self.out.write_all(end));
        self.error = written.err();
    }

    fn flush(&mut self) {
        if self.error.is_none() {
            self.error = self.out.flush().err();
        }
    }
}

/// What the watch does with each line the stream hands on.
struct WatchSink<'a> {
    marks: &'a mut SaveMarks,
    t0: Instant,
    echo: bool,
    store: Option<&'a mut Store>,
    on_event: &'a mut dyn FnMut(ExecEvent),
    on_line: &'a mut dyn FnMut(&[u8]),
}

impl LogSink for WatchSink<'_> {
    fn line(&mut self, line: &[u8], dropped: u64, ended: bool) {
        if let Some(store) = &mut self.store {
            store.write(line, dropped, ended);
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.echo {
            let text = String::from_utf8_lossy(line);
            let shown = goldgate_core::printable::terminal(&text, false);
            let mut err = std::io::stderr().lock();
            let _ = err
                .write_all(shown.as_bytes())
                .and_then(|()| err.write_all(b"\n"));
        }
        (self.on_line)(line);
    }

    fn parsed(&mut self, parsed: &LogLine<'_>) {
        match &parsed.event {
            LogEvent::Iteration(it) => (self.on_event)(ExecEvent::Step {
                step: it.iteration,
                of: it.train_iters,
                iteration_ms: it
                    .fields()
                    .find(|(name, _)| *name == b"elapsed time per iteration (ms)")
                    .map(|(_, ms)| ms),
            }),
            LogEvent::CheckpointSaving { iteration, .. } => {
                (self.on_event)(ExecEvent::CheckpointSave {
                    iteration: *iteration,
                });
            }
            _ => {}
        }
        if matches!(
            parsed.event,
            LogEvent::CheckpointSaving { .. } | LogEvent::CheckpointSaved { .. }
        ) {
            self.marks
                .see(&parsed.event, self.t0.elapsed().as_secs_f64());
        }
    }
}

/// Where `--keep-raw-log` keeps the unredacted output of the run logged at `log`:
/// `console.log` → `console.raw.log`.
pub(crate) fn raw_log_path(log: &Path) -> PathBuf {
    let stem = log.file_stem().map(|s| s.to_string_lossy().into_owned());
    log.with_file_name(format!("{}.raw.log", stem.unwrap_or_default()))
}

/// The line that explains a failed run and the log's last lines: a failure marker's line
/// (out of memory, NCCL timeout, NaN) first, else the last traceback's exception, else the last
/// error-looking line. Nothing for a run that passed.
pub(crate) fn diagnosis(
    summary: &LogSummary,
    tail: TailSummary,
    passed: bool,
) -> (Option<String>, Vec<String>) {
    if passed {
        return (None, Vec::new());
    }
    let line = (summary.failures.first().map(|f| f.line.clone())).or_else(|| tail.failure_line());
    (line, tail.lines)
}

/// The redactor of a process started with `env` set and `unset` removed on top of goldgate's
/// own environment: every secret-named variable it will see, inherited from the caller (a CI
/// job's `HF_TOKEN`) or set by the case (`HF_TOKEN: "${CALLER_A}"`), masked by value.
pub(super) fn redactor(env: &BTreeMap<String, String>, unset: &[String]) -> Redactor {
    let inherited = std::env::vars_os().filter_map(|(name, value)| {
        let name = name.into_string().ok()?;
        let kept = !env.contains_key(&name) && !unset.contains(&name);
        kept.then(|| (name, value.into_encoded_bytes()))
    });
    let set = env.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes()));
    Redactor::from_env(inherited.chain(set))
}

/// The variables of goldgate's environment whose values `job`'s [`redactor`] masks, each with
/// the value the job's output is masked for, in name order: the secret-named variables the job
/// inherits, and for a secret the case sets, the caller's variables its value was made from
/// (`HF_TOKEN: "${CALLER_A}"`: `CALLER_A`), or its own name when it was made from none.
/// `run.json` records of each job the names and a short check of each value, never a value,
/// so that whoever settles the output of a run that died knows which variables its own
/// environment must hold, and whether it holds the job's values. A name that two of the job's
/// secrets share (a case's `B_TOKEN: literal` beside `A_TOKEN: "${B_TOKEN}"`) keeps the value
/// of the first in that order.
pub(crate) fn secret_values(job: &Job) -> Vec<(String, Vec<u8>)> {
    let long = |v: &[u8]| v.len() >= MIN_SECRET_LEN;
    let mut found: Vec<(String, Vec<u8>)> = std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            let kept = is_secret_name(&name)
                && long(value.as_encoded_bytes())
                && !job.env.contains_key(&name)
                && !job.env_unset.contains(&name);
            kept.then(|| (name, value.into_encoded_bytes()))
        })
        .collect();
    let set =
        (job.env.iter()).filter(|(name, value)| is_secret_name(name) && long(value.as_bytes()));
    for (name, value) in set {
        let sources = (job.from_caller.iter())
            .filter(|c| long(c.value.as_bytes()) && value.contains(&c.value))
            .map(|c| (c.name.clone(), c.value.clone().into_bytes()));
        let before = found.len();
        found.extend(sources);
        if found.len() == before {
            found.push((name.clone(), value.clone().into_bytes()));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.dedup_by(|later, first| later.0 == first.0);
    found
}

/// The failure markers of a log, for classification and retries.
pub(crate) fn signs(summary: &LogSummary) -> FailureSigns {
    let has = |k: FailureKind| summary.failure_counts.get(&k).is_some_and(|n| *n > 0);
    FailureSigns {
        oom: has(FailureKind::Oom),
        nccl_timeout: has(FailureKind::NcclTimeout),
        nan: has(FailureKind::Nan),
        flaky: summary.failures.iter().any(|f| f.flaky),
    }
}

/// When each checkpoint save started and ended, in seconds since the launch, by iteration:
/// the marks on the memory timeline.
#[derive(Default)]
struct SaveMarks(BTreeMap<u64, (f64, Option<f64>)>);

impl SaveMarks {
    fn see(&mut self, event: &LogEvent<'_>, t: f64) {
        match event {
            LogEvent::CheckpointSaving { iteration, .. } => {
                self.0.entry(*iteration).or_insert((t, None));
            }
            LogEvent::CheckpointSaved { iteration } => {
                if let Some(mark) = self.0.get_mut(iteration) {
                    mark.1.get_or_insert(t);
                }
            }
            _ => {}
        }
    }

    fn list(&self) -> Vec<(f64, Option<f64>, u64)> {
        self.0.iter().map(|(it, (s, e))| (*s, *e, *it)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::log::LogParser;

    const SAVING_10: &[u8] = b"[2026-11-29 20:16:15.068999] saving checkpoint at iteration      10 to /c in torch_dist format";
    const SAVED_10: &[u8] = b"  [2026-11-29 20:16:18.552401] successfully saved checkpoint from iteration      10 to /c [ t 1/1, gtp_remat 1/1, p 1/1 ]";
    const SAVING_20: &[u8] = b"[2026-11-29 20:16:19.068999] saving checkpoint at iteration      20 to /c in torch_dist format";

    #[test]
    fn run_json_names_the_variables_a_jobs_secrets_came_from_never_their_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut job = Job::fixture(dir.path(), "m/c", 1);
        // `HF_TOKEN: "pre-${CALLER_A}"`, `WANDB_API_KEY: literal`, and no secret.
        job.env
            .insert("HF_TOKEN".into(), "pre-hf-fed-value-77".into());
        job.took_from_caller("CALLER_A", "hf-fed-value-77");
        job.env
            .insert("WANDB_API_KEY".into(), "literal-in-the-case".into());
        job.env.insert("TOKENIZER_TYPE".into(), "GPT2BPE".into());
        let secrets = secret_values(&job);
        let names: Vec<String> = secrets.iter().map(|(n, _)| n.clone()).collect();
        assert!(secrets.contains(&("CALLER_A".to_owned(), b"hf-fed-value-77".to_vec())));
        for (name, recorded) in [
            ("CALLER_A", true),
            ("WANDB_API_KEY", true),
            ("HF_TOKEN", false),
            ("TOKENIZER_TYPE", false),
        ] {
            assert_eq!(
                names.contains(&name.to_owned()),
                recorded,
                "{name}: {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("fed-value")), "{names:?}");
    }

    #[test]
    fn save_marks_pair_saving_and_saved_lines_by_iteration() {
        let mut parser = LogParser::new();
        let mut m = SaveMarks::default();
        for (line, t) in [(SAVING_10, 1.0), (SAVED_10, 2.5), (SAVING_20, 4.0)] {
            let parsed = parser.feed(line).unwrap();
            m.see(&parsed.event, t);
        }
        assert_eq!(m.list(), vec![(1.0, Some(2.5), 10), (4.0, None, 20)]);
    }

    #[test]
    fn a_secret_of_the_jobs_environment_reaches_neither_the_tail_nor_the_failure_line() {
        let env = BTreeMap::from([("HF_TOKEN".to_owned(), "hf_fromcaller123".to_owned())]);
        let mut watch = LogWatch::new().redacting(redactor(&env, &[]));
        for line in [
            &b"Traceback (most recent call last):"[..],
            b"  File \"x.py\", line 1",
            b"RuntimeError: bad token hf_fromcaller123",
        ] {
            watch.feed(&[line, b"\n"].concat(), &mut |_| {}, &mut |_| {});
        }
        let (summary, _, tail) = watch.finish_with_tail();
        let (line, lines) = diagnosis(&summary, tail, false);
        assert_eq!(line.as_deref(), Some("RuntimeError: bad token <redacted>"));
        assert!(
            lines.iter().all(|l| !l.contains("hf_fromcaller")),
            "{lines:?}"
        );
    }

    #[test]
    fn steps_and_saves_become_events_and_every_line_is_counted() {
        let mut watch = LogWatch::new();
        let mut events = Vec::new();
        let step = b" [2026-11-29 20:16:14.1] iteration        3/      30 | consumed samples:           48 | elapsed time per iteration (ms): 10.0 | lm loss: 1.000000E+01 |";
        for line in [&step[..], b"not a megatron line", SAVING_10] {
            watch.feed(
                &[line, b"\n"].concat(),
                &mut |e| events.push(e),
                &mut |_| {},
            );
        }
        assert_eq!(
            events,
            [
                ExecEvent::Step {
                    step: 3,
                    of: Some(30),
                    iteration_ms: Some(10.0)
                },
                ExecEvent::CheckpointSave { iteration: 10 }
            ]
        );
        let (summary, marks) = watch.finish();
        assert_eq!(summary.lines, 3);
        assert_eq!(marks.len(), 1);
    }
}
