//! `goldgate power`: from unchanged jobs (and jobs with a planted slowdown), the false alarms and
//! the smallest detected change of each rule, for 1, 3 and 5 repeats per gate run.

use std::path::PathBuf;

use super::error::AppError;
use super::error::CmdError;
use super::output::out;
use goldgate_core::records::{load_all_results, load_results};
use goldgate_core::rules::RuleSet;
use goldgate_judge::compare::noise::power::{self, PowerOptions};
use goldgate_schema::Exit;

/// Arguments of `goldgate power`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A folder of unchanged jobs: one run, or a folder of runs (every run in it is used, warm-up
    /// jobs reported and left out).
    #[arg(long)]
    pub results: PathBuf,
    /// Jobs with a planted slowdown, as `SIZE=DIR` where SIZE is `+10%` (of the unchanged
    /// median) or `0.25s` (added to every save). Repeatable.
    #[arg(long = "planted", value_name = "SIZE=DIR", value_parser = parse_planted)]
    pub planted: Vec<(String, PathBuf)>,
    /// Repeats per gate run to evaluate.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5")]
    pub repeats: Vec<usize>,
    /// Planted sizes to report detection rates at (shares: 0.1 = +10 %).
    #[arg(long = "size", value_delimiter = ',', default_value = "0.05,0.1,0.2")]
    pub sizes: Vec<f64>,
    /// Golden jobs per comparison (default: every unchanged job not judged as the run).
    #[arg(long)]
    pub golden_jobs: Option<usize>,
    /// Only these metrics (repeatable; default: every metric judged over repeats).
    #[arg(long = "metric")]
    pub metrics: Vec<String>,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Also write the report as markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

fn parse_planted(text: &str) -> Result<(String, PathBuf), String> {
    let (size, dir) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not SIZE=DIR (e.g. +10%=runs/planted10)"))?;
    power::parse_size(size, 1.0)
        .ok_or_else(|| format!("`{size}` is not a size such as +10% or 0.25s"))?;
    Ok((size.to_owned(), PathBuf::from(dir)))
}

/// Runs the command: prints the report, writes the markdown when asked.
pub fn run(args: Args) -> Result<Exit, AppError> {
    if args.repeats.contains(&0) {
        return Err(CmdError::BadValue {
            message: "--repeats takes counts of 1 or more",
        }
        .into());
    }
    if args.sizes.iter().any(|s| !s.is_finite() || *s <= 0.0) {
        return Err(CmdError::BadValue {
            message: "--size takes shares above 0 (0.1 = +10 %)",
        }
        .into());
    }
    let rules = RuleSet::from_config(&args.config.load()?.rules);
    let unchanged = load_all_results(&args.results)?;
    let mut planted = Vec::new();
    for (label, dir) in &args.planted {
        planted.push((label.clone(), load_results(dir)?));
    }
    let opts = PowerOptions {
        repeats: args.repeats.clone(),
        golden_jobs: args.golden_jobs,
        sizes: args.sizes.clone(),
    };
    let report = power::power(unchanged, &planted, &rules, &args.metrics, &opts);
    if report.metrics.is_empty() {
        return Err(CmdError::NothingToJudge {
            results: args.results.clone(),
        }
        .into());
    }
    out!(
        "{}",
        goldgate_judge::report::power::render_terminal(&report)
    );
    if let Some(path) = &args.markdown {
        let text = goldgate_judge::report::power::render_markdown(&report);
        goldgate_core::fsio::write_atomic(path, text.as_bytes()).map_err(|source| {
            CmdError::Write {
                path: path.clone(),
                source,
            }
        })?;
    }
    Ok(Exit::Pass)
}
