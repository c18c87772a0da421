//! `goldgate history`: the history store — `ingest` a results folder (idempotent), `show` a
//! metric of a case over commits, `prune` old runs, `annotate` an intended change (a new
//! baseline). The store is `--db`, else `$GOLDGATE_HISTORY`, else goldgate.yaml's
//! `history.database`, else `.goldgate/history.sqlite` in the working directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{out, outln};
use goldgate_core::metrics::record::{load_indexes, load_results};
use goldgate_judge::history::ingest::{self, IngestContext, IngestCount};
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
    /// Smallest relative change of a change point (0.05 = 5 %; Otava's default: 0).
    #[arg(long, default_value_t = 0.0)]
    pub min_magnitude: f64,
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
    #[command(flatten)]
    pub series: SeriesArgs,
    /// The metric (a golden name such as `lm loss`, or goldgate's key).
    #[arg(long)]
    pub metric: String,
    /// Only the newest N runs.
    #[arg(long)]
    pub last: Option<usize>,
}

/// Arguments of `history prune`.
#[derive(clap::Args, Debug)]
pub struct PruneArgs {
    /// Remove runs started before this time (RFC 3339, e.g. 2026-06-01T00:00:00Z).
    #[arg(long)]
    pub before: Option<String>,
    /// Keep only the newest N runs.
    #[arg(long)]
    pub keep: Option<usize>,
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
        return print_changes(&input_series(path)?, a);
    }
    let mut store = open(&args.store)?;
    match args.command {
        Command::Ingest(a) => ingest_cmd(&mut store, &a),
        Command::Show(a) => show(&mut store, &a),
        Command::Prune(a) => prune(&mut store, &a),
        Command::Annotate(a) => annotate(&mut store, &a),
        Command::Changes(a) => changes(&mut store, &a),
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

/// Opens (and migrates) the store the flags name.
pub fn open(args: &StoreArgs) -> Result<Store, AppError> {
    let location = location(args)?;
    Ok(Store::open(&location, &now())?)
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// Reads every run of `dir` (records through `metrics::record`) and stores them.
pub fn ingest_dir(
    store: &mut Store,
    dir: &Path,
    ctx: &IngestContext,
) -> Result<IngestCount, AppError> {
    let records = load_results(dir)?;
    let known_runs: Vec<String> = load_indexes(dir)?
        .into_iter()
        .map(|(_, index)| index.run_id)
        .collect();
    let mut by_run: BTreeMap<&str, Vec<(&PathBuf, &RunRecord)>> = BTreeMap::new();
    for (path, record) in &records {
        by_run
            .entry(record.run_id.as_str())
            .or_default()
            .push((path, record));
    }
    let mut total = IngestCount::default();
    for (run_id, jobs) in &by_run {
        let refs: Vec<&RunRecord> = jobs.iter().map(|(_, r)| *r).collect();
        let Some(run) = ingest::run_row(&refs, ctx) else {
            continue;
        };
        let rows: Vec<_> = jobs
            .iter()
            .map(|(path, r)| ingest::job_row(r, &relative(dir, path, run_id, &known_runs)))
            .collect();
        total.add(store.ingest(&run, &rows)?);
    }
    Ok(total)
}

/// The record's path from its run folder on (`<run-id>/<case>/…/results.json`): the store
/// outlives the folder it was read from.
fn relative(dir: &Path, path: &Path, run_id: &str, _known: &[String]) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    let text = rel.to_string_lossy();
    if text.starts_with(run_id) {
        text.into_owned()
    } else {
        format!("{run_id}/{text}")
    }
}

fn ingest_cmd(store: &mut Store, a: &IngestArgs) -> Result<Exit, AppError> {
    let ctx = IngestContext {
        commit: a.commit.clone().filter(|c| !c.is_empty()),
        branch: a.branch.clone(),
        now: now(),
    };
    let n = ingest_dir(store, &a.dir, &ctx)?;
    outln!(
        "ingested {} runs, {} jobs ({} already stored), {} metrics, {} samples into {}",
        n.runs,
        n.jobs,
        n.skipped_jobs,
        n.metrics,
        n.samples,
        store.location()
    );
    Ok(Exit::Pass)
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
    let mut platforms: Vec<String> = store
        .series_names()?
        .into_iter()
        .filter(|(c, v, _, _)| c == case && v == variant)
        .map(|(_, _, p, _)| p)
        .collect();
    platforms.dedup();
    match platforms.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(HistoryError::NotFound(format!(
            "the history store holds no run of {case} @ {variant}"
        ))
        .into()),
        many => Err(HistoryError::Usage(format!(
            "{case} @ {variant} was recorded on several platforms ({}): name one with --platform",
            many.join(", ")
        ))
        .into()),
    }
}

fn show(store: &mut Store, a: &ShowArgs) -> Result<Exit, AppError> {
    let key = series_key(store, &a.series, &a.metric)?;
    let mut points = store.series(&key)?;
    if points.is_empty() {
        return Err(HistoryError::NotFound(format!(
            "no passed job of {} @ {} on {} recorded {}",
            key.case, key.variant, key.platform, key.metric
        ))
        .into());
    }
    if let Some(n) = a.last {
        points.drain(..points.len().saturating_sub(n));
    }
    let notes = store.annotations(&key.case)?;
    let changes = goldgate_judge::history::changes::of_points(&points);
    out!(
        "{}",
        goldgate_judge::report::history::series_table(&key, &points, &changes, &notes)
    );
    Ok(Exit::Pass)
}

fn prune(store: &mut Store, a: &PruneArgs) -> Result<Exit, AppError> {
    if a.before.is_none() && a.keep.is_none() {
        return Err(HistoryError::Usage(
            "history prune needs --before TIME or --keep N (it never removes everything unasked)"
                .into(),
        )
        .into());
    }
    let removed = store.prune(a.before.as_deref(), a.keep)?;
    outln!("removed {} runs from {}", removed.len(), store.location());
    for run in &removed {
        outln!("  {run}");
    }
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

/// The series of `--input`: one unnamed array, or named arrays in file order.
fn input_series(path: &Path) -> Result<Vec<(String, Vec<f64>)>, AppError> {
    let bad = |message: String| HistoryError::Usage(format!("{}: {message}", path.display()));
    let text = goldgate_core::fsio::read_text(path, 256 << 20).map_err(|e| bad(e.to_string()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let numbers = |name: &str, v: &serde_json::Value| -> Result<Vec<f64>, HistoryError> {
        let items = v
            .as_array()
            .ok_or_else(|| bad(format!("series `{name}` is not an array of numbers")))?;
        items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .or(x.is_null().then_some(f64::NAN))
                    .ok_or_else(|| bad(format!("series `{name}`, item {i}: `{x}` is not a number")))
            })
            .collect()
    };
    match &json {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(name, v)| Ok((name.clone(), numbers(name, v)?)))
            .collect(),
        other => Ok(vec![("series".to_owned(), numbers("series", other)?)]),
    }
}

fn changes(store: &mut Store, a: &ChangesArgs) -> Result<Exit, AppError> {
    let series = match (&a.case, &a.metric) {
        (Some(case), Some(metric)) => {
            let args = SeriesArgs {
                case: case.clone(),
                variant: a.variant.clone(),
                platform: a.platform.clone(),
                branch: a.branch.clone(),
            };
            let key = series_key(store, &args, metric)?;
            let medians = store.series(&key)?.iter().map(|p| p.median()).collect();
            vec![(format!("{case} {metric}"), medians)]
        }
        _ => {
            return Err(HistoryError::Usage(
                "history changes needs --input FILE, or --case and --metric".into(),
            )
            .into());
        }
    };
    print_changes(&series, a)
}

/// One JSON line per series: its change points, the weak ones and the search's own time.
fn print_changes(series: &[(String, Vec<f64>)], a: &ChangesArgs) -> Result<Exit, AppError> {
    use goldgate_judge::history::changes::{Options, detect};
    if a.window < 2 || !(0.0..=1.0).contains(&a.max_pvalue) || a.min_magnitude < 0.0 {
        return Err(HistoryError::Usage(
            "--window takes 2 or more, --max-pvalue 0 to 1, --min-magnitude 0 or more".into(),
        )
        .into());
    }
    let opts = Options {
        window: a.window,
        max_pvalue: a.max_pvalue,
        min_magnitude: a.min_magnitude,
    };
    for (name, values) in series {
        let started = std::time::Instant::now();
        let found = detect(values, &opts);
        let seconds = started.elapsed().as_secs_f64();
        let line = serde_json::json!({
            "series": name,
            "points": values.len(),
            "change_points": found.indices(),
            "weak": found.weak.iter().map(|c| c.index).collect::<Vec<_>>(),
            "seconds": seconds,
        });
        outln!("{line}");
    }
    Ok(Exit::Pass)
}
