//! `goldgate plan`: prints the expanded jobs with their environment changes and argv, without launching anything.

use std::path::PathBuf;

use super::output::out;
use super::select::{CaseArgs, Output, Selection, absolute, load_cases, plan_jobs};
use crate::exit::{AppError, Exit};
use crate::plan::{render_plan_json, render_plan_text};

/// Arguments of `goldgate plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub which: CaseArgs,
    #[command(flatten)]
    pub select: Selection,
    /// Repeats per job.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Output folder the jobs would write to (`OUT/<run-id>/...`).
    #[arg(long, default_value = "goldgate-out")]
    pub out: PathBuf,
    /// Run id used in the job folders (`goldgate run` makes a fresh one).
    #[arg(long, default_value = "plan")]
    pub run_id: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = super::list::Format::Table)]
    pub format: super::list::Format,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let cases = load_cases(&args.select.root, &args.which.filter()?)?;
    let output = Output {
        out_dir: absolute(&args.out)?,
        run_id: args.run_id,
    };
    let config = crate::config::Config::load(&args.select.config)?;
    let jobs = plan_jobs(&config, &args.select, &cases, args.repeat, &output)?;
    let text = match args.format {
        super::list::Format::Table => render_plan_text(&jobs),
        super::list::Format::Json => render_plan_json(&jobs),
    };
    out!("{text}");
    Ok(Exit::Pass)
}
