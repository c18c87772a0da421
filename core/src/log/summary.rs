//! Stage "observe", log parser: [`LogSummary`], everything goldgate keeps from one log —
//! per-step metrics under golden names, memory reports, checkpoint saves with their blocking
//! time and async latency, timers and failures — and [`SummaryBuilder`], which folds
//! [`LogLine`]s into it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use jiff::civil::DateTime;
use serde::{Deserialize, Serialize};

use super::event::{
    FailureKind, LogEvent, LogLine, MemoryMb, MemoryPoint, MemoryReport, TimerLine,
};
use super::scan::shift10;
use super::series::{BYTES_PER_MB, SeriesSet, Steps};

/// Failures kept verbatim (all are counted).
const MAX_FAILURES: usize = 100;
/// Bytes of a failure line kept.
const MAX_FAILURE_TEXT: usize = 400;

/// Everything goldgate keeps from one Megatron log (`extract --format json` prints this).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogSummary {
    /// Lines read.
    pub lines: u64,
    /// Lines longer than the reader's cap, cut to it.
    pub long_lines: u64,
    /// Ranks seen in torchrun `[defaultN]:` prefixes.
    pub ranks: Vec<u32>,
    /// Iteration lines seen.
    pub steps_seen: u64,
    /// First and last iteration printed.
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    /// M of `iteration N/M`.
    pub train_iters: Option<u64>,
    /// Golden name → step → value, in golden units (`iteration-time` in seconds,
    /// `mem-*-bytes` in bytes = MB × 1024²). Non-finite values are written as `"nan"`/`"inf"`.
    pub metrics: BTreeMap<String, Steps>,
    /// Every memory report, in order (MB as printed).
    pub memory: Vec<MemoryReport>,
    /// Checkpoint saves in the order they started.
    pub checkpoints: Vec<CheckpointSave>,
    /// Per timer name: blocks seen and the largest max, ms.
    pub timers: BTreeMap<String, TimerStats>,
    /// `WARNING: Starting a checkpoint save before previous has finished.` lines.
    pub overlapping_saves: u64,
    /// The text of `[after training is done] datetime: ...`.
    pub training_done: Option<String>,
    /// N of `exiting program at iteration N`.
    pub exit_iteration: Option<u64>,
    /// The first failures (lines cut to a sane length).
    pub failures: Vec<Failure>,
    /// Failure lines per kind (all of them).
    pub failure_counts: BTreeMap<FailureKind, u64>,
}

/// One checkpoint save, from its log lines, the timer that follows it and memory reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointSave {
    pub iteration: u64,
    pub dir: Option<String>,
    pub format: Option<String>,
    /// `scheduled an async checkpoint save` was seen.
    #[serde(rename = "async")]
    pub is_async: bool,
    /// `successfully saved` was seen.
    pub completed: bool,
    pub saving_at: Option<DateTime>,
    pub scheduled_at: Option<DateTime>,
    pub saved_at: Option<DateTime>,
    /// The timer that gave the blocking time (`save-checkpoint`, `save-checkpoint-non-persistent`).
    pub timer: Option<String>,
    /// Blocking time of `save_checkpoint()`, min and max across ranks, seconds.
    pub blocking_min_s: Option<f64>,
    pub blocking_max_s: Option<f64>,
    /// `saving` → `successfully saved`, seconds (timestamped logs only).
    pub wall_s: Option<f64>,
    /// `scheduled` → `successfully saved`, seconds (async saves in timestamped logs only).
    pub async_latency_s: Option<f64>,
    /// This save started before the previous async save finished: Megatron warned `Starting a
    /// checkpoint save before previous has finished` before its `saving` line, or the previous
    /// save's `successfully saved` line had not come yet. Its blocking time includes waiting
    /// for the previous write.
    #[serde(default)]
    pub started_before_previous_finished: bool,
    /// This async save was still being written when the next save started: its latency ends
    /// when the next save finalized it, so it measures the save schedule, not the write.
    #[serde(default)]
    pub overlapped_by_next: bool,
    /// From `(before/after save_checkpoint for iteration N)`, max over ranks, MB.
    pub memory_before: Option<MemoryMb>,
    pub memory_after: Option<MemoryMb>,
    #[serde(skip)]
    timer_block: Option<u64>,
}

/// A timer's totals over the log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerStats {
    /// Timer blocks that printed this timer.
    pub blocks: u64,
    /// The largest value, ms.
    pub max_ms: f64,
    #[serde(skip)]
    last_block: u64,
}

/// A failure marker line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    /// Whether Megatron's CI would retry the job.
    pub flaky: bool,
    pub rank: Option<u32>,
    /// The line (lossy UTF-8, cut to 400 bytes).
    pub line: String,
}

/// Folds parsed lines into a [`LogSummary`].
#[derive(Debug, Default)]
pub struct SummaryBuilder {
    summary: LogSummary,
    series: SeriesSet,
    ranks: BTreeSet<u32>,
    /// Timers in the order first seen, moved into `summary.timers` at the end. A timer block
    /// prints its rows in the same order every time, so the row after timer `i` is almost
    /// always timer `i + 1`: one name comparison instead of a map lookup.
    timers: Vec<(String, TimerStats)>,
    next_timer: usize,
    /// Iteration → index of its latest save in `summary.checkpoints` (a long run saves
    /// thousands of times; searching the list for every save line would be quadratic).
    latest_save: HashMap<u64, usize>,
    /// An overlap warning was seen and no save has started since: it is about the next one.
    pending_overlap: bool,
}

impl SummaryBuilder {
    /// Adds one parsed line.
    pub fn add(&mut self, line: &LogLine<'_>) {
        if let Some(r) = line.rank {
            self.ranks.insert(r);
        }
        let time = line.time;
        match &line.event {
            LogEvent::Iteration(it) => {
                let s = &mut self.summary;
                s.steps_seen += 1;
                s.first_step.get_or_insert(it.iteration);
                s.last_step = Some(it.iteration);
                s.train_iters = it.train_iters.or(s.train_iters);
                self.series.push_line(it.iteration, it.fields());
            }
            LogEvent::Memory(m) => self.memory(m),
            LogEvent::Timer(t) => self.timer(t),
            LogEvent::CheckpointSaving {
                iteration,
                dir,
                format,
            } => {
                let overlap = self.overlap_before(*iteration);
                let c = self.save_for(*iteration, |c| c.dir.is_none() && !c.completed);
                c.dir = Some(dir.to_string());
                c.format = format.as_ref().map(|f| f.to_string());
                c.saving_at = time;
                c.started_before_previous_finished |= overlap;
            }
            LogEvent::CheckpointScheduled { iteration } => {
                let c = self.save_for(*iteration, |c| !c.is_async && !c.completed);
                c.is_async = true;
                c.scheduled_at = time;
            }
            LogEvent::CheckpointSaved { iteration } => {
                let c = self.save_for(*iteration, |c| !c.completed);
                c.completed = true;
                c.saved_at = time;
            }
            LogEvent::OverlappingSave => {
                self.summary.overlapping_saves += 1;
                self.pending_overlap = true;
            }
            LogEvent::TrainingDone { datetime } => {
                self.summary.training_done = Some(datetime.to_string())
            }
            LogEvent::Exiting { iteration } => self.summary.exit_iteration = Some(*iteration),
            LogEvent::Failure { kind, line: text } => self.failure(*kind, line.rank, text),
        }
    }

    /// Records how many lines were read and how many were cut.
    pub fn set_line_counts(&mut self, lines: u64, long_lines: u64) {
        self.summary.lines = lines;
        self.summary.long_lines = long_lines;
    }

    /// The finished summary, with derived checkpoint durations.
    pub fn finish(self) -> LogSummary {
        let mut s = self.summary;
        s.metrics = self.series.finish();
        s.ranks = self.ranks.into_iter().collect();
        for c in &mut s.checkpoints {
            // Timestamps are printed to the microsecond: seconds in decimal, never 1.8394529999.
            let secs = |a: Option<DateTime>, b: Option<DateTime>| {
                let micros = b?.duration_since(a?).as_micros();
                Some(shift10(micros as f64, -6))
            };
            c.wall_s = secs(c.saving_at, c.saved_at);
            c.async_latency_s = if c.is_async {
                secs(c.scheduled_at, c.saved_at)
            } else {
                None
            };
            c.timer_block = None;
        }
        // Block counters only group rows while parsing; a finished summary equals its JSON.
        s.timers = self
            .timers
            .into_iter()
            .map(|(name, mut stats)| {
                stats.last_block = 0;
                (name, stats)
            })
            .collect();
        s
    }

    /// Whether the save of `iteration` about to start overlaps the previous save (Megatron's
    /// warning came before it, or the previous async save has not completed); marks the
    /// previous save when it does.
    fn overlap_before(&mut self, iteration: u64) -> bool {
        let warned = std::mem::take(&mut self.pending_overlap);
        let saves = &mut self.summary.checkpoints;
        let Some(prev) = saves.iter_mut().rev().find(|c| c.iteration != iteration) else {
            return warned;
        };
        let unfinished = prev.is_async && !prev.completed;
        if prev.is_async && (warned || unfinished) {
            prev.overlapped_by_next = true;
        }
        warned || unfinished
    }

    /// The latest save of `iteration` if `fits` it, else a new one.
    fn save_for(
        &mut self,
        iteration: u64,
        fits: impl Fn(&CheckpointSave) -> bool,
    ) -> &mut CheckpointSave {
        let saves = &mut self.summary.checkpoints;
        let found = self
            .latest_save
            .get(&iteration)
            .copied()
            .filter(|&i| fits(&saves[i]));
        let i = match found {
            Some(i) => i,
            None => {
                saves.push(CheckpointSave {
                    iteration,
                    ..CheckpointSave::default()
                });
                self.latest_save.insert(iteration, saves.len() - 1);
                saves.len() - 1
            }
        };
        &mut saves[i]
    }

    fn memory(&mut self, m: &MemoryReport) {
        match m.point {
            MemoryPoint::AfterIterations(step) => {
                let metrics = [
                    ("mem-allocated-bytes", m.mb.allocated),
                    ("mem-max-allocated-bytes", m.mb.max_allocated),
                    ("mem-reserved-bytes", m.mb.reserved),
                    ("mem-max-reserved-bytes", m.mb.max_reserved),
                ];
                for (key, mb) in metrics {
                    self.series.push_key(key, step, mb * BYTES_PER_MB);
                }
            }
            MemoryPoint::BeforeSave(it) => {
                let c = self.save_for(it, |_| true);
                c.memory_before = Some(c.memory_before.map_or(m.mb, |b| b.max(m.mb)));
            }
            MemoryPoint::AfterSave(it) => {
                let c = self.save_for(it, |_| true);
                c.memory_after = Some(c.memory_after.map_or(m.mb, |b| b.max(m.mb)));
            }
            MemoryPoint::Other(_) => {}
        }
        self.summary.memory.push(m.clone());
    }

    fn timer(&mut self, t: &TimerLine<'_>) {
        let (min_ms, max_ms) = t.value.range();
        let name = t.name.as_ref();
        let i = match self.timers.get(self.next_timer) {
            Some((n, _)) if n == name => self.next_timer,
            _ => match self.timers.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    self.timers.push((name.to_owned(), TimerStats::default()));
                    self.timers.len() - 1
                }
            },
        };
        self.next_timer = i + 1;
        let stats = &mut self.timers[i].1;
        if stats.last_block != t.block || stats.blocks == 0 {
            stats.blocks += 1;
            stats.last_block = t.block;
        }
        stats.max_ms = stats.max_ms.max(max_ms);
        if !t.name.starts_with("save-checkpoint") {
            return;
        }
        // The timer follows the save it measures: the latest save, unless an earlier timer
        // block already measured it.
        let Some(c) = self.summary.checkpoints.last_mut() else {
            return;
        };
        let (min_s, max_s) = (shift10(min_ms, -3), shift10(max_ms, -3));
        match c.timer_block {
            None => {
                c.timer_block = Some(t.block);
                c.timer = Some(t.name.to_string());
                c.blocking_min_s = Some(min_s);
                c.blocking_max_s = Some(max_s);
            }
            Some(b) if b == t.block && c.timer.as_deref() == Some(t.name.as_ref()) => {
                c.blocking_min_s = c.blocking_min_s.map(|v| v.min(min_s));
                c.blocking_max_s = c.blocking_max_s.map(|v| v.max(max_s));
            }
            Some(_) => {}
        }
    }

    fn failure(&mut self, kind: FailureKind, rank: Option<u32>, text: &[u8]) {
        *self.summary.failure_counts.entry(kind).or_default() += 1;
        if self.summary.failures.len() >= MAX_FAILURES {
            return;
        }
        let text = &text[..text.len().min(MAX_FAILURE_TEXT)];
        let line = String::from_utf8_lossy(super::scan::trim(text)).into_owned();
        self.summary.failures.push(Failure {
            kind,
            flaky: kind.flaky(),
            rank,
            line,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::log::LogParser;

    fn summarize(lines: &[&str]) -> LogSummary {
        let mut p = LogParser::new();
        let mut b = SummaryBuilder::default();
        for l in lines {
            if let Some(parsed) = p.feed(l.as_bytes()) {
                b.add(&parsed);
            }
        }
        b.finish()
    }

    #[test]
    fn all_option_rows_of_one_block_give_min_and_max() {
        let s = summarize(&[
            "saving checkpoint at iteration 5 to /c in torch format",
            "successfully saved checkpoint from iteration 5 to /c [ t 1/1, p 1/1 ]",
            "times across ranks (ms):",
            "  save-checkpoint:",
            "     rank  0: 2000.00",
            "     rank  1: 1000.00",
            "     rank  2: 1500.00",
            "times across ranks (ms):",
            "  save-checkpoint:",
            "     rank  0: 9999.00",
        ]);
        let c = &s.checkpoints[0];
        assert_eq!((c.blocking_min_s, c.blocking_max_s), (Some(1.0), Some(2.0)));
        assert_eq!(
            (
                s.timers["save-checkpoint"].blocks,
                s.timers["save-checkpoint"].max_ms
            ),
            (2, 9999.0)
        );
    }

    #[test]
    fn a_memory_report_before_the_saving_line_joins_that_save() {
        let mem = |name: &str, a: f64| {
            format!(
                "[Rank 0] ({name}) memory (MB) | allocated: {a} | max allocated: {a} | reserved: 1 | max reserved: 1"
            )
        };
        let s = summarize(&[
            &mem("before save_checkpoint for iteration 5", 10.0),
            "[2026-01-01 00:00:00.000000] saving checkpoint at iteration 5 to /c in torch format",
            "[2026-01-01 00:00:02.500000] successfully saved checkpoint from iteration 5 to /c",
            &mem("after save_checkpoint for iteration 5", 12.0),
            "saving checkpoint at iteration 5 to /c in torch format",
        ]);
        assert_eq!(
            s.checkpoints.len(),
            2,
            "a second save of the same iteration is a new save"
        );
        let c = &s.checkpoints[0];
        assert_eq!(c.memory_before.unwrap().allocated, 10.0);
        assert_eq!(c.memory_after.unwrap().allocated, 12.0);
        assert_eq!(
            (c.wall_s, c.async_latency_s, c.completed),
            (Some(2.5), None, true)
        );
        assert!(!s.checkpoints[1].completed);
    }

    #[test]
    fn failures_are_counted_past_the_kept_ones() {
        let lines = vec!["TimeoutError: x"; MAX_FAILURES + 5];
        let s = summarize(&lines);
        assert_eq!(s.failures.len(), MAX_FAILURES);
        assert_eq!(
            s.failure_counts[&FailureKind::Timeout],
            MAX_FAILURES as u64 + 5
        );
    }

    #[test]
    fn nan_values_round_trip_through_json_as_text() {
        let s = summarize(&[" iteration 1/2 | lm loss: nan | grad norm: inf |"]);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""lm loss":{"1":"nan"}"#), "{json}");
        let back: LogSummary = serde_json::from_str(&json).unwrap();
        assert!(back.metrics["lm loss"][1].is_nan());
        assert_eq!(back.metrics["grad-norm"][1], f64::INFINITY);
    }
}
