//! Stage "observe", log parser: streams Megatron-LM stdout (old and new formats, torchrun
//! prefixes) into events and a [`LogSummary`] of metrics, memory, checkpoints and failures,
//! through the one [`LogStream`] that every run and `goldgate extract` feed.

mod clean;
mod column;
mod error;
mod event;
mod parser;
mod scan;
mod series;
mod stream;
mod summary;
mod tail;

pub use clean::{LineCleaner, one_line, strip_ansi};
pub use error::LogError;
pub use event::{
    FailureKind, Fields, IterationLine, LogEvent, LogLine, MemoryMb, MemoryPoint, MemoryReport,
    TimerLine, TimerValue,
};
pub use parser::LogParser;
pub use series::Steps;
pub use stream::{
    LogSink, LogStream, MAX_LINE, summarize_file, summarize_file_with_tail, summarize_reader,
};
pub use summary::{CheckpointSave, Failure, LogSummary, SummaryBuilder, TimerStats};
pub use tail::{LogTail, TAIL_LINES, TailSummary};

/// The real Megatron logs of an H200 that the parser's own tests read, for other crates' unit
/// tests too (the `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
