//! `goldgate comment`: posts or updates the one sticky pull-request comment with timing and memory diffs.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate comment`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`).
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// Pull request number (default: from `GITHUB_EVENT_PATH`).
    #[arg(long)]
    pub pr: Option<u64>,
    /// Repository `OWNER/NAME` (default: `GITHUB_REPOSITORY`).
    #[arg(long)]
    pub repo: Option<String>,
    /// Which sticky comment to keep (default: the platform).
    #[arg(long)]
    pub key: Option<String>,
    /// Post nothing new when everything passes and no comment exists yet.
    #[arg(long)]
    pub only_on_change: bool,
    /// Print the body instead of posting it.
    #[arg(long)]
    pub dry_run: bool,
    /// Golden root used for the comparison.
    #[arg(long, default_value = "golden")]
    pub golden_root: std::path::PathBuf,
    /// Repository configuration (rules).
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: std::path::PathBuf,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate comment` is being built in this change",
    ))
}
