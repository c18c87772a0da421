//! `goldgate extract`: runs the Megatron log parser over existing logs.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate extract`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files (e.g. downloaded from CI).
    #[arg(required = true)]
    pub logs: Vec<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::list::Format::Table)]
    pub format: super::list::Format,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate extract` is being built in this change",
    ))
}
