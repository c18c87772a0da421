//! `goldgate compare`: compares recorded jobs with their golden files and gates by exit code.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::Stream;
use super::report_files::ReportFiles;
use goldgate_judge::compare::{CompareOptions, compare_records};
use goldgate_judge::report;
use goldgate_schema::Comparison;
use goldgate_schema::Exit;

/// Arguments of `goldgate compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several (then the newest run is
    /// judged; see `--all-runs` and `--run`). Default `results`, where `goldgate run` puts runs.
    #[arg(long, default_value = "results")]
    pub results: std::path::PathBuf,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    #[command(flatten)]
    pub root: super::args::CaseRoot,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Platform of the golden files (default: the one recorded in the results).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
    /// Judge with today's `model_config.yaml` of each case (METRICS, TEST_EVALUATION, MODE)
    /// instead of what the run recorded in its results.json.
    #[arg(long)]
    pub current_case: bool,
    #[command(flatten)]
    pub clocks: super::args::ClocksArg,
    #[command(flatten)]
    pub gate: super::args::GateArgs,
}

/// Loads the results folder, keeps the picked runs (saying on stderr which when others were
/// left out) and compares them (`compare`, `comment --results`).
pub(crate) fn compare_selected(
    results: &Path,
    opts: &CompareOptions,
    pick: &super::args::RunPick,
) -> Result<Comparison, AppError> {
    let records = pick.load(results, "judging")?;
    Ok(compare_records(records, opts)?)
}

/// Where `compare` writes its reports besides the terminal.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    pub junit: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub json: Option<PathBuf>,
    /// The run's wall time for the closing line (`goldgate run`, whose progress lines showed
    /// the failed jobs' log tails already); `None` for `compare`.
    pub elapsed: Option<std::time::Duration>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    args.gate.check()?;
    let opts = CompareOptions {
        current_case: args.current_case,
        ..args.clocks.compare_options(
            &args.config.load()?,
            &args.golden_root,
            &args.root,
            args.platform.clone(),
            args.gate.allow_env_mismatch,
        )
    };
    let comparison = compare_selected(&args.results, &opts, &args.pick)?;
    gate(&comparison, &args.gate, None)
}

/// Shows and writes the comparison with the gate's decision in it (so the saved JSON, and a PR
/// comment rendered from it, say what this exit code says), then gives the exit code (`compare`,
/// and `run` after it).
pub fn gate(
    comparison: &Comparison,
    gate: &super::args::GateArgs,
    elapsed: Option<std::time::Duration>,
) -> Result<Exit, AppError> {
    let outputs = Outputs {
        junit: gate.junit.clone(),
        markdown: gate.markdown.clone(),
        json: gate.json.clone(),
        elapsed,
    };
    let gated = comparison
        .clone()
        .gated(gate.strict, gate.fail_on_improvement);
    let trend = super::history_site::trend(&gate.trend, &gated)?;
    emit(&gated, &outputs, &trend)?;
    Ok(comparison.exit(gate.strict, gate.fail_on_improvement))
}

/// Prints the table with its warnings (stdout, or stderr when a report goes to stdout) and,
/// under GitHub Actions, annotations; writes the requested report files atomically (`-`:
/// stdout) and appends the markdown to `$GITHUB_STEP_SUMMARY`. `goldgate run` calls this after
/// comparing.
pub fn emit(c: &Comparison, outputs: &Outputs, trend: &str) -> Result<(), AppError> {
    let files = ReportFiles {
        markdown: outputs.markdown.as_deref(),
        junit: outputs.junit.as_deref(),
        json: outputs.json.as_deref(),
    };
    let (stream, print): (_, fn(std::fmt::Arguments<'_>)) = if files.stdout_taken() {
        (Stream::Stderr, super::output::stderr)
    } else {
        (Stream::Stdout, super::output::stdout)
    };
    let style = report::table::Style {
        color: super::output::color(stream),
        elapsed: outputs.elapsed,
        // Under `goldgate run` the progress lines showed each failed job's tail.
        tails_shown: outputs.elapsed.is_some(),
    };
    print(format_args!("{}", report::table::render(c, style)));
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        super::output::commands(stream, &report::annotations::render(c));
    }
    let markdown = report::markdown::render(c) + trend;
    files.write(
        &markdown,
        || report::junit::render(c),
        || report::json::render(c),
    )
}
