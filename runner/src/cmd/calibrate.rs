//! `goldgate calibrate`: measures per-metric spread over repeats and suggests tolerances.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate calibrate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory holding repeats of the same jobs.
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// Repository configuration (current rules; `--write` updates it).
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: std::path::PathBuf,
    /// Write the suggested rules into the configuration file.
    #[arg(long)]
    pub write: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate calibrate` is being built in this change",
    ))
}
