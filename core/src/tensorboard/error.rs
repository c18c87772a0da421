//! Stage "observe", TensorBoard: errors reading an event file or folder. Each names the file
//! and, for a damaged record, the byte offset where the record starts.

use std::path::PathBuf;

/// Reading TensorBoard event files failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TensorboardError {
    /// The folder could not be listed.
    #[error("cannot list TensorBoard folder {}", path.display())]
    #[diagnostic(help("pass the folder Megatron's --tensorboard-dir named"))]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// No `events*tfevents*` file in the folder (nor in its `results/`).
    #[error("no TensorBoard event file (events*tfevents*) in {}", path.display())]
    #[diagnostic(help(
        "Megatron writes them only with --tensorboard-dir; the folder's `results/` is searched too"
    ))]
    NoEventFiles { path: PathBuf },
    /// An event file could not be read.
    #[error("cannot read TensorBoard event file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record's framing or payload is damaged or cut short.
    #[error("{}: damaged record at byte {offset}: {problem}", path.display())]
    #[diagnostic(help(
        "the file was cut short (a job killed while writing) or corrupted; TensorBoard stops at such a record"
    ))]
    Damaged {
        path: PathBuf,
        /// Where the record starts in the file.
        offset: u64,
        problem: String,
    },
}
