//! Stage "run": the errors of running a plan — jobs an executor refuses, results that cannot
//! be written.

use std::path::PathBuf;

/// Everything that stops a run or loses its results.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RunError {
    /// The executor refused jobs before anything started.
    #[error("the {executor} executor cannot run {count} of the planned jobs:\n{list}")]
    #[diagnostic(help("{hint}"))]
    Refused {
        executor: &'static str,
        count: usize,
        /// One `  <job id>: <reason>` line per refused job.
        list: String,
        hint: String,
    },

    /// A result file could not be encoded.
    #[error("cannot encode {}", path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A result file could not be written.
    #[error("cannot write {}", path.display())]
    #[diagnostic(help("check the free space and permissions of `--out`"))]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Several result files could not be written; each is listed.
    #[error("{} result file(s) could not be written", errors.len())]
    Saves {
        #[related]
        errors: Vec<RunError>,
    },

    /// Slurm's commands cannot be used (not installed, the controller does not answer).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Slurm(#[from] super::slurm::SlurmError),

    /// The current directory cannot be read.
    #[error("cannot read the current directory")]
    Cwd {
        #[source]
        source: std::io::Error,
    },
}
