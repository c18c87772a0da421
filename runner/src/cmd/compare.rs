//! `goldgate compare`: compares recorded jobs with their golden files and gates by exit code.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several.
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// Where golden files live (goldens beside the case are found too).
    #[arg(long, default_value = "golden")]
    pub golden_root: std::path::PathBuf,
    /// Root of the test-case tree (for goldens beside cases and the case metrics).
    #[arg(long, default_value = "test_cases")]
    pub root: std::path::PathBuf,
    /// Repository configuration (rules).
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: std::path::PathBuf,
    /// Platform of the golden files (default: the one recorded in the results).
    #[arg(long)]
    pub platform: Option<String>,
    /// Write JUnit XML here.
    #[arg(long)]
    pub junit: Option<std::path::PathBuf>,
    /// Write the markdown report here.
    #[arg(long)]
    pub markdown: Option<std::path::PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Unstable metrics fail the gate (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// Improvements beyond tolerance fail the gate, so goldens get refreshed.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Compare even when the GPU model or driver differs from the golden platform.
    #[arg(long)]
    pub allow_env_mismatch: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate compare` is being built in this change",
    ))
}
