//! `goldgate history`'s flags: which store (`--db`), the subcommands and their arguments. Plain
//! clap types; `history` runs them.

use std::path::PathBuf;

/// Arguments of `goldgate history`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Which store.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreArgs {
    /// The history store: a PostgreSQL URL (`postgres://user@host/db`) or a SQLite file.
    /// Default: $GOLDGATE_HISTORY, else goldgate.yaml's `history.database`, else
    /// .goldgate/history.sqlite.
    #[arg(long = "db", global = true, value_name = "URL|FILE")]
    pub db: Option<String>,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
}

/// `goldgate history` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Store every run of a results folder (a rerun adds nothing twice).
    Ingest(IngestArgs),
    /// A metric of a case over commits, one row per run.
    Show(ShowArgs),
    /// Remove old runs.
    Prune(PruneArgs),
    /// Mark an intended change: from this commit on the series has a new baseline.
    Annotate(AnnotateArgs),
    /// Change points (E-divisive means, as Apache Otava finds them) of a stored series or of
    /// the series in a JSON file.
    Changes(ChangesArgs),
    /// Write a static site: an index and a page per case, a plot per metric over the runs.
    Site(SiteArgs),
}

/// Arguments of `history site`.
#[derive(clap::Args, Debug)]
pub struct SiteArgs {
    /// The folder to write (`index.html`, `cases/*.html`); nothing is written outside it.
    #[arg(long)]
    pub out: PathBuf,
    /// Only runs of this branch (default: every branch).
    #[arg(long)]
    pub branch: Option<String>,
    /// Only the newest N runs of each series.
    #[arg(long)]
    pub last: Option<usize>,
    /// A run's link, `{run}` replaced by its run id and `{path}` by its results.json path
    /// (e.g. a CI artifact URL); default: the stored results.json path.
    #[arg(long)]
    pub run_url: Option<String>,
    /// Only these metrics (repeatable; default: every metric).
    #[arg(long = "metric")]
    pub metrics: Vec<String>,
}

/// Arguments of `history changes`.
#[derive(clap::Args, Debug)]
pub struct ChangesArgs {
    /// A JSON file: an array of numbers, or an object of named arrays. Without it the series
    /// is read from the store (`--case`, `--metric`).
    #[arg(long, conflicts_with_all = ["case", "metric"])]
    pub input: Option<PathBuf>,
    /// The case of a stored series.
    #[arg(long = "case", requires = "metric")]
    pub case: Option<String>,
    /// The metric of a stored series.
    #[arg(long, requires = "case")]
    pub metric: Option<String>,
    #[command(flatten)]
    pub series: SeriesArgs,
    /// Points per window of the split step (Otava's default: 50).
    #[arg(long, default_value_t = 50)]
    pub window: usize,
    /// Largest p-value of a change point (Otava's default: 0.001).
    #[arg(long, default_value_t = 0.001)]
    pub max_pvalue: f64,
    /// Smallest relative change of a change point (0.05 = 5 %). Default: Otava's 0, except
    /// 0.01 for a stored exact counter or byte metric.
    #[arg(long)]
    pub min_magnitude: Option<f64>,
    /// One JSON line per series instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `history ingest`.
#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    /// A results folder: one run (`OUT/<run-id>`) or a folder of runs.
    pub dir: PathBuf,
    /// The commit under test (default: $GITHUB_SHA, else the workload's commit in the records).
    #[arg(long, env = "GITHUB_SHA")]
    pub commit: Option<String>,
    /// The branch the runs belong to (default: $GITHUB_REF_NAME, else `main`).
    #[arg(long, env = "GITHUB_REF_NAME", default_value = "main")]
    pub branch: String,
}

/// Which stored series of a case and metric `show` and `changes` read: its variant, platform
/// and branch.
#[derive(clap::Args, Debug, Clone)]
pub struct SeriesArgs {
    /// The variant's name.
    #[arg(long, default_value = "default")]
    pub variant: String,
    /// The platform (default: the only one the case was recorded on).
    #[arg(long)]
    pub platform: Option<String>,
    /// Only runs of this branch (default: every branch).
    #[arg(long)]
    pub branch: Option<String>,
}

/// Arguments of `history show`.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The case (`<model>/<case>`); without it (or without --metric) `show` lists what the
    /// store holds.
    #[arg(long = "case")]
    pub case: Option<String>,
    /// The metric (a golden name such as `lm loss`, or goldgate's key).
    #[arg(long)]
    pub metric: Option<String>,
    #[command(flatten)]
    pub series: SeriesArgs,
    /// Only the newest N runs.
    #[arg(long)]
    pub last: Option<usize>,
}

/// Arguments of `history prune`.
#[derive(clap::Args, Debug)]
pub struct PruneArgs {
    /// Remove runs started before this time: RFC 3339 with an offset
    /// (2026-06-01T00:00:00Z, 2026-06-01T09:00:00+09:00) or a date (2026-06-01, midnight UTC).
    #[arg(long, value_name = "TIME", value_parser = parse_cutoff)]
    pub before: Option<jiff::Timestamp>,
    /// Keep only the newest N runs.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Print what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_cutoff(text: &str) -> Result<jiff::Timestamp, String> {
    goldgate_judge::history::prune::parse_cutoff(text)
}

/// Arguments of `history annotate`.
#[derive(clap::Args, Debug)]
pub struct AnnotateArgs {
    /// The case.
    #[arg(long = "case")]
    pub case: String,
    /// The metric (default: every metric of the case).
    #[arg(long, default_value = "*")]
    pub metric: String,
    /// The commit of the intended change.
    #[arg(long)]
    pub commit: String,
    /// Why the series moves (shown in `show`, the site and the PR comment).
    #[arg(long)]
    pub note: String,
}
