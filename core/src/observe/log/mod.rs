//! Stage "observe", log parser: streams Megatron-LM stdout (old and new formats, torchrun
//! prefixes) into events and a [`LogSummary`] of metrics, memory, checkpoints and failures.

mod clean;
mod collect;
mod column;
mod error;
mod event;
mod parser;
mod reader;
mod scan;
mod series;
mod summary;
mod tail;

pub use clean::{LineCleaner, one_line, strip_ansi};
pub use collect::{
    LogCollector, summarize_file, summarize_file_with_tail, summarize_reader,
    summarize_reader_with_tail,
};
pub use error::LogError;
pub use event::{
    FailureKind, Fields, IterationLine, LogEvent, LogLine, MemoryMb, MemoryPoint, MemoryReport,
    TimerLine, TimerValue,
};
pub use parser::LogParser;
pub use reader::{LogReader, MAX_LINE};
pub use series::Steps;
pub use summary::{CheckpointSave, Failure, LogSummary, SummaryBuilder, TimerStats};
pub use tail::{LogTail, TAIL_LINES, TailSummary};
