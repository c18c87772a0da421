//! `goldgate bless`: writes golden files from recorded results, after printing what changes.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate bless`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`).
    #[arg(long)]
    pub from: std::path::PathBuf,
    /// Where golden files are written.
    #[arg(long, default_value = "golden")]
    pub golden_root: std::path::PathBuf,
    /// Only these cases.
    pub cases: Vec<String>,
    /// Print the diff, write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate bless` is being built in this change",
    ))
}
