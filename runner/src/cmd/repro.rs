//! `goldgate repro`: prints a self-contained bash script that reproduces one job exactly.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate repro`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The case to reproduce (`<model>/<case>`).
    pub case: String,
    #[command(flatten)]
    pub select: super::select::Selection,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate repro` is being built in this change",
    ))
}
