//! Stage "observe", log parser: [`LogCollector`] = parser + summary + [`LogTail`] for a live
//! stream (feed it each line of a child's stdout), and [`summarize_file`] /
//! [`summarize_reader`] for logs on disk, streamed through a [`LogReader`], never read whole.
//! The `_with_tail` forms also return what the log's end says about a failure (the last
//! traceback's exception), the same [`LogTail`] the run path keeps.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::clean::LineCleaner;
use super::error::LogError;
use super::parser::LogParser;
use super::reader::LogReader;
use super::summary::{LogSummary, SummaryBuilder};
use super::tail::{LogTail, TailSummary};

/// Parses lines and accumulates them into a [`LogSummary`].
#[derive(Default)]
pub struct LogCollector {
    parser: LogParser,
    builder: SummaryBuilder,
    cleaner: LineCleaner,
    tail: LogTail,
    lines: u64,
    long_lines: u64,
}

impl LogCollector {
    /// A collector at the start of a log.
    pub fn new() -> LogCollector {
        LogCollector::default()
    }

    /// Feeds one line (without `\n`): each of its `\r`-separated parts, escape sequences
    /// dropped ([`LineCleaner`]).
    pub fn feed(&mut self, line: &[u8]) {
        self.lines += 1;
        let (parser, builder, tail) = (&mut self.parser, &mut self.builder, &mut self.tail);
        self.cleaner.split(line, &mut |part| {
            tail.see(part);
            if let Some(parsed) = parser.feed(part) {
                builder.add(&parsed);
            }
        });
    }

    /// Notes a line that was cut before being fed (for callers with their own line splitting).
    pub fn note_long_line(&mut self) {
        self.long_lines += 1;
    }

    /// The summary of everything fed.
    pub fn finish(self) -> LogSummary {
        self.finish_with_tail().0
    }

    /// [`LogCollector::finish`], and what the log's end says about a failure.
    pub fn finish_with_tail(mut self) -> (LogSummary, TailSummary) {
        self.builder.set_line_counts(self.lines, self.long_lines);
        (self.builder.finish(), self.tail.finish())
    }
}

/// Streams `input` through the parser. `path` names the input in errors.
pub fn summarize_reader(input: impl Read, path: &Path) -> Result<LogSummary, LogError> {
    summarize_reader_with_tail(input, path).map(|(summary, _)| summary)
}

/// [`summarize_reader`], and the log's [`TailSummary`].
pub fn summarize_reader_with_tail(
    input: impl Read,
    path: &Path,
) -> Result<(LogSummary, TailSummary), LogError> {
    let mut reader = LogReader::new(input);
    let mut collector = LogCollector::new();
    loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(source) => {
                let line = reader.lines();
                return Err(LogError::Read {
                    path: path.to_owned(),
                    line,
                    source,
                });
            }
        };
        collector.feed(line);
    }
    collector.long_lines = reader.long_lines();
    Ok(collector.finish_with_tail())
}

/// Streams the log file at `path` through the parser.
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
    summarize_reader_with_tail(file, path)
}
