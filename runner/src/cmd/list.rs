//! `goldgate list`: lists the cases under a root with their test type, launcher, metrics and golden files.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate list`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Root of the test-case tree.
    #[arg(long, default_value = "test_cases")]
    pub root: std::path::PathBuf,
    /// Only cases whose name matches this regular expression.
    #[arg(long)]
    pub filter: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// How `list` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    /// A table for people.
    Table,
    /// A JSON array for scripts (one object per case, with `name`).
    Json,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate list` is being built in this change",
    ))
}
