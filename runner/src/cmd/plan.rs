//! `goldgate plan`: prints the expanded jobs with their environment changes and argv, without launching anything.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cases to plan (`<model>/<case>`); all under the root when none.
    pub cases: Vec<String>,
    #[command(flatten)]
    pub select: super::select::Selection,
    /// Repeats per job.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::list::Format::Table)]
    pub format: super::list::Format,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate plan` is being built in this change",
    ))
}
