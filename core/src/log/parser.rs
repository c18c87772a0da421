//! Stage "observe", log parser: [`LogParser`] turns one Megatron stdout line into a
//! [`LogLine`]. It is fed line by line as output arrives, and dispatches on the first byte of
//! the line so most lines cost one or two scans. Its state is what a timer block needs plus
//! what repeating text parsed to last time (a timestamp's minute, a timer block's row heads),
//! reused only when the same bytes come again.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind, packed};
use jiff::civil::{Date, DateTime};

use super::event::{
    FailureKind, IterationLine, LogEvent, LogLine, MemoryMb, MemoryPoint, MemoryReport, TimerLine,
    TimerValue,
};
use super::scan::{self, after, trim, trim_start, uint};

/// Failure markers (megatron-format.md §4), searched for anywhere in a line that is not one
/// of the structured kinds.
pub(super) const MARKERS: [(&str, FailureKind); 8] = [
    (
        "Some NCCL operations have failed or timed out",
        FailureKind::NcclTimeout,
    ),
    ("illegal memory access", FailureKind::IllegalMemoryAccess),
    ("Segmentation fault", FailureKind::Segfault),
    ("found NaN in", FailureKind::Nan),
    ("TimeoutError", FailureKind::Timeout),
    ("OutOfMemoryError", FailureKind::Oom),
    ("CUDA out of memory", FailureKind::Oom),
    ("Cuda failure 2 'out of memory'", FailureKind::Oom),
];

/// Which timer block the parser is inside (the header line says which option printed it).
#[derive(Clone, Debug, PartialEq)]
enum TimerMode {
    Off,
    MinMax,
    Max,
    /// `all`: the timer whose `rank NN:` rows follow, once its `  name:` row was seen.
    All(Option<String>),
}

/// What dispatching a line found.
enum Found<'a> {
    Event(LogEvent<'a>),
    /// A line that is understood but yields no event (a timer header, an `all` name row).
    Consumed,
    Unknown,
}

/// Streaming parser of Megatron-LM training stdout. Feed it every line, in order.
pub struct LogParser {
    markers: Markers,
    timer: TimerMode,
    block: u64,
    /// The first bytes of the last timestamp (`[YYYY-MM-DD HH:MM`) and what they say:
    /// consecutive lines mostly differ from the second on.
    minute: Option<([u8; scan::MINUTE_LEN], (Date, i8, i8))>,
    /// The heads of the last `(min, max)` or `max` block's rows, in order, and the index of
    /// the row to come: blocks print the same timers in the same order.
    row_heads: Vec<RowHead>,
    next_row: usize,
}

/// A timer row up to its first `:` (`    save-checkpoint ......:`), and where the timer's
/// name lies in it. A row that starts with these bytes splits at the same place.
#[derive(Debug)]
struct RowHead {
    bytes: Vec<u8>,
    name: Range<usize>,
}

/// The failure-marker search. Most lines are searched and few match, so the per-call cost
/// counts: the packed (Teddy, SIMD) searcher alone costs less per line than the full
/// automaton, which remains for CPUs Teddy does not support.
enum Markers {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Markers {
    fn new() -> Markers {
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(MARKERS.iter().map(|(p, _)| p))
            .build();
        match packed {
            Some(searcher) => Markers::Packed(searcher),
            None => Markers::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(MARKERS.iter().map(|(p, _)| p))
                    .expect("the failure markers are constant, valid patterns"),
            ),
        }
    }

    /// The kind of the leftmost marker in `line`.
    fn find(&self, line: &[u8]) -> Option<FailureKind> {
        let pattern = match self {
            Markers::Packed(s) => s.find(line)?.pattern(),
            Markers::Automaton(a) => a.find(line)?.pattern(),
        };
        MARKERS.get(pattern.as_usize()).map(|m| m.1)
    }
}

impl Default for LogParser {
    fn default() -> Self {
        LogParser::new()
    }
}

impl LogParser {
    /// A parser at the start of a log.
    pub fn new() -> LogParser {
        LogParser {
            markers: Markers::new(),
            timer: TimerMode::Off,
            block: 0,
            minute: None,
            row_heads: Vec::new(),
            next_row: 0,
        }
    }

    /// The timestamp at the start of `s` and the rest after it; the date and time up to the
    /// minute are parsed again only when those bytes changed.
    fn timestamp<'a>(&mut self, s: &'a [u8]) -> Option<(DateTime, &'a [u8])> {
        let head = *s.first_chunk::<{ scan::MINUTE_LEN }>()?;
        let minute = match self.minute {
            Some((seen, minute)) if seen == head => minute,
            _ => {
                let minute = scan::timestamp_minute(s)?;
                self.minute = Some((head, minute));
                minute
            }
        };
        scan::timestamp_at(minute, s)
    }

    /// Parses one line (without its `\n`; a trailing `\r` is ignored). Returns `None` for
    /// lines that carry nothing goldgate keeps.
    pub fn feed<'a>(&mut self, line: &'a [u8]) -> Option<LogLine<'a>> {
        self.feed_checked(line, true)
    }

    /// [`LogParser::feed`]; `markers` false when the caller knows the line holds no failure
    /// marker ([`super::stream`] searched its whole chunk at once), which skips that search.
    pub(super) fn feed_checked<'a>(
        &mut self,
        line: &'a [u8],
        markers: bool,
    ) -> Option<LogLine<'a>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (rank, body) = torchrun_prefix(line);
        if self.timer != TimerMode::Off {
            match self.timer_row(body) {
                Found::Event(event) => {
                    return Some(LogLine {
                        rank,
                        time: None,
                        event,
                    });
                }
                Found::Consumed => return None,
                Found::Unknown => self.timer = TimerMode::Off,
            }
        }
        let body = trim_start(body);
        let (time, body) = match body.first() {
            Some(b'[') => match self.timestamp(body) {
                Some((t, rest)) => (Some(t), trim_start(rest)),
                None => (None, body),
            },
            _ => (None, body),
        };
        let event = match self.dispatch(body) {
            Found::Event(e) => e,
            Found::Consumed => return None,
            Found::Unknown if markers => self.failure(line)?,
            Found::Unknown => return None,
        };
        Some(LogLine { rank, time, event })
    }

    /// Structured kinds, chosen by the first byte.
    fn dispatch<'a>(&mut self, s: &'a [u8]) -> Found<'a> {
        let event = match s.first() {
            Some(b'i') => iteration(s),
            Some(b'[') => memory(s).or_else(|| training_done(s)),
            Some(b's') => checkpoint(s),
            Some(b'e') => after(s, b"exiting program at iteration")
                .and_then(uint)
                .map(|(iteration, _)| LogEvent::Exiting { iteration }),
            Some(b'W') => after(
                s,
                b"WARNING: Starting a checkpoint save before previous has finished",
            )
            .map(|_| LogEvent::OverlappingSave),
            Some(b'I' | b'(' | b'm' | b't') => return self.timer_header(s),
            _ => None,
        };
        event.map_or(Found::Unknown, Found::Event)
    }

    /// `[INFO:megatron.core.timers:]` then one of the three timer headers.
    fn timer_header<'a>(&mut self, s: &'a [u8]) -> Found<'a> {
        let s = after(s, b"INFO:megatron.core.timers:").unwrap_or(s);
        let mode = match scan::trim_end(s) {
            b"(min, max) time across ranks (ms):" => TimerMode::MinMax,
            b"max time across ranks (ms):" => TimerMode::Max,
            b"times across ranks (ms):" => TimerMode::All(None),
            _ => return Found::Unknown,
        };
        self.timer = mode;
        self.block += 1;
        self.next_row = 0;
        Found::Consumed
    }

    /// A `(min, max)` or `max` row's name and value text. A row that starts with the head
    /// the same row had in the last block is split there without searching.
    fn min_max_row<'a>(&mut self, s: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let i = self.next_row;
        self.next_row += 1;
        if let Some(head) = self.row_heads.get(i)
            && let Some(rest) = scan::after_word(s, &head.bytes)
        {
            return Some((&s[head.name.clone()], trim(rest)));
        }
        if !matches!(s.first(), Some(b' ' | b'\t')) {
            return None;
        }
        let blanks = s.len() - trim_start(s).len();
        let colon = blanks + memchr::memchr(b':', trim(s))?;
        let name = timer_name(&s[blanks..colon]);
        let head = RowHead {
            bytes: s[..=colon].to_vec(),
            name: blanks + name.start..blanks + name.end,
        };
        let found = (&s[head.name.clone()], trim(&s[colon + 1..]));
        if i < self.row_heads.len() {
            self.row_heads[i] = head;
        } else if i == self.row_heads.len() {
            self.row_heads.push(head);
        }
        Some(found)
    }

    /// An indented row inside a timer block.
    fn timer_row<'a>(&mut self, s: &'a [u8]) -> Found<'a> {
        let value = match self.timer {
            TimerMode::Off => return Found::Unknown,
            TimerMode::All(_) => return self.rank_row(s),
            TimerMode::MinMax => self.min_max_row(s).and_then(|(name, value)| {
                let (min, max) = min_max(value)?;
                Some((name, TimerValue::MinMax { min, max }))
            }),
            TimerMode::Max => self
                .min_max_row(s)
                .and_then(|(name, value)| Some((name, TimerValue::Max(scan::float(value)?)))),
        };
        match value {
            Some((name, value)) => Found::Event(LogEvent::Timer(TimerLine {
                name: text(name),
                block: self.block,
                value,
            })),
            None => Found::Unknown,
        }
    }

    /// A row of an `all` block: `  name:` (the timer of the rows that follow) or
    /// `rank NN: t`.
    fn rank_row<'a>(&mut self, s: &'a [u8]) -> Found<'a> {
        if !matches!(s.first(), Some(b' ' | b'\t')) {
            return Found::Unknown;
        }
        let s = trim(s);
        let Some(colon) = memchr::memchr(b':', s) else {
            return Found::Unknown;
        };
        let (head, value) = (&s[..colon], trim(&s[colon + 1..]));
        let TimerMode::All(current) = &mut self.timer else {
            return Found::Unknown;
        };
        if value.is_empty() {
            *current = Some(String::from_utf8_lossy(head).into_owned());
            return Found::Consumed;
        }
        let rank = after(head, b"rank")
            .and_then(uint)
            .filter(|(_, r)| r.is_empty());
        match (rank, scan::float(value), current.as_ref()) {
            (Some((rank, _)), Some(ms), Some(name)) => {
                let rank = u32::try_from(rank).unwrap_or(u32::MAX);
                Found::Event(LogEvent::Timer(TimerLine {
                    name: Cow::Owned(name.clone()),
                    block: self.block,
                    value: TimerValue::Rank { rank, ms },
                }))
            }
            _ => Found::Unknown,
        }
    }

    /// A failure marker anywhere in the line.
    fn failure<'a>(&self, line: &'a [u8]) -> Option<LogEvent<'a>> {
        let kind = self.markers.find(line)?;
        Some(LogEvent::Failure { kind, line })
    }
}

/// Strips up to two torchrun prefixes (`[default3]:`, `[rank3]:`); returns the last rank.
fn torchrun_prefix(mut s: &[u8]) -> (Option<u32>, &[u8]) {
    let mut rank = None;
    for _ in 0..2 {
        if s.first() != Some(&b'[') {
            break;
        }
        let Some(rest) = after(s, b"[default").or_else(|| after(s, b"[rank")) else {
            break;
        };
        let Some((r, rest)) = uint(rest).filter(|(_, rest)| rest.starts_with(b"]:")) else {
            break;
        };
        rank = u32::try_from(r).ok();
        s = &rest[2..];
    }
    (rank, s)
}

/// `iteration N/M | fields...`.
fn iteration(s: &[u8]) -> Option<LogEvent<'_>> {
    let (iteration, rest) = uint(after(s, b"iteration")?)?;
    let (train_iters, rest) = match after(trim_start(rest), b"/").and_then(uint) {
        Some((m, rest)) => (Some(m), rest),
        None => (None, rest),
    };
    let rest = trim_start(rest);
    if !rest.is_empty() && rest[0] != b'|' {
        return None;
    }
    Some(LogEvent::Iteration(IterationLine {
        iteration,
        train_iters,
        rest,
    }))
}

/// `[Rank R] (NAME) memory (MB) | allocated: a | max allocated: b | reserved: c | max reserved: d`.
fn memory(s: &[u8]) -> Option<LogEvent<'_>> {
    let (rank, rest) = uint(after(s, b"[Rank")?)?;
    let rest = trim_start(after(rest, b"]")?);
    let rest = after(rest, b"(")?;
    let close = memchr::memchr(b')', rest)?;
    let point = memory_point(&rest[..close]);
    let rest = trim_start(&rest[close + 1..]);
    let fields = after(rest, b"memory (MB)")?;
    let line = IterationLine {
        iteration: 0,
        train_iters: None,
        rest: fields,
    };
    // The four numbers as Megatron prints them, each read after its known lead (what
    // `Fields::next` would read); any other layout goes through the general loop from the
    // start.
    let mut fields = line.fields();
    let (mut mb, mut seen) = match MEMORY_LEADS.map(|lead| fields.next_after(lead)) {
        [
            Some(allocated),
            Some(max_allocated),
            Some(reserved),
            Some(max_reserved),
        ] => {
            let mb = MemoryMb {
                allocated,
                max_allocated,
                reserved,
                max_reserved,
            };
            (mb, 4)
        }
        _ => {
            fields = line.fields();
            (MemoryMb::default(), 0)
        }
    };
    let mut total_used = None;
    for (name, v) in fields {
        match name {
            b"allocated" => mb.allocated = v,
            b"max allocated" => mb.max_allocated = v,
            b"reserved" => mb.reserved = v,
            b"max reserved" => mb.max_reserved = v,
            b"total device memory used" => total_used = Some(v),
            _ => continue,
        }
        seen += 1;
    }
    let rank = u32::try_from(rank).ok();
    // Boxed: memory reports are rare and the largest event; a small `LogEvent` keeps the
    // per-line moves cheap.
    let report = MemoryReport {
        rank,
        point,
        mb,
        total_used,
    };
    (seen >= 4).then(|| LogEvent::Memory(Box::new(report)))
}

/// The leads of a memory report's four numbers (see `Fields::next_after`).
const MEMORY_LEADS: [&[u8]; 4] = [
    b" | allocated: ",
    b" max allocated: ",
    b" reserved: ",
    b" max reserved: ",
];

/// The name inside a memory report's parentheses.
fn memory_point(name: &[u8]) -> MemoryPoint {
    let number = |rest: &[u8]| {
        uint(rest)
            .filter(|(_, r)| trim(r).is_empty())
            .map(|(n, _)| n)
    };
    let known = if let Some(rest) = after(name, b"after ") {
        match after(rest, b"save_checkpoint for iteration") {
            Some(r) => number(r).map(MemoryPoint::AfterSave),
            None => uint(rest)
                .filter(|(_, r)| trim(r) == b"iterations")
                .map(|(n, _)| MemoryPoint::AfterIterations(n)),
        }
    } else {
        after(name, b"before save_checkpoint for iteration")
            .and_then(number)
            .map(MemoryPoint::BeforeSave)
    };
    known.unwrap_or_else(|| MemoryPoint::Other(String::from_utf8_lossy(name).into_owned()))
}

/// `[after training is done] datetime: ...`.
fn training_done(s: &[u8]) -> Option<LogEvent<'_>> {
    let rest = trim_start(after(s, b"[after training is done]")?);
    let rest = after(rest, b"datetime:").unwrap_or(rest);
    Some(LogEvent::TrainingDone {
        datetime: String::from_utf8_lossy(trim(rest)),
    })
}

/// The three checkpoint lines that start with `s`.
fn checkpoint(s: &[u8]) -> Option<LogEvent<'_>> {
    if let Some(rest) = after(s, b"saving checkpoint at iteration") {
        let (iteration, rest) = uint(rest)?;
        let rest = trim(after(trim_start(rest), b"to ").unwrap_or(rest));
        let (dir, format) = match rest.strip_suffix(b" format").and_then(split_last_in) {
            Some((dir, format)) => (dir, Some(String::from_utf8_lossy(format))),
            None => (rest, None),
        };
        return Some(LogEvent::CheckpointSaving {
            iteration,
            dir: String::from_utf8_lossy(dir),
            format,
        });
    }
    if let Some(rest) = after(s, b"successfully saved checkpoint from iteration") {
        return uint(rest).map(|(iteration, _)| LogEvent::CheckpointSaved { iteration });
    }
    let rest = after(s, b"scheduled an async checkpoint save at iteration")?;
    uint(rest).map(|(iteration, _)| LogEvent::CheckpointScheduled { iteration })
}

/// `DIR in FORMAT` split at the last ` in `.
fn split_last_in(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = memchr::memmem::rfind(s, b" in ")?;
    Some((&s[..i], &s[i + 4..]))
}

/// `(a, b)` → (a, b).
fn min_max(s: &[u8]) -> Option<(f64, f64)> {
    // Read in one pass: a number cannot hold `,` or `)`, so the first number ends before the
    // first `,`, and the second one must be followed by nothing but the closing `)`.
    let (min, rest) = scan::float_prefix(trim_start(s.strip_prefix(b"(")?))?;
    let rest = trim_start(rest).strip_prefix(b",")?;
    let (max, rest) = scan::float_prefix(trim_start(rest))?;
    (trim_start(rest) == b")").then_some((min, max))
}

/// Where a timer row's name lies in its head (the row up to `:`), without the `....`
/// padding (skipped eight dots at a time: Megatron pads names to 48 columns) and blanks.
fn timer_name(head: &[u8]) -> Range<usize> {
    let mut kept = head;
    while let Some(rest) = kept.strip_suffix(b"........") {
        kept = rest;
    }
    let n = kept
        .iter()
        .rev()
        .take_while(|b| **b == b'.' || **b == b' ')
        .count();
    let kept = &kept[..kept.len() - n];
    let start = kept.len() - trim_start(kept).len();
    start..start + trim(kept).len()
}

/// `s` as text: borrowed when it is valid UTF-8 (checked with the standard library's ASCII
/// fast path), else lossily converted.
fn text(s: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(s) {
        Ok(t) => Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(s),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn one(line: &str) -> Option<LogLine<'_>> {
        LogParser::new().feed(line.as_bytes())
    }

    fn event(line: &str) -> Option<LogEvent<'_>> {
        one(line).map(|l| l.event)
    }

    const NEW_ITER: &str = " [2026-11-29 20:16:15.066886] iteration       60/      60 | consumed samples:         1920 | elapsed time per iteration (ms): 321.2 | learning rate: 1.000000E-05 | global batch size:    32 | lm loss: 2.952633E+00 | loss scale: 1.0 | grad norm: 2.210 | num zeros: 27854.0 | params norm: 274.878 | number of skipped iterations:   0 | number of nan iterations:   0 |";

    #[test]
    fn iteration_lines_old_new_and_prefixed() {
        let old = NEW_ITER.replacen(" [2026-11-29 20:16:15.066886]", "", 1);
        let prefixed = format!("[default3]:{NEW_ITER}\r");
        for line in [NEW_ITER, old.as_str(), prefixed.as_str()] {
            let Some(LogLine {
                event: LogEvent::Iteration(it),
                ..
            }) = one(line)
            else {
                panic!("{line}")
            };
            assert_eq!((it.iteration, it.train_iters), (60, Some(60)));
            let fields: Vec<_> = it
                .fields()
                .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), v))
                .collect();
            assert_eq!(fields.len(), 11, "{fields:?}");
            assert_eq!(fields[4], ("lm loss".to_owned(), 2.952633));
            assert_eq!(fields[10], ("number of nan iterations".to_owned(), 0.0));
        }
        assert_eq!(one(&prefixed).unwrap().rank, Some(3));
        assert_eq!(
            one(NEW_ITER).unwrap().time.unwrap().to_string(),
            "2026-11-29T20:16:15.066886"
        );
        assert_eq!(one(&old).unwrap().time, None);
    }

    #[test]
    fn timestamps_of_one_minute_reuse_its_date_and_stay_exact() {
        let mut p = LogParser::new();
        let lines = [
            (
                "[2026-11-29 20:16:15.066886] exiting program at iteration 1",
                Some("2026-11-29T20:16:15.066886"),
            ),
            (
                "[2026-11-29 20:16:59] exiting program at iteration 1",
                Some("2026-11-29T20:16:59"),
            ),
            ("[2026-11-29 20:16:60] exiting program at iteration 1", None),
            ("[2026-11-29 20:16:1x] exiting program at iteration 1", None),
            (
                "[2026-11-29 20:17:00.5] exiting program at iteration 1",
                Some("2026-11-29T20:17:00.5"),
            ),
            (
                "[2026-02-30 20:17:00.5] exiting program at iteration 1",
                None,
            ),
            (
                "[2026-11-29 20:17:01.1234567891] exiting program at iteration 1",
                None,
            ),
        ];
        for (line, want) in lines {
            let got = p
                .feed(line.as_bytes())
                .and_then(|l| l.time)
                .map(|t| t.to_string());
            assert_eq!(got.as_deref(), want, "{line}");
        }
    }

    #[test]
    fn memory_reports_with_every_name() {
        let cases = [
            ("(after 50 iterations)", MemoryPoint::AfterIterations(50)),
            (
                "(before save_checkpoint for iteration 20)",
                MemoryPoint::BeforeSave(20),
            ),
            (
                "(after save_checkpoint for iteration 20)",
                MemoryPoint::AfterSave(20),
            ),
            ("(on start)", MemoryPoint::Other("on start".into())),
        ];
        for (name, point) in cases {
            let line = format!(
                "[rank1]:[Rank 1] {name} memory (MB) | allocated: 3496.66 | max allocated: 15991.74 | reserved: 16668.00 | max reserved: 16668.00 | total device memory used: 17000.5"
            );
            let Some(LogEvent::Memory(m)) = event(&line) else {
                panic!("{line}")
            };
            assert_eq!((m.rank, m.point), (Some(1), point));
            assert_eq!(m.mb.max_allocated, 15991.74);
            assert_eq!(m.total_used, Some(17000.5));
        }
        assert_eq!(
            event("[Rank 0] (after 1 iterations) memory (MB) | allocated: 1"),
            None
        );
    }

    fn timers(lines: &[&str]) -> Vec<(String, u64, TimerValue)> {
        let mut p = LogParser::new();
        let mut out = Vec::new();
        for l in lines {
            if let Some(LogLine {
                event: LogEvent::Timer(t),
                ..
            }) = p.feed(l.as_bytes())
            {
                out.push((t.name.into_owned(), t.block, t.value));
            }
        }
        out
    }

    #[test]
    fn timer_blocks_in_every_option() {
        let minmax = timers(&[
            "INFO:megatron.core.timers:(min, max) time across ranks (ms):",
            "    save-checkpoint ................................: (3485.51, 3485.52)",
            "    save-checkpoint-non-persistent .................: (1.00, 2.00)",
            " iteration        1/      60 | lm loss: 1.0 |",
            "    not-a-timer ....: (1, 2)",
        ]);
        assert_eq!(
            minmax,
            vec![
                (
                    "save-checkpoint".into(),
                    1,
                    TimerValue::MinMax {
                        min: 3485.51,
                        max: 3485.52
                    }
                ),
                (
                    "save-checkpoint-non-persistent".into(),
                    1,
                    TimerValue::MinMax { min: 1.0, max: 2.0 }
                ),
            ]
        );
        let max = timers(&[
            "max time across ranks (ms):",
            "    save-checkpoint ........: 12.50",
        ]);
        assert_eq!(
            max,
            vec![("save-checkpoint".into(), 1, TimerValue::Max(12.5))]
        );
        let all = timers(&[
            "[default0]:times across ranks (ms):",
            "[default0]:  save-checkpoint:",
            "[default0]:     rank  0: 3485.51",
            "[default0]:     rank  1: 3490.00",
            "[default0]:(min, max) time across ranks (ms):",
            "[default0]:    forward-backward ...: (10.00, 11.00)",
        ]);
        assert_eq!(
            all,
            vec![
                (
                    "save-checkpoint".into(),
                    1,
                    TimerValue::Rank {
                        rank: 0,
                        ms: 3485.51
                    }
                ),
                (
                    "save-checkpoint".into(),
                    1,
                    TimerValue::Rank {
                        rank: 1,
                        ms: 3490.0
                    }
                ),
                (
                    "forward-backward".into(),
                    2,
                    TimerValue::MinMax {
                        min: 10.0,
                        max: 11.0
                    }
                ),
            ]
        );
    }

    #[test]
    fn timer_rows_are_read_alike_whether_or_not_they_repeat_the_last_block() {
        let header = "(min, max) time across ranks (ms):";
        let got = timers(&[
            header,
            "    a ....: (1, 2)",
            "    b ....: (3, 4)",
            header,
            "    a ....: (5, 6)",
            "    b ......: (7, 8)",
            header,
            "    b ....: (9, 10)",
            "    a ....: (11, 12) ",
            "    a ....: (13, x)",
            "    a ....: (14, 15)",
        ]);
        let rows: Vec<(&str, u64, f64, f64)> = got
            .iter()
            .map(|(name, block, v)| (name.as_str(), *block, v.range().0, v.range().1))
            .collect();
        assert_eq!(
            rows,
            vec![
                ("a", 1, 1.0, 2.0),
                ("b", 1, 3.0, 4.0),
                ("a", 2, 5.0, 6.0),
                ("b", 2, 7.0, 8.0),
                ("b", 3, 9.0, 10.0),
                ("a", 3, 11.0, 12.0),
            ]
        );
    }

    #[test]
    fn checkpoint_and_end_lines() {
        let saving = event(
            "[2026-11-29 20:16:15.068999] saving checkpoint at iteration      60 to /tmp/my ckpt in torch_dist format",
        );
        assert_eq!(
            saving,
            Some(LogEvent::CheckpointSaving {
                iteration: 60,
                dir: "/tmp/my ckpt".into(),
                format: Some("torch_dist".into()),
            })
        );
        let cases = [
            (
                "  [2026-11-29 20:16:18.552401] successfully saved checkpoint from iteration      60 to /tmp/ckpt [ t 1/1, gtp_remat 1/1, p 1/1 ]",
                LogEvent::CheckpointSaved { iteration: 60 },
            ),
            (
                "  successfully saved checkpoint from iteration      60 to /tmp/ckpt [ t 1/1, p 1/1 ]",
                LogEvent::CheckpointSaved { iteration: 60 },
            ),
            (
                "  [2026-11-29 20:17:13.665856] scheduled an async checkpoint save at iteration      40 to /tmp/ckpt",
                LogEvent::CheckpointScheduled { iteration: 40 },
            ),
            (
                "WARNING: Starting a checkpoint save before previous has finished.",
                LogEvent::OverlappingSave,
            ),
            (
                "[after training is done] datetime: 2026-11-29 20:16:19 ",
                LogEvent::TrainingDone {
                    datetime: "2026-11-29 20:16:19".into(),
                },
            ),
            (
                "exiting program at iteration 60",
                LogEvent::Exiting { iteration: 60 },
            ),
        ];
        for (line, want) in cases {
            assert_eq!(event(line), Some(want), "{line}");
        }
        let ts = one(
            "  [2026-11-29 20:17:13.665856] scheduled an async checkpoint save at iteration 40 to /c",
        );
        assert!(ts.unwrap().time.is_some());
    }

    #[test]
    fn failure_markers_are_classified() {
        let cases = [
            (
                "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                FailureKind::Oom,
            ),
            ("NCCL WARN Cuda failure 2 'out of memory'", FailureKind::Oom),
            (
                "[E] Some NCCL operations have failed or timed out. Due to the asynchronous nature",
                FailureKind::NcclTimeout,
            ),
            (
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                FailureKind::IllegalMemoryAccess,
            ),
            (
                "Fatal Python error: Segmentation fault",
                FailureKind::Segfault,
            ),
            (
                "Rank 0: found NaN in local grad norm for bucket #0",
                FailureKind::Nan,
            ),
            ("TimeoutError: timed out after 600 s", FailureKind::Timeout),
            (
                "iteration is not a marker but TimeoutError is",
                FailureKind::Timeout,
            ),
        ];
        for (line, kind) in cases {
            let got = event(line);
            assert_eq!(
                got,
                Some(LogEvent::Failure {
                    kind,
                    line: line.as_bytes()
                }),
                "{line}"
            );
        }
    }

    #[test]
    fn noise_and_broken_lines_yield_nothing() {
        let lines: [&[u8]; 9] = [
            b"",
            b"\r",
            b"using world size: 1, data-parallel size: 1",
            b"iteration",
            b" iteration 5 of something",
            b"[Rank x] (after 1 iterations) memory (MB)",
            b"saving checkpoint at iteration",
            b"\xff\xfe[default0]:\xc3(",
            b"[default99999999999999999999]: x",
        ];
        for l in lines {
            assert_eq!(
                LogParser::new().feed(l),
                None,
                "{}",
                String::from_utf8_lossy(l)
            );
        }
    }
}
