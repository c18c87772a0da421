//! `goldgate run`: plans the selected jobs, runs them on the local executor (the `run` stage:
//! scheduler, progress, `results.json` after each job, `run.json` as the index), shows the
//! variant table, then compares with the golden files unless `--no-compare`.

use std::path::PathBuf;
use std::time::Duration;

use super::args::{GateArgs, parse_duration};
use super::error::AppError;
use super::output::{err, errln, out, outln};
use super::select::{CaseArgs, Output, Selection, absolute, failed_in_newest_run, plan_selection};
use crate::config::Config;
use crate::exit::Exit;
use crate::launch::{self, Settle};
use crate::observe::probe::install::ProbeMode;
use crate::run::{LocalExecutor, Progress, ResultsWriter, RunError, RunOptions, RunSummary};

/// Arguments of `goldgate run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub which: CaseArgs,
    #[command(flatten)]
    pub select: Selection,
    /// Run only the jobs (case and variant) that failed or did not finish in the newest run
    /// under `--out`, as the selection plans them now.
    #[arg(long)]
    pub rerun_failed: bool,
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
    /// Re-run a job whose failure matches a flaky pattern up to N times (at most 100).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(super::args::MAX_RETRIES)))]
    pub retries: u32,
    /// Interval of the GPU and host memory samplers (e.g. `10ms`).
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub sample_interval: Duration,
    /// Record only; do not compare with the golden files afterwards.
    #[arg(long)]
    pub no_compare: bool,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    /// In-process probe for Python jobs: `torch`, `torch,history` or `none`.
    #[arg(long, default_value = "torch", value_parser = ProbeMode::parse)]
    pub probe: ProbeMode,
    /// Keep each job's checkpoints (by default they are deleted once the job is recorded).
    #[arg(long)]
    pub keep_checkpoints: bool,
    /// Before each job: `none`, `sync` (flush dirty pages) or `drop-caches` (also empty the
    /// page cache; needs root and a writable /proc/sys, checked before the first job).
    #[arg(long, default_value = "none", value_parser = Settle::parse)]
    pub settle: Settle,
    /// Warm-up jobs run first for every job, recorded but never compared or blessed (default:
    /// the platform's `warmup_jobs`, else 0). With `--warmup 1 --repeat 3`, repeat 1 warms up
    /// and repeats 2-4 are measured.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    #[command(flatten)]
    pub gate: GateArgs,
}

impl Args {
    /// The validated options of the run stage.
    fn options(&self) -> Result<RunOptions, AppError> {
        Ok(RunOptions {
            run_id: crate::run::new_run_id(),
            out_dir: absolute(&self.out)?,
            base_dir: std::env::current_dir().map_err(|source| RunError::Cwd { source })?,
            workers: self.jobs.max(1),
            retries: self.retries,
            timeout: self.timeout,
            grace: self.grace,
            sample_interval: self.sample_interval,
            probe: self.probe,
            keep_checkpoints: self.keep_checkpoints,
            settle: self.settle,
        })
    }
}

/// Runs the command.
#[allow(clippy::print_stderr)]
pub fn run(args: Args) -> Result<Exit, AppError> {
    // Before any child exists: a Ctrl-C must never orphan a job's process group.
    let stop = launch::install_signal_handlers()?;
    let opts = args.options()?;
    launch::check_settle(opts.settle)?;
    // Loaded once: the gate after a long run uses the rules the run was planned with.
    let config = Config::load(&args.select.config.path)?;
    let output = Output {
        out_dir: opts.out_dir.clone(),
        run_id: opts.run_id.clone(),
    };
    let warmup = match args.warmup {
        Some(n) => n,
        None => {
            config
                .platform(args.select.platform.as_deref())?
                .warmup_jobs
        }
    };
    let filter = args.which.filter()?;
    let selected = plan_selection(&config, &args.select, &filter, args.repeat, warmup, &output)?;
    let strict = args.select.strict_placeholders;
    err!("{}", selected.render_problems(strict));
    if selected.refused(strict) {
        return Err(super::error::CmdError::NotPlanned.into());
    }
    let mut jobs = selected.jobs;
    if args.rerun_failed {
        keep_failed(&mut jobs, &opts.out_dir)?;
    }
    if jobs.is_empty() {
        return nothing_to_run(&args);
    }
    let executor = LocalExecutor::new(&opts, &jobs)?;
    let command = std::env::args().collect();
    let mut writer = ResultsWriter::create(&opts.run_dir(), &opts.run_id, &jobs, command)?;
    let mut progress = Progress::stderr();
    let summary = crate::run::run_jobs(&jobs, &executor, &opts, &stop, &mut |event| {
        writer.event(&event);
        progress.event(&event);
    })?;
    writer.finish()?;
    finish(&args, &config, &opts, &summary)
}

/// `--rerun-failed`: keeps the jobs whose case and variant failed in the newest earlier run.
fn keep_failed(
    jobs: &mut Vec<crate::plan::Job>,
    out_dir: &std::path::Path,
) -> Result<(), AppError> {
    let (run_id, failed) = failed_in_newest_run(out_dir)?;
    jobs.retain(|j| failed.contains(&(j.case.clone(), j.variant.name())));
    errln!(
        "goldgate: rerunning {} of run {run_id}'s failed or unfinished case/variant pair(s): {} job(s)",
        failed.len(),
        jobs.len()
    );
    Ok(())
}

/// An empty selection: fine for a partition that got no case or a rerun with nothing failed
/// (exit 0, said on stderr); a usage error otherwise.
fn nothing_to_run(args: &Args) -> Result<Exit, AppError> {
    if let Some(partition) = args.which.partition {
        errln!("goldgate: partition {partition} holds no case of this selection; nothing to run");
        return Ok(Exit::Pass);
    }
    if args.rerun_failed {
        errln!("goldgate: nothing to rerun");
        return Ok(Exit::Pass);
    }
    Err(super::error::CmdError::NothingToRun.into())
}

/// Prints the variant table, compares unless asked not to, and picks the exit code.
fn finish(
    args: &Args,
    config: &Config,
    opts: &RunOptions,
    summary: &RunSummary,
) -> Result<Exit, AppError> {
    let run_dir = opts.run_dir();
    let order = crate::report::variants::VariantOrder::from_config(config);
    let table = crate::report::variants::build(&summary.records, &order);
    out!("{}", crate::report::variants::render_terminal(&table));
    outln!("results: {}", run_dir.display());
    let failed = summary.records.iter().any(|r| !r.outcome.passed()) || summary.interrupted;
    let run_exit = if failed { Exit::Failure } else { Exit::Pass };
    if args.no_compare || summary.interrupted {
        return Ok(run_exit);
    }
    let compare = crate::compare::CompareOptions::from_config(
        config,
        args.golden_root.path.clone(),
        args.select.root.path.clone(),
        args.select.platform.clone(),
        args.gate.allow_env_mismatch,
    );
    let comparison = crate::compare::compare_dir(&run_dir, &compare)?;
    Ok(run_exit.worst(super::compare::gate(&comparison, &args.gate)?))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
