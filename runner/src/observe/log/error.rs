//! Stage "observe", log parser: errors reading a log.

use std::path::PathBuf;

/// Reading a log failed (parsing itself never fails: unknown lines are skipped).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LogError {
    /// The file could not be opened.
    #[error("cannot open log {}", path.display())]
    #[diagnostic(help("check the path; `goldgate extract` reads existing log files"))]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Reading failed part way.
    #[error("cannot read log {} after line {line}", path.display())]
    Read {
        path: PathBuf,
        line: u64,
        #[source]
        source: std::io::Error,
    },
}
