//! Stage "observe", log parser: [`LogStream`], the one way a job's output becomes its
//! [`LogSummary`]. Local runs (the job's pipe), Slurm runs (a log another machine appends to)
//! and `goldgate extract` (a file on disk) all hand it the bytes as they come, in chunks of
//! any size, and it takes every line through the same stages:
//!
//! 1. **split** at `\n`, in bounded memory: a line longer than [`MAX_LINE`] keeps its first
//!    [`MAX_LINE`] bytes, the rest is dropped and counted ([`LogSummary::long_lines`]);
//! 2. **redact**: the job's secrets masked ([`Redactor`]) before anything else sees the line;
//!    the caller's [`LogSink::line`] gets this line, to store or echo;
//! 3. **clean**: lone `\r` rewrites split, escape sequences dropped ([`LineCleaner`]);
//! 4. **parse** ([`LogParser`]), **summarise** ([`SummaryBuilder`]) and **tail** ([`LogTail`]);
//!    the caller's [`LogSink::parsed`] sees each parsed line (progress, save marks).
//!
//! So one long line, one secret or one `\r` reads the same wherever the log came from.
//!
//! Nearly every line holds nothing but plain text, so the stream searches each chunk once,
//! lower-cased, for every word a later stage looks for in any line (the tail's error words,
//! the parser's failure markers; [`Candidates`]): a line without a hit, unchanged by the
//! redact and clean stages, skips those per-line searches. One search over 256 KiB costs far
//! less than a million searches of one line each.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind, packed};

use super::clean::LineCleaner;
use super::error::LogError;
use super::event::LogLine;
use super::parser::LogParser;
use super::summary::{LogSummary, SummaryBuilder};
use super::tail::{LogTail, TailSummary};
use crate::redact::Redactor;

/// Bytes of one line that are kept; the rest of a longer line is dropped (and counted).
pub const MAX_LINE: usize = 64 * 1024;
/// Bytes read from a file at once by [`LogStream::read`].
const READ_CHUNK: usize = 256 * 1024;

/// What the caller sees of a log as it streams. Both methods do nothing by default.
pub trait LogSink {
    /// One line as read, without its `\n` (a `\r` before it kept), secrets masked, cut to
    /// [`MAX_LINE`] bytes: `dropped` bytes of it were not kept (0 for nearly every line).
    /// `ended`: the line had its `\n` (false only for a log's last line).
    fn line(&mut self, _line: &[u8], _dropped: u64, _ended: bool) {}
    /// One line the parser understood.
    fn parsed(&mut self, _line: &LogLine<'_>) {}
}

/// A sink that wants nothing but the summary.
impl LogSink for () {}

/// The stages a log's bytes go through, and the state of its unfinished last line.
#[derive(Default)]
pub struct LogStream {
    redactor: Redactor,
    /// The unfinished line's first bytes (at most [`MAX_LINE`]).
    partial: Vec<u8>,
    /// Bytes of the unfinished line beyond [`MAX_LINE`], dropped.
    dropped: u64,
    cleaner: LineCleaner,
    parser: LogParser,
    builder: SummaryBuilder,
    tail: LogTail,
    candidates: Candidates,
    lines: u64,
    long_lines: u64,
}

/// What every word a later stage searches any line for (the tail's error words, the parser's
/// failure markers) contains, lower-cased: a line holds one of those words only if the chunk's
/// search found one of these in it. Each is a rare part of its words (`rror` of `error`,
/// `TimeoutError` and `OutOfMemoryError`), so plain text rarely makes the searcher look twice;
/// a test checks that every word contains one.
const ANCHORS: [&str; 10] = [
    "rror",
    "xcept",
    "fatal",
    "illed",
    "tion fault",
    "dumped",
    "nccl op",
    "illegal m",
    "nan in",
    "of memory",
];

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    let packed = packed::Config::new().builder().extend(ANCHORS).build();
    match packed {
        Some(searcher) => Words::Packed(searcher),
        None => Words::Automaton(
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(ANCHORS)
                .unwrap_or_else(|e| unreachable!("the anchors are constant: {e}")),
        ),
    }
});

/// The search for [`WORDS`]: packed (Teddy, SIMD) where the CPU has it.
enum Words {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

/// Where in the current chunk a word of [`WORDS`] starts (in any case), and where a `\r` or
/// ESC is (what the clean stage acts on).
#[derive(Default)]
struct Candidates {
    lower: Vec<u8>,
    hits: Vec<usize>,
    next: usize,
    specials: Vec<usize>,
    next_special: usize,
}

/// What the chunk's search says of one line.
#[derive(Clone, Copy)]
struct Plain {
    /// No word of [`WORDS`] starts in it.
    no_words: bool,
    /// No `\r` or ESC in it (a `\r` ending it aside): the clean stage leaves it whole.
    clean: bool,
}

impl Candidates {
    /// Searches `chunk` once.
    fn scan(&mut self, chunk: &[u8]) {
        self.lower.clear();
        self.lower.extend_from_slice(chunk);
        self.lower.make_ascii_lowercase();
        self.hits.clear();
        self.next = 0;
        match &*WORDS {
            Words::Packed(s) => self
                .hits
                .extend(s.find_iter(&self.lower).map(|m| m.start())),
            Words::Automaton(a) => self
                .hits
                .extend(a.find_iter(&self.lower).map(|m| m.start())),
        }
        self.specials.clear();
        self.next_special = 0;
        self.specials
            .extend(memchr::memchr2_iter(b'\r', 0x1b, chunk));
    }

    /// What the search says of the line at `start..end` of the chunk; lines are asked in
    /// order. A word has no `\n`, so one that starts in a line ends in it.
    fn line(&mut self, start: usize, end: usize, chunk: &[u8]) -> Plain {
        let no_words =
            first_at_or_after(&self.hits, &mut self.next, start).is_none_or(|at| at >= end);
        let body_end = match chunk[start..end].ends_with(b"\r") {
            true => end - 1,
            false => end,
        };
        let special = first_at_or_after(&self.specials, &mut self.next_special, start);
        let clean = special.is_none_or(|at| at >= body_end);
        Plain { no_words, clean }
    }
}

/// The first of the sorted `list` at or after `start`, from `next` on (advanced past the rest).
fn first_at_or_after(list: &[usize], next: &mut usize, start: usize) -> Option<usize> {
    while list.get(*next).is_some_and(|&at| at < start) {
        *next += 1;
    }
    list.get(*next).copied()
}

impl LogStream {
    /// A stream at the start of a log, masking nothing.
    pub fn new() -> LogStream {
        LogStream::default()
    }

    /// Masks `redactor`'s secrets in every line before the sink, the parser and the tail see it.
    pub fn redacting(mut self, redactor: Redactor) -> LogStream {
        self.redactor = redactor;
        self
    }

    /// Lines completed so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The next bytes of the log, any amount (a partial line waits for the rest).
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl LogSink) {
        self.candidates.scan(bytes);
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.hold(rest);
                return;
            };
            let head = &rest[..end];
            if self.partial.is_empty() && self.dropped == 0 {
                // The common case: a whole line inside the chunk, without a copy.
                let kept = head.len().min(MAX_LINE);
                let plain = self.candidates.line(at, at + kept, bytes);
                self.line(
                    &head[..kept],
                    (head.len() - kept) as u64,
                    Some(plain),
                    true,
                    sink,
                );
            } else {
                self.hold(head);
                let (partial, dropped) = (std::mem::take(&mut self.partial), self.dropped);
                self.dropped = 0;
                self.line(&partial, dropped, None, true, sink);
                self.partial = partial;
                self.partial.clear();
            }
            at += end + 1;
        }
    }

    /// The summary and what the log's end says about a failure; a last line without `\n` is
    /// taken as a line.
    pub fn finish(mut self, sink: &mut impl LogSink) -> (LogSummary, TailSummary) {
        if !self.partial.is_empty() || self.dropped > 0 {
            let (partial, dropped) = (std::mem::take(&mut self.partial), self.dropped);
            self.line(&partial, dropped, None, false, sink);
        }
        self.builder.set_line_counts(self.lines, self.long_lines);
        (self.builder.finish(), self.tail.finish())
    }

    /// Streams all of `input` (a file, a pipe) through the stages. `path` names it in errors.
    pub fn read(
        mut self,
        mut input: impl Read,
        path: &Path,
        sink: &mut impl LogSink,
    ) -> Result<(LogSummary, TailSummary), LogError> {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.feed(&buf[..n], sink),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(LogError::Read {
                        path: path.to_owned(),
                        line: self.lines,
                        source,
                    });
                }
            }
        }
        Ok(self.finish(sink))
    }

    /// Keeps `bytes` of the unfinished line, up to [`MAX_LINE`]; counts the rest as dropped.
    fn hold(&mut self, bytes: &[u8]) {
        let room = MAX_LINE - self.partial.len();
        let kept = bytes.len().min(room);
        self.partial.extend_from_slice(&bytes[..kept]);
        self.dropped += (bytes.len() - kept) as u64;
    }

    /// One whole line (without `\n`): every stage after the split. `plain`: what the chunk's
    /// search says of the line as read (`None`: not known, a line pieced together).
    fn line(
        &mut self,
        raw: &[u8],
        dropped: u64,
        plain: Option<Plain>,
        ended: bool,
        sink: &mut impl LogSink,
    ) {
        self.lines += 1;
        if dropped > 0 {
            self.long_lines += 1;
        }
        let line = match dropped {
            0 => self.redactor.redact(raw),
            _ => self.redactor.redact_cut(raw),
        };
        // The hit list speaks of the bytes as read: it holds for what the later stages see
        // only when redact left the line alone and clean will (no `\r` or ESC inside).
        let unchanged = matches!(line, Cow::Borrowed(_));
        sink.line(&line, dropped, ended);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        let (parser, builder, tail) = (&mut self.parser, &mut self.builder, &mut self.tail);
        let mut part = |part: &[u8], check: bool| {
            tail.see_checked(part, check);
            if let Some(parsed) = parser.feed_checked(part, check) {
                sink.parsed(&parsed);
                builder.add(&parsed);
            }
        };
        match plain {
            Some(p) if unchanged && p.clean => part(line, !p.no_words),
            _ => self.cleaner.split(line, &mut |p| part(p, true)),
        }
    }
}

/// Streams `input` through a [`LogStream`] that masks nothing. `path` names it in errors.
pub fn summarize_reader(input: impl Read, path: &Path) -> Result<LogSummary, LogError> {
    LogStream::new()
        .read(input, path, &mut ())
        .map(|(summary, _)| summary)
}

/// Streams the log file at `path` through a [`LogStream`].
pub fn summarize_file(path: &Path) -> Result<LogSummary, LogError> {
    summarize_file_with_tail(path).map(|(summary, _)| summary)
}

/// [`summarize_file`], and the log's [`TailSummary`] (the last traceback's exception: what
/// tells a crash that no failure marker names).
pub fn summarize_file_with_tail(path: &Path) -> Result<(LogSummary, TailSummary), LogError> {
    // A pipe (`extract <(zcat log.gz)`) streams like a file; a folder is a usage error.
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(LogError::Folder {
            path: path.to_owned(),
        });
    }
    let file = File::open(path).map_err(|source| LogError::Open {
        path: path.to_owned(),
        source,
    })?;
    LogStream::new().read(file, path, &mut ())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_word_a_stage_looks_for_holds_an_anchor_of_the_chunk_search() {
        let words = (super::super::tail::ERROR_WORDS.iter().copied())
            .chain(super::super::parser::MARKERS.iter().map(|(m, _)| *m));
        for word in words {
            let lower = word.to_ascii_lowercase();
            assert!(
                ANCHORS.iter().any(|a| lower.contains(a)),
                "{word} holds no anchor"
            );
        }
    }

    /// Collects what a sink is given.
    #[derive(Default)]
    struct Seen {
        lines: Vec<(Vec<u8>, u64)>,
        parsed: usize,
    }

    impl LogSink for Seen {
        fn line(&mut self, line: &[u8], dropped: u64, _ended: bool) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            self.lines.push((line.to_vec(), dropped));
        }
        fn parsed(&mut self, _: &LogLine<'_>) {
            self.parsed += 1;
        }
    }

    /// Feeds `data` in chunks of `step` bytes.
    fn stream(data: &[u8], step: usize, redactor: Redactor) -> (Seen, LogSummary, TailSummary) {
        let mut s = LogStream::new().redacting(redactor);
        let mut seen = Seen::default();
        for chunk in data.chunks(step) {
            s.feed(chunk, &mut seen);
        }
        let (summary, tail) = s.finish(&mut seen);
        (seen, summary, tail)
    }

    #[test]
    fn lines_split_the_same_whatever_the_chunks_and_a_last_line_counts() {
        for step in [1, 3, 7, 1 << 20] {
            let (seen, summary, _) = stream(b"a\r\n\nbc\nlast", step, Redactor::default());
            let lines: Vec<&[u8]> = seen.lines.iter().map(|(l, _)| l.as_slice()).collect();
            assert_eq!(lines, [&b"a"[..], b"", b"bc", b"last"], "step {step}");
            assert_eq!((summary.lines, summary.long_lines), (4, 0));
        }
        assert_eq!(stream(b"", 10, Redactor::default()).1.lines, 0);
    }

    #[test]
    fn a_long_line_keeps_its_head_counts_what_was_dropped_and_parses_once() {
        let step =
            b" [2026-11-29 20:16:14.1] iteration        3/      30 | lm loss: 1.000000E+01 |";
        let mut data = step.to_vec();
        data.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE));
        data.push(b'\n');
        data.extend_from_slice(b"next\n");
        data.extend(std::iter::repeat_n(b'y', MAX_LINE + 5));
        for size in [4096, MAX_LINE - 1, 1 << 20] {
            let (seen, summary, _) = stream(&data, size, Redactor::default());
            let got: Vec<(usize, u64)> = seen.lines.iter().map(|(l, d)| (l.len(), *d)).collect();
            let first_dropped = (step.len() + 3 * MAX_LINE - MAX_LINE) as u64;
            assert_eq!(got, [(MAX_LINE, first_dropped), (4, 0), (MAX_LINE, 5)]);
            assert_eq!((summary.lines, summary.long_lines), (3, 2));
            assert_eq!(
                summary.steps_seen, 1,
                "the cut line is still an iteration line"
            );
            assert_eq!(seen.parsed, 1);
        }
    }

    #[test]
    fn secrets_are_masked_before_the_sink_the_parser_and_the_tail() {
        let redactor = Redactor::from_env([("HF_TOKEN", "hf_secret_value")]);
        let data = b"token hf_secret_value\nCUDA out of memory hf_secret_value\n";
        let (seen, summary, tail) = stream(data, 5, redactor);
        assert_eq!(seen.lines[0].0, b"token <redacted>");
        assert_eq!(summary.failures[0].line, "CUDA out of memory <redacted>");
        assert!(tail.lines.iter().all(|l| !l.contains("hf_secret")));
    }

    #[test]
    fn a_secret_cut_by_the_line_cap_leaves_no_part_of_itself() {
        let redactor = Redactor::from_env([("WANDB_API_KEY", "abcdef123456")]);
        let mut data = vec![b' '; MAX_LINE - 4];
        data.extend_from_slice(b"abcdef123456 and more\n");
        let (seen, ..) = stream(&data, 1 << 20, redactor);
        let (line, dropped) = &seen.lines[0];
        assert!(*dropped > 0);
        assert!(
            line.ends_with(b" <redacted>"),
            "{:?}",
            &line[line.len() - 20..]
        );
        assert!(!line.windows(4).any(|w| w == b"abcd"));
    }
}
