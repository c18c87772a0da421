//! Stage "observe", log parser: the events one log line turns into. Events borrow from the
//! line they came from, so parsing a line allocates nothing; the summary copies what it keeps.

use std::borrow::Cow;

use jiff::civil::DateTime;
use serde::{Deserialize, Serialize};

use super::scan;

/// One recognised line: who printed it, when, and what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine<'a> {
    /// The rank from a torchrun `[defaultN]:` / `[rankN]:` prefix.
    pub rank: Option<u32>,
    /// The leading ` [YYYY-MM-DD HH:MM:SS.ffffff]` (local time of the job; no zone in the log).
    pub time: Option<DateTime>,
    /// What the line says.
    pub event: LogEvent<'a>,
}

/// What a line says.
#[derive(Clone, Debug, PartialEq)]
pub enum LogEvent<'a> {
    /// `iteration N/M | name: value | ...`.
    Iteration(IterationLine<'a>),
    /// `[Rank R] (NAME) memory (MB) | allocated: ... | ...`.
    Memory(Box<MemoryReport>),
    /// One row of a timer block (`(min, max)`, `max` or `all` option).
    Timer(TimerLine<'a>),
    /// `saving checkpoint at iteration N to DIR in FORMAT format`.
    CheckpointSaving {
        iteration: u64,
        dir: Cow<'a, str>,
        format: Option<Cow<'a, str>>,
    },
    /// `successfully saved checkpoint from iteration N to DIR [...]`.
    CheckpointSaved { iteration: u64 },
    /// `scheduled an async checkpoint save at iteration N to DIR`.
    CheckpointScheduled { iteration: u64 },
    /// `WARNING: Starting a checkpoint save before previous has finished.`
    OverlappingSave,
    /// `[after training is done] datetime: ...` (the text after `datetime:`).
    TrainingDone { datetime: Cow<'a, str> },
    /// `exiting program at iteration N`.
    Exiting { iteration: u64 },
    /// A failure marker anywhere in the line.
    Failure { kind: FailureKind, line: &'a [u8] },
}

/// An iteration line. The `name: value` fields are read lazily by [`IterationLine::fields`].
#[derive(Clone, Debug, PartialEq)]
pub struct IterationLine<'a> {
    /// N in `iteration N/M`.
    pub iteration: u64,
    /// M in `iteration N/M` (the run's `--train-iters`).
    pub train_iters: Option<u64>,
    /// The text after `N/M`: `| name: value | name: value |`.
    pub(crate) rest: &'a [u8],
}

impl<'a> IterationLine<'a> {
    /// Every `name: number` field in line order, names exactly as printed (`lm loss`,
    /// `elapsed time per iteration (ms)`); fields whose value is not a number are skipped.
    pub fn fields(&self) -> Fields<'a> {
        Fields { rest: self.rest }
    }
}

/// Iterator over an iteration line's `name: number` fields.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Like [`Iterator::next`], and also returns the field's *lead*: the text from where the
    /// iterator stood up to the value (`| lm loss: `, with any skipped fields before it).
    pub(crate) fn next_with_lead(&mut self) -> Option<(&'a [u8], f64, &'a [u8])> {
        let start = self.rest;
        // One `memchr2` per field: find the colon (or an empty `|` segment), then parse the
        // number in place and step over the `|` after it.
        loop {
            let i = memchr::memchr2(b':', b'|', self.rest)?;
            if self.rest[i] == b'|' {
                self.rest = &self.rest[i + 1..];
                continue;
            }
            let name = scan::trim(&self.rest[..i]);
            let value = scan::trim_start(&self.rest[i + 1..]);
            match scan::float_prefix(value).map(|(v, rest)| (v, scan::trim_start(rest))) {
                Some((v, rest)) if rest.first().is_none_or(|b| *b == b'|') => {
                    self.rest = rest.get(1..).unwrap_or_default();
                    if !name.is_empty() {
                        let lead = &start[..start.len() - value.len()];
                        return Some((name, v, lead));
                    }
                }
                // Not a number (`note: text |`): skip to the next field.
                _ => {
                    self.rest = match memchr::memchr(b'|', value) {
                        Some(j) => &value[j + 1..],
                        None => &[],
                    };
                }
            }
        }
    }

    /// The next field's value if the text before it is exactly `lead`, the lead that field
    /// had on an earlier line; otherwise `None`, with the iterator unchanged. Iteration lines
    /// repeat their fields in the same order, so this skips finding and comparing the name.
    ///
    /// A hit returns what [`Iterator::next`] would: on the lead's bytes `next` makes the same
    /// decisions as it did on the earlier line (it searches for `:` and `|` and parses numbers,
    /// and none of that reads past the `:` that ends a lead), so it arrives at the same value
    /// under the same name. The value must not start with a blank, which would mean the lead
    /// (its padding) is longer on this line.
    #[inline(always)]
    pub(crate) fn next_after(&mut self, lead: &[u8]) -> Option<f64> {
        let value = scan::after_word(self.rest, lead)?;
        if matches!(value.first(), Some(b' ' | b'\t')) {
            return None;
        }
        let (v, rest) = scan::float_prefix(value)?;
        self.rest = match scan::trim_start(rest) {
            [] => &[],
            [b'|', tail @ ..] => tail,
            _ => return None,
        };
        Some(v)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_with_lead().map(|(name, v, _)| (name, v))
    }
}

/// Megatron's memory report, in MB as printed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// R in `[Rank R]`.
    pub rank: Option<u32>,
    /// What the report is for.
    pub point: MemoryPoint,
    /// The four numbers (MB).
    pub mb: MemoryMb,
    /// `| total device memory used: X` when present (as printed).
    pub total_used: Option<f64>,
}

/// The four numbers of a memory report, MB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryMb {
    pub allocated: f64,
    pub max_allocated: f64,
    pub reserved: f64,
    pub max_reserved: f64,
}

impl MemoryMb {
    /// Field-wise maximum (combining ranks).
    pub fn max(self, o: MemoryMb) -> MemoryMb {
        MemoryMb {
            allocated: self.allocated.max(o.allocated),
            max_allocated: self.max_allocated.max(o.max_allocated),
            reserved: self.reserved.max(o.reserved),
            max_reserved: self.max_reserved.max(o.max_reserved),
        }
    }
}

/// The name in parentheses of a memory report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "at", content = "iteration")]
pub enum MemoryPoint {
    /// `(after N iterations)`.
    AfterIterations(u64),
    /// `(before save_checkpoint for iteration N)`.
    BeforeSave(u64),
    /// `(after save_checkpoint for iteration N)`.
    AfterSave(u64),
    /// Any other name, as printed.
    Other(String),
}

/// One timer row.
#[derive(Clone, Debug, PartialEq)]
pub struct TimerLine<'a> {
    /// The timer name (`save-checkpoint`, `forward-backward`, ...).
    pub name: Cow<'a, str>,
    /// Counts timer blocks (header lines) seen so far, so rows of one block can be grouped.
    pub block: u64,
    /// The value(s), ms.
    pub value: TimerValue,
}

/// A timer row's value under each `--timing-log-option`, ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimerValue {
    /// `minmax` (default): `name ....: (min, max)`.
    MinMax { min: f64, max: f64 },
    /// `max`: `name ....: max`.
    Max(f64),
    /// `all`: one `rank NN: t` row per rank.
    Rank { rank: u32, ms: f64 },
}

impl TimerValue {
    /// (min, max) of this row, ms.
    pub fn range(self) -> (f64, f64) {
        match self {
            TimerValue::MinMax { min, max } => (min, max),
            TimerValue::Max(v) | TimerValue::Rank { ms: v, .. } => (v, v),
        }
    }
}

/// A failure marker's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// `CUDA out of memory`, NCCL `Cuda failure 2 'out of memory'`.
    Oom,
    /// `Some NCCL operations have failed or timed out.`
    NcclTimeout,
    /// `illegal memory access`.
    IllegalMemoryAccess,
    /// `Segmentation fault`.
    Segfault,
    /// `found NaN in`.
    Nan,
    /// `TimeoutError`.
    Timeout,
}

impl FailureKind {
    /// Whether Megatron's CI retries a job that failed this way (its list of flaky markers);
    /// out of memory is not on that list.
    pub fn flaky(self) -> bool {
        !matches!(self, FailureKind::Oom)
    }

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Oom => "out of memory",
            FailureKind::NcclTimeout => "nccl timeout",
            FailureKind::IllegalMemoryAccess => "illegal memory access",
            FailureKind::Segfault => "segmentation fault",
            FailureKind::Nan => "nan",
            FailureKind::Timeout => "timeout",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_skip_non_numbers_and_keep_order() {
        let line = IterationLine {
            iteration: 1,
            train_iters: None,
            rest: b" | lm loss: 2.5E+00 | note: text | | grad norm: 2.210 |",
        };
        let got: Vec<_> = line.fields().collect();
        assert_eq!(got, vec![(&b"lm loss"[..], 2.5), (&b"grad norm"[..], 2.21)]);
    }

    #[test]
    fn only_oom_is_not_flaky() {
        assert!(!FailureKind::Oom.flaky());
        assert!(FailureKind::NcclTimeout.flaky() && FailureKind::Nan.flaky());
    }
}
