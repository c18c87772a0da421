//! `goldgate history`: the history store — `ingest` a results folder (idempotent), `prune`
//! old runs, `annotate` an intended change (a new baseline); `show` and `changes` read it
//! (`history_show`), `site` draws it (`history_site`). The store is `--db`, else `$GOLDGATE_HISTORY`, else goldgate.yaml's
//! `history.database`, else `.goldgate/history.sqlite` in the working directory.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{out, outln};
use goldgate_judge::history::folder;
use goldgate_judge::history::ingest::{self, IngestContext, IngestCount, JobRow};
use goldgate_judge::history::location::{DEFAULT_FILE, HISTORY_ENV};
use goldgate_judge::history::series::Annotation;
use goldgate_judge::history::{HistoryError, Location, SeriesKey, Store};
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

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
    /// The variant of a stored series.
    #[arg(long, default_value = "default")]
    pub variant: String,
    /// The platform of a stored series (default: the only one recorded).
    #[arg(long)]
    pub platform: Option<String>,
    /// Only runs of this branch.
    #[arg(long)]
    pub branch: Option<String>,
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

/// The series a command reads.
#[derive(clap::Args, Debug, Clone)]
pub struct SeriesArgs {
    /// The case (`<model>/<case>`).
    #[arg(long = "case")]
    pub case: String,
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
    /// The variant's name.
    #[arg(long, default_value = "default")]
    pub variant: String,
    /// The platform (default: the only one the case was recorded on).
    #[arg(long)]
    pub platform: Option<String>,
    /// Only runs of this branch (default: every branch).
    #[arg(long)]
    pub branch: Option<String>,
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

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    if let Command::Changes(a) = &args.command
        && let Some(path) = &a.input
    {
        return super::history_show::changes_of_file(path, a);
    }
    let mut store = match &args.command {
        Command::Show(_) | Command::Changes(_) | Command::Site(_) => open_read(&args.store)?,
        Command::Ingest(_) | Command::Prune(_) | Command::Annotate(_) => open(&args.store)?,
    };
    match args.command {
        Command::Ingest(a) => ingest_cmd(&mut store, &a),
        Command::Show(a) => super::history_show::show(&mut store, &a),
        Command::Prune(a) => prune(&mut store, &a),
        Command::Annotate(a) => annotate(&mut store, &a),
        Command::Changes(a) => super::history_show::changes(&mut store, &a),
        Command::Site(a) => super::history_site::site(&mut store, &a),
    }
}

/// Where the store is: `--db`, `$GOLDGATE_HISTORY`, goldgate.yaml, the default file.
pub fn location(args: &StoreArgs) -> Result<Location, AppError> {
    let cwd = std::env::current_dir().map_err(|source| super::error::CmdError::Cwd { source })?;
    if let Some(db) = args.db.clone().or_else(|| std::env::var(HISTORY_ENV).ok()) {
        return Ok(Location::parse(&db, &cwd));
    }
    let source = args.config.source()?;
    if let Some(path) = source.path() {
        let config = goldgate_core::config::Config::load(path)?;
        if let Some(db) = &config.history_database {
            let base = path.parent().unwrap_or(Path::new("."));
            return Ok(Location::parse(db, base));
        }
    }
    Ok(Location::parse(DEFAULT_FILE, &cwd))
}

/// Opens (and migrates) the store the flags name, to write it.
pub fn open(args: &StoreArgs) -> Result<Store, AppError> {
    let location = location(args)?;
    Ok(Store::open(&location, &now())?)
}

/// Opens the existing store the flags name, to read it ([`Store::open_read`]).
pub fn open_read(args: &StoreArgs) -> Result<Store, AppError> {
    let location = location(args)?;
    Ok(Store::open_read(&location)?)
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// Reads the runs of `dir` — only the jobs each run's run.json names ([`folder::read`]) — and
/// stores them; returns what was added and a note per listed job left out.
pub fn ingest_dir(
    store: &mut Store,
    dir: &Path,
    ctx: &IngestContext,
) -> Result<(IngestCount, Vec<String>), AppError> {
    let found = folder::read(dir)?;
    if found.runs.is_empty() {
        return Err(HistoryError::NotFound(format!(
            "no run.json in {} or its folders: ingest stores the runs `goldgate run` wrote \
             (pass its --out folder, or one OUT/<run-id>)",
            dir.display()
        ))
        .into());
    }
    let mut total = IngestCount::default();
    for run in &found.runs {
        // An A/B's jobs are arms of a comparison, not runs of a branch: a planted B arm stored
        // as `main` would become main's history.
        let jobs: Vec<_> = run.jobs.iter().filter(|j| !j.record.is_ab()).collect();
        total.ab_jobs += (run.jobs.len() - jobs.len()) as u64;
        let records: Vec<&RunRecord> = jobs.iter().map(|j| &j.record).collect();
        let Some(row) = ingest::run_row(&records, ctx) else {
            continue;
        };
        let rows: Vec<_> = jobs
            .iter()
            .map(|j| JobRow {
                passed: j.passed(),
                outcome: j.outcome_label(),
                ..ingest::job_row(&j.record, &j.path)
            })
            .collect();
        total.add(store.ingest(&row, &rows)?);
    }
    Ok((total, found.left_out))
}

fn ingest_cmd(store: &mut Store, a: &IngestArgs) -> Result<Exit, AppError> {
    let ctx = IngestContext {
        commit: a.commit.clone().filter(|c| !c.is_empty()),
        checkout: checkout_commit(),
        branch: a.branch.clone(),
        now: now(),
    };
    let (n, left_out) = ingest_dir(store, &a.dir, &ctx)?;
    outln!(
        "ingested {} runs, {} jobs ({} already stored), {} metrics, {} samples into {}",
        n.runs,
        n.jobs,
        n.skipped_jobs,
        n.metrics,
        n.samples,
        store.location()
    );
    if n.ab_jobs > 0 {
        outln!(
            "left out {} job(s) of `goldgate ab`: an A/B's arms are not runs of a branch (its ab.json holds the verdict)",
            n.ab_jobs
        );
    }
    for note in &left_out {
        outln!("  not stored: {note}");
    }
    Ok(Exit::Pass)
}

/// The commit checked out in the working directory (`git rev-parse HEAD`), when it is a git
/// checkout: what a run is of when neither `--commit`, `$GITHUB_SHA` nor the records say.
fn checkout_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "HEAD"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}

/// The series key of `a` and `metric`; the platform defaults to the only one recorded.
pub fn series_key(store: &mut Store, a: &SeriesArgs, metric: &str) -> Result<SeriesKey, AppError> {
    let platform = match &a.platform {
        Some(p) => p.clone(),
        None => only_platform(store, &a.case, &a.variant)?,
    };
    Ok(SeriesKey {
        case: a.case.clone(),
        variant: a.variant.clone(),
        platform,
        metric: metric.to_owned(),
        branch: a.branch.clone(),
    })
}

fn only_platform(store: &mut Store, case: &str, variant: &str) -> Result<String, AppError> {
    let series = store.series_runs()?;
    let mut platforms: Vec<&str> = series
        .iter()
        .filter(|((c, v, _, _), _)| c == case && v == variant)
        .map(|((_, _, p, _), _)| p.as_str())
        .collect();
    platforms.dedup();
    match platforms.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => {
            super::history_show::check_case(&series, case)?;
            let mut variants: Vec<&str> = series
                .iter()
                .filter(|(s, _)| s.0 == case)
                .map(|(s, _)| s.1.as_str())
                .collect();
            variants.dedup();
            Err(HistoryError::NotFound(format!(
                "the history store holds no run of {case} @ {variant}; its variants: {}",
                variants.join(", ")
            ))
            .into())
        }
        many => Err(HistoryError::Usage(format!(
            "{case} @ {variant} was recorded on several platforms ({}): name one with --platform",
            many.join(", ")
        ))
        .into()),
    }
}

fn prune(store: &mut Store, a: &PruneArgs) -> Result<Exit, AppError> {
    if a.before.is_none() && a.keep.is_none() {
        return Err(HistoryError::Usage(
            "history prune needs --before TIME or --keep N (it never removes everything unasked)"
                .into(),
        )
        .into());
    }
    let plan = store.prune(a.before, a.keep, a.dry_run)?;
    out!(
        "{}",
        goldgate_judge::report::history::prune_text(
            &plan,
            a.dry_run,
            &store.location().to_string()
        )
    );
    Ok(Exit::Pass)
}

fn annotate(store: &mut Store, a: &AnnotateArgs) -> Result<Exit, AppError> {
    let note = Annotation {
        case: a.case.clone(),
        metric: a.metric.clone(),
        commit: a.commit.clone(),
        note: a.note.clone(),
        created_at: now(),
    };
    store.annotate(&note)?;
    outln!(
        "annotated {} ({}) at {}: {}",
        note.case,
        note.metric,
        goldgate_judge::report::history::short(&note.commit),
        note.note
    );
    Ok(Exit::Pass)
}
