//! `goldgate bless`: writes golden files from recorded results, after printing what changes.

use crate::compare::{RuleSet, bless};
use crate::exit::{AppError, Exit};
use crate::metrics::record::load_results;

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
    /// Repository configuration (its rules say how each metric is summarised in the diff; its
    /// variant axes say which variant is the default one).
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: std::path::PathBuf,
    /// Platform in the golden file name (default: the one recorded in the results).
    #[arg(long)]
    pub platform: Option<String>,
}

/// Runs the command: prints the per-metric diff, then writes (unless `--dry-run`).
#[allow(clippy::print_stdout)]
pub fn run(args: Args) -> Result<Exit, AppError> {
    let config = crate::config::Config::load(&args.config)?;
    let rules = RuleSet::from_config(&config.rules);
    let records = load_results(&args.from)?;
    let files = bless::plan(
        records,
        &args.golden_root,
        args.platform.as_deref(),
        &args.cases,
        &args.from,
        &config.axis_defaults(),
        &rules,
    )?;
    print!("{}", bless::render_diff(&files, &rules));
    if args.dry_run {
        println!("dry run: {} golden file(s) not written", files.len());
    } else {
        bless::write(&files)?;
        println!("wrote {} golden file(s)", files.len());
    }
    Ok(Exit::Pass)
}
