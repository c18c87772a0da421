//! `goldgate comment`: posts or updates the one sticky pull-request comment with timing and memory diffs.
//!
//! Renders the comparison the check saved (`--comparison FILE`, one per CI shard, merged; never
//! judged again, so the comment cannot contradict the check), or compares a recorded run
//! (`--results DIR`, for local use), then frames the markdown report (marker, run link, size
//! limit) and creates or updates the comment for the key.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{errln, out};
use goldgate_judge::compare::saved::{merge, parse_saved};
use goldgate_judge::compare::{CompareError, CompareOptions};
use goldgate_judge::github::{self, Action, Client, RetryPolicy, context};
use goldgate_judge::report;
use goldgate_schema::Exit;
use goldgate_schema::{Comparison, Verdict};

/// Arguments of `goldgate comment`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A comparison saved by `goldgate compare --json FILE` (repeatable: one per shard, merged).
    /// The comment shows exactly what that check decided. CI uses this.
    #[arg(
        long = "comparison",
        value_name = "FILE",
        required_unless_present = "results"
    )]
    pub comparisons: Vec<PathBuf>,
    /// Compare this run directory (`OUT/<run-id>`, or a folder of runs: the newest; see
    /// `--run` and `--all-runs`) with the goldens instead, as `goldgate compare` would.
    #[arg(long, conflicts_with = "comparisons")]
    pub results: Option<PathBuf>,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    /// Pull request number (default: from `GITHUB_EVENT_PATH`); pull requests start at 1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub pr: Option<u64>,
    /// Repository `OWNER/NAME` (default: `GITHUB_REPOSITORY`).
    #[arg(long)]
    pub repo: Option<String>,
    /// Which sticky comment to keep (default: the platform).
    #[arg(long)]
    pub key: Option<String>,
    /// Post nothing new when everything passes and no comment exists yet.
    #[arg(long)]
    pub only_on_change: bool,
    /// Print the body instead of posting it.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    #[command(flatten)]
    pub root: super::args::CaseRoot,
    /// Platform of the golden files (default: the one recorded in the results).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    #[command(flatten)]
    pub trend: super::args::TrendArgs,
}

/// The finished comment and what the bot needs to know about the run.
#[derive(Debug)]
pub struct Prepared {
    pub key: String,
    pub body: String,
    /// Every job passed with no improvement, instability or failure.
    pub all_passed: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let env = |k: &str| std::env::var(k).ok();
    let prepared = prepare(&args, &env)?;
    if args.dry_run {
        out!("{}", prepared.body);
        return Ok(Exit::Pass);
    }
    let action = post(&args, &prepared, &env)?;
    errln!("goldgate comment: {}", action.describe());
    Ok(Exit::Pass)
}

/// Reads the saved comparisons (or compares the run) and builds the comment (no network).
pub fn prepare(args: &Args, env: &dyn Fn(&str) -> Option<String>) -> Result<Prepared, AppError> {
    let comparison = match &args.results {
        Some(results) => {
            let opts = CompareOptions::from_config(
                &args.config.load()?,
                args.golden_root.path.clone(),
                args.root.path.clone(),
                args.platform.clone(),
                false,
            );
            super::compare::compare_selected(results, &opts, &args.pick)?
        }
        None if args.pick.all_runs || !args.pick.runs.is_empty() => {
            return Err(super::error::CmdError::BadValue {
                message: "--run and --all-runs pick runs of --results DIR; a saved --comparison \
                          holds the runs its check judged",
            }
            .into());
        }
        None => read_saved(&args.comparisons)?,
    };
    let key = args
        .key
        .clone()
        .unwrap_or_else(|| comparison.platform.clone());
    github::body::validate_key(&key)?;
    let trend = args.trend.markdown(&comparison)?;
    let body = comment_body(&key, &comparison, &trend, context::run_url(env).as_deref());
    Ok(Prepared {
        key,
        body,
        all_passed: all_passed(&comparison),
    })
}

/// The saved comparisons, merged into one.
fn read_saved(paths: &[PathBuf]) -> Result<Comparison, CompareError> {
    let mut parts = Vec::new();
    for path in paths {
        let limit = goldgate_core::metrics::record::MAX_RECORD_BYTES;
        let text =
            goldgate_core::fsio::read_text(path, limit).map_err(|source| CompareError::Read {
                path: path.clone(),
                source,
            })?;
        parts.push((path.clone(), parse_saved(Path::new(path), &text)?));
    }
    merge(parts)
}

/// The comment for a comparison: the markdown report framed for GitHub.
fn comment_body(key: &str, comparison: &Comparison, trend: &str, run_url: Option<&str>) -> String {
    let markdown = report::markdown::render(comparison) + trend;
    github::compose(key, &markdown, run_url)
}

/// Whether the run is worth no new comment: every job plainly passed.
pub fn all_passed(comparison: &Comparison) -> bool {
    comparison.jobs.iter().all(|j| j.verdict == Verdict::Pass)
}

/// Resolves repository, pull request and token, then creates or updates the comment.
fn post(
    args: &Args,
    prepared: &Prepared,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Action, AppError> {
    let repo = context::repo(args.repo.as_deref(), env)?;
    let pr = context::pr_number(args.pr, env)?;
    let token = context::token(env)?;
    let api = context::api_base(env)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| super::error::CmdError::Runtime { source })?;
    let action = runtime.block_on(async {
        let client = Client::new(&api, &token, RetryPolicy::default())?;
        let (key, body) = (&prepared.key, &prepared.body);
        github::upsert(
            &client,
            &repo,
            pr,
            key,
            body,
            args.only_on_change,
            prepared.all_passed,
        )
        .await
    })?;
    Ok(action)
}
