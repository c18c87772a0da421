//! `goldgate run`: launches planned jobs, observes them, records every run (`results.json`
//! after each job, `run.json` as the index), shows the variant table, then compares with
//! the golden files unless `--no-compare`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::select::{Output, Selection, absolute, plan_selection};
use crate::exit::{AppError, Exit};
use crate::launch::{self, StopFlag};
use crate::metrics::atomic::write_atomic;
use crate::metrics::execute::{ExecOptions, JobEvent, execute};
use crate::metrics::{JobEntry, Outcome, RunIndex, RunRecord, SCHEMA_VERSION};
use crate::observe::probe::install::ProbeMode;
use crate::plan::Job;

/// Arguments of `goldgate run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cases to run (`<model>/<case>`); all under the root when none.
    pub cases: Vec<String>,
    #[command(flatten)]
    pub select: Selection,
    /// Repeats per job (default: the case's `ENV_VARS.N_REPEAT`, else 1).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Where results go: `OUT/<run-id>/<case>/<variant>/<repeat>/`.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Time limit per job (e.g. `90s`, `30m`); then SIGTERM to its process group, a grace
    /// period, SIGKILL.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when a job is stopped.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub grace: Duration,
    /// Jobs at once, each on its own slice of the platform's GPUs.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Re-run a job whose failure matches a flaky pattern up to N times.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Interval of the GPU and host memory samplers (e.g. `10ms`).
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub sample_interval: Duration,
    /// Record only; do not compare with the golden files afterwards.
    #[arg(long)]
    pub no_compare: bool,
    /// Golden root used by the comparison after the run.
    #[arg(long, default_value = "golden")]
    pub golden_root: PathBuf,
    /// In-process probe for Python jobs: `torch`, `torch,history` or `none`.
    #[arg(long, default_value = "torch", value_parser = parse_probe)]
    pub probe: ProbeMode,
    /// Keep each job's checkpoints (by default they are deleted once the job is recorded).
    #[arg(long)]
    pub keep_checkpoints: bool,
    /// Unstable metrics fail the gate (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// Improvements beyond tolerance fail the gate, so goldens get refreshed.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Compare even when the GPU model or driver differs from the golden platform.
    #[arg(long)]
    pub allow_env_mismatch: bool,
    /// Write the comparison as JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the comparison as markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Parses `250ms`, `10s`, `1.5s`, `30m`, `2h` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 500ms, 90s, 30m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use ms, s, m or h)"
            ));
        }
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("`{text}` must be more than zero"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn parse_probe(text: &str) -> Result<ProbeMode, String> {
    ProbeMode::parse(text)
}

/// `YYYYMMDD-HHMMSS-xxxx` (UTC): sortable, and unique enough for runs started the same second.
fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let salt = (now.subsec_nanosecond() as u32 ^ std::process::id()) & 0xffff;
    format!("{}-{salt:04x}", now.strftime("%Y%m%d-%H%M%S"))
}

/// Runs the command.
#[allow(clippy::print_stderr)]
pub fn run(args: Args) -> Result<Exit, AppError> {
    // Before any child exists: a Ctrl-C must never orphan a job's process group.
    let stop = launch::install_signal_handlers()?;
    let output = Output {
        out_dir: absolute(&args.out)?,
        run_id: new_run_id(),
    };
    let selected = plan_selection(&args.select, &args.cases, args.repeat, &output)?;
    let strict = args.select.strict_placeholders;
    eprint!("{}", selected.render_problems(strict));
    if selected.refused(strict) {
        return Err(AppError::usage(
            "not running: the cases above do not plan (hint: `goldgate plan` shows the same)",
        ));
    }
    let jobs = selected.jobs;
    local_only(&jobs)?;
    if jobs.is_empty() {
        return Err(AppError::usage(
            "nothing to run: the selection planned no job",
        ));
    }
    let run_dir = output.out_dir.join(&output.run_id);
    let slices = gpu_slices(&jobs, args.jobs)?;
    let opts = ExecOptions {
        run_id: output.run_id.clone(),
        timeout: args.timeout,
        grace: args.grace,
        retries: args.retries,
        sample_interval: args.sample_interval,
        probe: args.probe,
        keep_checkpoints: args.keep_checkpoints,
        cuda_visible_devices: None,
        base_dir: std::env::current_dir()
            .map_err(|e| AppError::failure(format!("cannot read the current directory: {e}")))?,
    };
    let index = Mutex::new(new_index(&output.run_id, &jobs, &run_dir));
    write_index(&run_dir, &index)?;
    let records = run_all(&jobs, &opts, &slices, &stop, &index, &run_dir)?;
    finish(&args, &run_dir, &records, &index, &stop)
}

/// The local executor runs one node: a job that needs more is refused before anything starts.
fn local_only(jobs: &[Job]) -> Result<(), AppError> {
    let Some(job) = jobs.iter().find(|j| j.nodes > 1) else {
        return Ok(());
    };
    Err(AppError::usage(format!(
        "{} needs {} nodes ({} ranks), and goldgate's local executor runs one node (hint: run it \
         with the Slurm executor, which starts one launcher per node; `goldgate repro` prints the \
         per-node command; or give it one node with --nodes 1 if its parallel layout fits)",
        job.id,
        job.nodes,
        job.world_size()
    )))
}

fn new_index(run_id: &str, jobs: &[Job], run_dir: &Path) -> RunIndex {
    RunIndex {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.to_string(),
        started_at: jiff::Timestamp::now().to_string(),
        finished_at: None,
        platform: jobs.first().map(|j| j.platform.clone()).unwrap_or_default(),
        goldgate_version: env!("CARGO_PKG_VERSION").to_string(),
        command: std::env::args().collect(),
        jobs: jobs
            .iter()
            .map(|j| JobEntry {
                job_id: j.id.clone(),
                dir: j
                    .dirs
                    .job
                    .strip_prefix(run_dir)
                    .unwrap_or(&j.dirs.job)
                    .to_path_buf(),
                outcome: None,
            })
            .collect(),
    }
}

fn write_index(run_dir: &Path, index: &Mutex<RunIndex>) -> Result<(), AppError> {
    let text = {
        let guard = index
            .lock()
            .map_err(|_| AppError::failure("run index lock poisoned"))?;
        serde_json::to_string_pretty(&*guard)
            .map_err(|e| AppError::failure(format!("cannot encode run.json: {e}")))?
    };
    let path = run_dir.join("run.json");
    write_atomic(&path, text.as_bytes())
        .map_err(|e| AppError::failure(format!("cannot write {}: {e}", path.display())))
}

/// One `CUDA_VISIBLE_DEVICES` slice per concurrent job (`--jobs N`); no slicing for one job.
fn gpu_slices(jobs: &[Job], n: u32) -> Result<Vec<Option<String>>, AppError> {
    if n <= 1 {
        return Ok(vec![None]);
    }
    let nproc = jobs.iter().map(|j| j.nproc).max().unwrap_or(1);
    let per_node = jobs.first().map(|j| j.nproc).unwrap_or(1).max(nproc);
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let gpus = launch::visible_gpus(per_node * n, visible.as_deref());
    Ok(launch::gpu_slices(&gpus, nproc, n)?
        .into_iter()
        .map(Some)
        .collect())
}

/// Runs every job, `slices.len()` at a time, writing each result as soon as it exists.
fn run_all(
    jobs: &[Job],
    opts: &ExecOptions,
    slices: &[Option<String>],
    stop: &StopFlag,
    index: &Mutex<RunIndex>,
    run_dir: &Path,
) -> Result<Vec<RunRecord>, AppError> {
    let progress = Progress::new(jobs.len());
    let next = Mutex::new(0usize);
    let records = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for slice in slices {
            let mut opts = opts.clone();
            opts.cuda_visible_devices = slice.clone();
            let (next, records, errors, progress) = (&next, &records, &errors, &progress);
            scope.spawn(move || {
                loop {
                    let i = {
                        let Ok(mut n) = next.lock() else { return };
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(job) = jobs.get(i) else { return };
                    if stop.is_requested() {
                        return;
                    }
                    let record = run_one(job, &opts, stop, progress);
                    if let Err(e) = save(job, &record, index, run_dir, i)
                        && let Ok(mut errs) = errors.lock()
                    {
                        errs.push(e);
                    }
                    if let Ok(mut r) = records.lock() {
                        r.push((i, record));
                    }
                }
            });
        }
    });
    progress.done();
    if let Some(e) = errors.into_inner().ok().and_then(|mut e| e.pop()) {
        return Err(e);
    }
    let mut records = records.into_inner().unwrap_or_default();
    records.sort_by_key(|(i, _)| *i);
    Ok(records.into_iter().map(|(_, r)| r).collect())
}

fn run_one(job: &Job, opts: &ExecOptions, stop: &StopFlag, progress: &Progress) -> RunRecord {
    progress.start(job);
    let record = execute(job, opts, stop, &mut |event| {
        if let JobEvent::Step { step, of } = event {
            progress.step(step, of);
        }
    });
    progress.finish(job, &record);
    record
}

fn save(
    job: &Job,
    record: &RunRecord,
    index: &Mutex<RunIndex>,
    run_dir: &Path,
    i: usize,
) -> Result<(), AppError> {
    let path = job.dirs.job.join("results.json");
    let text = serde_json::to_string_pretty(record)
        .map_err(|e| AppError::failure(format!("cannot encode {}: {e}", path.display())))?;
    write_atomic(&path, text.as_bytes())
        .map_err(|e| AppError::failure(format!("cannot write {}: {e}", path.display())))?;
    if let Ok(mut idx) = index.lock()
        && let Some(entry) = idx.jobs.get_mut(i)
    {
        entry.outcome = Some(record.outcome.clone());
    }
    write_index(run_dir, index)
}

/// Prints the variant table, compares unless asked not to, and picks the exit code.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn finish(
    args: &Args,
    run_dir: &Path,
    records: &[RunRecord],
    index: &Mutex<RunIndex>,
    stop: &StopFlag,
) -> Result<Exit, AppError> {
    if let Ok(mut idx) = index.lock() {
        idx.finished_at = Some(jiff::Timestamp::now().to_string());
    }
    write_index(run_dir, index)?;
    let config = crate::config::Config::load(&args.select.config)?;
    let order = crate::report::variants::VariantOrder::from_config(&config);
    let table = crate::report::variants::build(records, &order);
    print!("{}", crate::report::variants::render_terminal(&table));
    println!("results: {}", run_dir.display());
    let failed = records.iter().any(|r| !r.outcome.passed()) || stop.is_requested();
    let run_exit = if failed { Exit::Failure } else { Exit::Pass };
    if args.no_compare || stop.is_requested() {
        return Ok(run_exit);
    }
    let opts = crate::compare::CompareOptions::from_config(
        &config,
        args.golden_root.clone(),
        args.select.root.clone(),
        args.select.platform.clone(),
        args.allow_env_mismatch,
    );
    let comparison = crate::compare::compare_dir(run_dir, &opts)?;
    let outputs = super::compare::Outputs {
        junit: args.junit.clone(),
        markdown: args.markdown.clone(),
        json: args.json.clone(),
    };
    super::compare::emit(&comparison, &outputs)?;
    Ok(run_exit.worst(comparison.exit(args.strict, args.fail_on_improvement)))
}

/// A progress bar on a terminal; one plain line per job otherwise (CI logs).
struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: Mutex<usize>,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed_precise} {wide_msg}")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            total,
            done: Mutex::new(0),
        }
    }

    fn start(&self, job: &Job) {
        match &self.bar {
            Some(bar) => bar.set_message(job.id.clone()),
            None => self.line(&format!("start  {}", job.id)),
        }
    }

    fn step(&self, step: u64, of: Option<u64>) {
        if let Some(bar) = &self.bar {
            let of = of.map(|o| format!("/{o}")).unwrap_or_default();
            let msg = bar.message();
            let base = msg.split("  iteration").next().unwrap_or("").to_string();
            bar.set_message(format!("{base}  iteration {step}{of}"));
        }
    }

    fn finish(&self, job: &Job, record: &RunRecord) {
        let n = self.done.lock().map(|mut d| {
            *d += 1;
            *d
        });
        let n = n.unwrap_or(0);
        let mark = match record.outcome {
            Outcome::Passed => "ok    ",
            _ => "FAIL  ",
        };
        let text = format!(
            "{mark}{} [{n}/{}] {} in {:.1} s",
            job.id,
            self.total,
            record.outcome.label(),
            record.wall_seconds
        );
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.println(text);
            }
            None => self.line(&text),
        }
    }

    #[allow(clippy::print_stderr)]
    fn line(&self, text: &str) {
        eprintln!("{text}");
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_reject_nonsense() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert!(parse_duration("0s").is_err());
        assert!(
            parse_duration("ten")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_duration("5d")
                .unwrap_err()
                .contains("unknown unit `d`")
        );
    }

    #[test]
    fn the_cli_default_interval_is_the_samplers() {
        let cmd = <Args as clap::Args>::augment_args(clap::Command::new("run"));
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "sample_interval")
            .unwrap();
        let default = arg.get_default_values()[0].to_str().unwrap();
        assert_eq!(
            parse_duration(default).unwrap(),
            crate::observe::sample::DEFAULT_INTERVAL
        );
    }

    #[test]
    fn run_ids_sort_by_time() {
        let id = new_run_id();
        assert_eq!(id.len(), "20261130-062900-abcd".len(), "{id}");
    }
}
