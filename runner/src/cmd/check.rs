//! `goldgate check`: validates every case and golden file under a root; a linter for pull requests.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Root of the test-case tree.
    #[arg(long, default_value = "test_cases")]
    pub root: std::path::PathBuf,
    /// Golden root to check as well (`<root>/<model>/<case>/golden_values_*.json`).
    #[arg(long, default_value = "golden")]
    pub golden_root: std::path::PathBuf,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate check` is being built in this change",
    ))
}
