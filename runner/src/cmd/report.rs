//! `goldgate report`: renders recorded runs without judging them.

use crate::exit::{AppError, Exit};

/// Arguments of `goldgate report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`).
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// Write one SVG memory timeline per job into this folder.
    #[arg(long)]
    pub svg: Option<std::path::PathBuf>,
    /// Write the markdown report here.
    #[arg(long)]
    pub markdown: Option<std::path::PathBuf>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let _ = args;
    Err(AppError::usage(
        "`goldgate report` is being built in this change",
    ))
}
