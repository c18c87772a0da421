//! `goldgate history`: the history store — `ingest` a results folder (idempotent), `show` a
//! metric of a case over commits, `prune` old runs, `annotate` an intended change (a new
//! baseline). The store is `--db`, else `$GOLDGATE_HISTORY`, else goldgate.yaml's
//! `history.database`, else `.goldgate/history.sqlite` in the working directory.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{out, outln};
use crate::exit::Exit;
use crate::history::folder;
use crate::history::ingest::{self, IngestContext, IngestCount, JobRow};
use crate::history::location::{DEFAULT_FILE, HISTORY_ENV};
use crate::history::series::Annotation;
use crate::history::{HistoryError, Location, SeriesKey, Store};
use crate::metrics::RunRecord;

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
    crate::history::prune::parse_cutoff(text)
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
        let series: Vec<ChangesInput> = input_series(path)?
            .into_iter()
            .map(|(name, values)| ChangesInput {
                name,
                key: None,
                values,
                runs: Vec::new(),
            })
            .collect();
        return print_changes(&series, a);
    }
    let mut store = match &args.command {
        Command::Show(_) | Command::Changes(_) | Command::Site(_) => open_read(&args.store)?,
        Command::Ingest(_) | Command::Prune(_) | Command::Annotate(_) => open(&args.store)?,
    };
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
        let config = crate::config::Config::load(path)?;
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
        let records: Vec<&RunRecord> = run.jobs.iter().map(|j| &j.record).collect();
        let Some(row) = ingest::run_row(&records, ctx) else {
            continue;
        };
        let rows: Vec<_> = run
            .jobs
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
            check_case(&series, case)?;
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

fn show(store: &mut Store, a: &ShowArgs) -> Result<Exit, AppError> {
    let (Some(case), Some(metric)) = (&a.case, &a.metric) else {
        let series = store.series_runs()?;
        if series.is_empty() {
            return Err(
                HistoryError::NotFound(format!("{} holds no runs", store.location())).into(),
            );
        }
        if let Some(case) = &a.case {
            check_case(&series, case)?;
        }
        out!(
            "{}",
            crate::report::history::stored_table(&series, a.case.as_deref())
        );
        return Ok(Exit::Pass);
    };
    let args = SeriesArgs {
        case: case.clone(),
        variant: a.variant.clone(),
        platform: a.platform.clone(),
        branch: a.branch.clone(),
    };
    let key = series_key(store, &args, metric)?;
    let mut points = store.series(&key)?;
    if points.is_empty() {
        return Err(no_points(store, &key)?.into());
    }
    if let Some(n) = a.last {
        points.drain(..points.len().saturating_sub(n));
    }
    let notes = store.annotations(&key.case)?;
    let changes = crate::history::changes::of_points(&points, &key.metric);
    out!(
        "{}",
        crate::report::history::series_table(&key, &points, &changes, &notes)
    );
    Ok(Exit::Pass)
}

/// Why a series has no points: a metric the case never recorded (with the names near it and
/// every metric it has), else no passed job of it.
fn no_points(store: &mut Store, key: &SeriesKey) -> Result<HistoryError, AppError> {
    let metrics: Vec<String> = store
        .series_names()?
        .into_iter()
        .filter(|(c, v, p, _)| (c, v, p) == (&key.case, &key.variant, &key.platform))
        .map(|(_, _, _, m)| m)
        .collect();
    let of = format!("{} @ {} on {}", key.case, key.variant, key.platform);
    if metrics.contains(&key.metric) {
        return Ok(HistoryError::NotFound(format!(
            "no passed job of {of} recorded {}",
            key.metric
        )));
    }
    let near = crate::history::series::near(&key.metric, &metrics);
    let mut text = format!("{of} has no metric `{}`", key.metric);
    if !near.is_empty() {
        text.push_str(&format!("; did you mean {}?", quoted(&near)));
    }
    text.push_str(&format!("\nits metrics: {}", metrics.join(", ")));
    Ok(HistoryError::NotFound(text))
}

/// An error when `case` names nothing stored, with the cases near it.
fn check_case(series: &[(crate::history::SeriesName, i64)], case: &str) -> Result<(), AppError> {
    let mut cases: Vec<String> = series.iter().map(|(s, _)| s.0.clone()).collect();
    cases.dedup();
    if cases.iter().any(|c| c == case) {
        return Ok(());
    }
    let near = crate::history::series::near(case, &cases);
    let mut text = format!("the history store holds no run of {case}");
    if !near.is_empty() {
        text.push_str(&format!("; did you mean {}?", quoted(&near)));
    }
    Err(HistoryError::NotFound(text).into())
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
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
        crate::report::history::prune_text(&plan, a.dry_run, &store.location().to_string())
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
        crate::report::history::short(&note.commit),
        note.note
    );
    Ok(Exit::Pass)
}

/// The series of `--input`: one unnamed array, or named arrays in file order.
fn input_series(path: &Path) -> Result<Vec<(String, Vec<f64>)>, AppError> {
    let bad = |message: String| HistoryError::Usage(format!("{}: {message}", path.display()));
    let text = crate::fsio::read_text(path, 256 << 20).map_err(|e| bad(e.to_string()))?;
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

/// The JSON line of one series: its change points, the weak ones, the search's own time and,
/// for a stored series, its key and the runs where the change points start.
fn changes_json(
    s: &ChangesInput,
    found: &crate::history::changes::Detection,
    seconds: f64,
) -> serde_json::Value {
    let mut line = serde_json::json!({
        "series": s.name,
        "points": s.values.len(),
        "change_points": found.indices(),
        "weak": found.weak.iter().map(|c| c.index).collect::<Vec<_>>(),
        "seconds": seconds,
    });
    if let Some(k) = &s.key {
        line["case"] = k.case.clone().into();
        line["variant"] = k.variant.clone().into();
        line["platform"] = k.platform.clone().into();
        line["metric"] = k.metric.clone().into();
        line["change_runs"] = found
            .points
            .iter()
            .map(|cp| s.runs[cp.index].0.clone())
            .collect::<Vec<_>>()
            .into();
    }
    line
}

/// One series `history changes` searches: from `--input` (a name and values) or the store
/// (its key and each run's id and commit).
struct ChangesInput {
    name: String,
    key: Option<SeriesKey>,
    values: Vec<f64>,
    runs: Vec<(String, String)>,
}

fn changes(store: &mut Store, a: &ChangesArgs) -> Result<Exit, AppError> {
    let (Some(case), Some(metric)) = (&a.case, &a.metric) else {
        return Err(HistoryError::Usage(
            "history changes needs --input FILE, or --case and --metric (`history show` lists \
             what the store holds)"
                .into(),
        )
        .into());
    };
    let args = SeriesArgs {
        case: case.clone(),
        variant: a.variant.clone(),
        platform: a.platform.clone(),
        branch: a.branch.clone(),
    };
    let key = series_key(store, &args, metric)?;
    let points = store.series(&key)?;
    if points.is_empty() {
        return Err(no_points(store, &key)?.into());
    }
    let input = ChangesInput {
        name: format!(
            "{} @ {} on {}: {}",
            key.case, key.variant, key.platform, key.metric
        ),
        values: points.iter().map(crate::history::Point::median).collect(),
        runs: points
            .iter()
            .map(|p| (p.run_id.clone(), p.commit.clone()))
            .collect(),
        key: Some(key),
    };
    print_changes(&[input], a)
}

/// The change points of each series: a table, or with `--json` one JSON line per series (its
/// change points, the weak ones and the search's own time).
fn print_changes(series: &[ChangesInput], a: &ChangesArgs) -> Result<Exit, AppError> {
    use crate::history::changes::{Options, detect};
    use crate::report::history::ChangesRow;
    if a.window < 2
        || !(0.0..=1.0).contains(&a.max_pvalue)
        || a.min_magnitude.is_some_and(|m| m < 0.0)
    {
        return Err(HistoryError::Usage(
            "--window takes 2 or more, --max-pvalue 0 to 1, --min-magnitude 0 or more".into(),
        )
        .into());
    }
    let mut rows = Vec::new();
    for s in series {
        let defaults = s
            .key
            .as_ref()
            .map_or_else(Options::default, |k| Options::for_metric(&k.metric));
        let opts = Options {
            window: a.window,
            max_pvalue: a.max_pvalue,
            min_magnitude: a.min_magnitude.unwrap_or(defaults.min_magnitude),
        };
        let started = std::time::Instant::now();
        let found = detect(&s.values, &opts);
        let seconds = started.elapsed().as_secs_f64();
        let weak: Vec<usize> = found.weak.iter().map(|c| c.index).collect();
        if a.json {
            outln!("{}", changes_json(s, &found, seconds));
        } else {
            rows.push(ChangesRow {
                series: s.name.clone(),
                points: s.values.len(),
                changes: found
                    .points
                    .iter()
                    .map(|cp| {
                        let at = s.runs.get(cp.index).cloned();
                        (cp.index, at, cp.stats.forward_change())
                    })
                    .collect(),
                weak,
            });
        }
    }
    if !a.json {
        out!("{}", crate::report::history::changes_table(&rows));
    }
    Ok(Exit::Pass)
}
