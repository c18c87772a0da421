//! `goldgate run`: launches planned jobs, observes them and records every run.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cases to run (`<model>/<case>`); all under the root when none.
    pub cases: Vec<String>,
    #[command(flatten)]
    pub select: super::select::Selection,
    /// Repeats per job.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Where results go: `OUT/<run-id>/<case>/<variant>/<repeat>/`.
    #[arg(long, default_value = "results")]
    pub out: std::path::PathBuf,
    /// Time limit per job (e.g. `90s`, `30m`); then SIGTERM, a grace period, SIGKILL.
    #[arg(long)]
    pub timeout: Option<String>,
    /// Jobs at once, each on its own slice of GPUs.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Re-run a job whose failure matches a flaky pattern up to N times.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Interval of the GPU and host memory samplers (e.g. `10ms`).
    #[arg(long)]
    pub sample_interval: Option<String>,
    /// Record only; do not compare with the golden files afterwards.
    #[arg(long)]
    pub no_compare: bool,
    /// Golden root used by the comparison after the run.
    #[arg(long, default_value = "golden")]
    pub golden_root: std::path::PathBuf,
    /// In-process probe for Python jobs: `torch`, `torch,history` or `none`.
    #[arg(long, default_value = "torch")]
    pub probe: String,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate run` is being built in this change",
    ))
}
