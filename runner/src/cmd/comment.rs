//! `goldgate comment`: posts or updates the one sticky pull-request comment with timing and memory diffs.
//!
//! Renders the comparison the check saved (`--comparison FILE`, one per CI shard, merged; never
//! judged again, so the comment cannot contradict the check), or compares a recorded run
//! (`--results DIR`, for local use), with the A/B results `goldgate ab` saved beside it (`--ab
//! FILE`, one per case: then they are the comment's timing section and the golden timing rows
//! are diagnostic, `report::comment`), then frames the markdown report (marker, run link, size
//! limit) and creates or updates the comment for the key.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{errln, out};
use goldgate_judge::compare::ab::outcome::AbReport;
use goldgate_judge::compare::saved::{merge, parse_saved};
use goldgate_judge::compare::{CompareError, CompareOptions};
use goldgate_judge::github::{self, Action, Client, RetryPolicy, context};
use goldgate_judge::report;
use goldgate_schema::Comparison;
use goldgate_schema::Exit;

/// Arguments of `goldgate comment`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A comparison saved by `goldgate compare --json FILE` (repeatable: one per shard, merged).
    /// The comment shows exactly what that check decided. CI uses this.
    #[arg(
        long = "comparison",
        value_name = "FILE",
        required_unless_present_any = ["results", "abs"]
    )]
    pub comparisons: Vec<PathBuf>,
    /// An A/B result saved by `goldgate ab --json FILE` (repeatable: one per case). Its timing
    /// verdicts are the comment's timing section; the goldens' timing rows of the metrics it
    /// judged are shown as diagnostic, not gated. CI's `gpu-ab` job saves these.
    #[arg(long = "ab", value_name = "FILE")]
    pub abs: Vec<PathBuf>,
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
    let comparison = comparison(args)?;
    let abs = read_abs(&args.abs)?;
    let platform = same_platform(comparison.as_ref(), &abs, &args.abs)?;
    let key = args.key.clone().unwrap_or(platform);
    github::body::validate_key(&key)?;
    let trend = match &comparison {
        Some(c) => super::history_site::trend(&args.trend, c)?,
        None => String::new(),
    };
    let markdown = report::comment::render(comparison.as_ref(), &abs) + &trend;
    let body = github::compose(&key, &markdown, context::run_url(env).as_deref());
    Ok(Prepared {
        key,
        all_passed: report::comment::all_passed(comparison.as_ref(), &abs),
        body,
    })
}

/// The comparison the comment shows: compared from `--results`, read from `--comparison`, or
/// none (an A/B alone).
fn comparison(args: &Args) -> Result<Option<Comparison>, AppError> {
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
        None if args.comparisons.is_empty() => return Ok(None),
        None => read_saved(&args.comparisons)?,
    };
    Ok(Some(comparison))
}

/// The saved A/B results, in the order given.
fn read_abs(paths: &[PathBuf]) -> Result<Vec<AbReport>, CompareError> {
    let mut out = Vec::new();
    for path in paths {
        let limit = goldgate_core::records::MAX_RECORD_BYTES;
        let text =
            goldgate_core::fsio::read_text(path, limit).map_err(|source| CompareError::Read {
                path: path.clone(),
                source,
            })?;
        out.push(AbReport::parse(path, &text)?);
    }
    Ok(out)
}

/// The one platform of the comment: the comparison's and every A/B's (one sticky comment per
/// platform).
fn same_platform(
    comparison: Option<&Comparison>,
    abs: &[AbReport],
    paths: &[PathBuf],
) -> Result<String, CompareError> {
    let platform = match (comparison, abs.first()) {
        (Some(c), _) => c.platform.clone(),
        (None, Some(r)) => r.platform.clone(),
        (None, None) => return Err(CompareError::NoComparison),
    };
    for (r, path) in abs.iter().zip(paths) {
        if r.platform != platform {
            return Err(CompareError::SavedAb {
                path: path.clone(),
                message: format!(
                    "its platform is {}, the comparison's {platform}; one comment holds one platform",
                    r.platform
                ),
            });
        }
    }
    Ok(platform)
}

/// The saved comparisons, merged into one.
fn read_saved(paths: &[PathBuf]) -> Result<Comparison, CompareError> {
    let mut parts = Vec::new();
    for path in paths {
        let limit = goldgate_core::records::MAX_RECORD_BYTES;
        let text =
            goldgate_core::fsio::read_text(path, limit).map_err(|source| CompareError::Read {
                path: path.clone(),
                source,
            })?;
        parts.push((path.clone(), parse_saved(Path::new(path), &text)?));
    }
    merge(parts)
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
