//! `goldgate bless`: writes golden files from recorded results, after printing what changes.

use super::error::AppError;
use super::output::{errln, out, outln};
use crate::compare::{RuleSet, bless, load_runs};
use crate::exit::Exit;

/// Arguments of `goldgate bless`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several (then the newest run is
    /// blessed; see `--all-runs` and `--run`).
    #[arg(long)]
    pub from: std::path::PathBuf,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    /// Only these cases.
    pub cases: Vec<String>,
    /// Print the diff, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Platform in the golden file name (default: the one recorded in the results).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
}

/// Runs the command: prints the per-metric diff, then writes (unless `--dry-run`).
pub fn run(args: Args) -> Result<Exit, AppError> {
    let config = args.config.load()?;
    let rules = RuleSet::from_config(&config.rules);
    let selection = args.pick.selection();
    let (records, note) = load_runs(&args.from, &selection)?;
    if let Some(note) = note {
        errln!("goldgate: {note}");
    }
    let files = bless::plan(
        records,
        &args.golden_root.path,
        args.platform.as_deref(),
        &args.cases,
        &args.from,
        &config.axis_defaults(),
        &rules,
    )?;
    out!("{}", bless::render_diff(&files, &rules));
    if args.dry_run {
        outln!("dry run: {} golden file(s) not written", files.len());
    } else {
        bless::write(&files, &args.golden_root.path)?;
        outln!("wrote {} golden file(s)", files.len());
    }
    Ok(Exit::Pass)
}
