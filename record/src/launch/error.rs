//! Stage "launch": the errors of starting, watching and stopping a job.

use std::path::PathBuf;

/// Everything that can go wrong while launching or supervising a job.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LaunchError {
    /// The spec has no program to run.
    #[error("the job's command line is empty")]
    #[diagnostic(help(
        "the case needs an entry program, e.g. `GOLDGATE: {{entry: [fake-trainer]}}`"
    ))]
    EmptyArgv,

    /// A bare program name was found neither next to goldgate nor on PATH.
    #[error("program `{program}` not found (looked in {searched})")]
    #[diagnostic(help("install it, put it on PATH, or give an absolute path"))]
    ProgramNotFound { program: String, searched: String },

    /// The operating system refused to start the process.
    #[error("cannot start `{program}`")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },

    /// The job's working directory is missing.
    #[error("working directory {path} does not exist")]
    MissingCwd { path: PathBuf },

    /// The job log could not be created or written.
    #[error("cannot write the job log {path}")]
    LogFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A pipe or helper thread could not be created.
    #[error("cannot set up the job's {what}")]
    Plumbing {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// No free TCP port for the rendezvous could be found.
    #[error("cannot find a free port on 127.0.0.1 for the torchrun rendezvous")]
    FreePort {
        #[source]
        source: std::io::Error,
    },

    /// Waiting for the job failed.
    #[error("cannot wait for job process {pid}")]
    Wait {
        pid: u32,
        #[source]
        source: std::io::Error,
    },

    /// `--jobs N` needs more GPUs than there are.
    #[error(
        "{jobs} concurrent jobs of {nproc} GPUs each need {need} GPUs, but {total} are visible"
    )]
    #[diagnostic(help("lower `--jobs`, or run on a node with more GPUs"))]
    TooFewGpus {
        jobs: u32,
        nproc: u32,
        need: u64,
        total: usize,
    },

    /// The signal handlers could not be installed.
    #[error("cannot install the SIGINT/SIGTERM handlers")]
    Signals {
        #[source]
        source: std::io::Error,
    },
}
