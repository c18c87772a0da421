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
    /// The path is a folder.
    #[error("{} is a folder, not a log file", path.display())]
    #[diagnostic(help("pass the log files themselves, e.g. `goldgate extract logs/*.log`"))]
    Folder { path: PathBuf },
    /// Reading failed part way.
    #[error("cannot read log {} after line {line}", path.display())]
    Read {
        path: PathBuf,
        line: u64,
        #[source]
        source: std::io::Error,
    },
}
