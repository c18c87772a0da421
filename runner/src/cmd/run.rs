//! `goldgate run`: plans the selected jobs, runs them on the local executor (the `run` stage:
//! scheduler, progress, `results.json` after each job, `run.json` as the index), shows the
//! variant table, then compares with the golden files unless `--no-compare`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::args::{ExecArgs, GateArgs};
use super::error::AppError;
use super::output::{err, errln, out, outln, stderr_color};
use super::run_notes::{decide_scripts, keep_failed, ungated_line};
use super::select::{CaseArgs, Selection, plan_selection};
use goldgate_core::config::{Config, ExecutorChoice};
use goldgate_record::launch;
use goldgate_record::plan::Output;
use goldgate_record::run::{
    Executor, LocalExecutor, Progress, ResultsWriter, RunOptions, RunSummary, SlurmExecutor,
};
use goldgate_schema::Exit;

/// `--out` when neither it nor a Slurm platform's `job_root` says.
const DEFAULT_OUT: &str = "results";

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
    /// Where results go: `OUT/<run-id>/<case>/<variant>/<repeat>/` (default `results`, or the
    /// platform's `slurm.job_root` under Slurm).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Record only; do not compare with the golden files afterwards.
    #[arg(long)]
    pub no_compare: bool,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    /// Warm-up jobs run first for every job, recorded but never compared or blessed (default:
    /// the platform's `warmup_jobs`, else 0). With `--warmup 1 --repeat 3`, repeat 1 warms up
    /// and repeats 2-4 are measured.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    #[command(flatten)]
    pub clocks: super::args::ClocksArg,
    #[command(flatten)]
    pub gate: GateArgs,
}

/// Runs the command.
#[allow(clippy::print_stderr)]
pub fn run(args: Args) -> Result<Exit, AppError> {
    // Before any child exists: a Ctrl-C must never orphan a job's process group.
    let stop = launch::install_signal_handlers()?;
    args.gate.check()?;
    let mut opts = args
        .exec
        .options(args.out.as_deref().unwrap_or(Path::new(DEFAULT_OUT)))?;
    launch::check_settle(opts.settle)?;
    // Loaded once: the gate after a long run uses the rules the run was planned with.
    let config = args.select.config.load()?;
    opts.out_dir = args
        .select
        .out_dir(&config, args.out.as_deref(), DEFAULT_OUT)?;
    let output = Output {
        out_dir: opts.out_dir.clone(),
        run_id: opts.run_id.clone(),
        base_dir: None,
        env: Vec::new(),
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
    err!("{}", selected.render_problems(strict, stderr_color()));
    if selected.refused(strict) {
        return Err(super::error::CmdError::NotPlanned.into());
    }
    let mut jobs = selected.jobs;
    let rerun_of = keep_failed(args.rerun_failed, &mut jobs, &opts.out_dir)?;
    if jobs.is_empty() {
        return nothing_to_run(&args);
    }
    opts.scripts = decide_scripts(&args.select, &args.exec, &config, &mut jobs)?;
    let executor = executor(&args.select, &config, &opts, &jobs)?;
    let started = std::time::Instant::now();
    let command = std::env::args().collect();
    let mut writer = ResultsWriter::create(&opts, &jobs, command)?;
    (rerun_of.iter()).try_for_each(|run| writer.mark_rerun_of(run))?;
    let progress = Mutex::new(Progress::stderr().with_heartbeat(super::args::heartbeat_interval()));
    let summary = goldgate_record::run::beside_heartbeat(&progress, |progress| {
        goldgate_record::run::run_jobs(&jobs, &*executor, &opts, &stop, &mut |event| {
            writer.event(&event);
            progress
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .event(&event);
        })
    })?;
    writer.finish()?;
    if let Some(note) = executor.finish_note() {
        errln!("goldgate: {} executor: {note}", executor.name());
    }
    finish(&args, &config, &opts, &summary, started)
}

/// The executor of the selection's platform, or the one `--executor` names (`run`, `ab`).
/// What a dead run under `--out` left goes first: its Slurm jobs cancelled (Slurm's executor),
/// its jobs' unmasked logs settled (`cancel::before_run`).
pub(crate) fn executor(
    select: &Selection,
    config: &Config,
    opts: &RunOptions,
    jobs: &[goldgate_record::plan::Job],
) -> Result<Box<dyn Executor>, AppError> {
    let choice = select.executor(config)?.1;
    let executor: Box<dyn Executor> = match choice {
        ExecutorChoice::Local => Box::new(LocalExecutor::new(opts, jobs)?),
        ExecutorChoice::Slurm => Box::new(
            SlurmExecutor::new(opts, config, jobs).map_err(goldgate_record::run::RunError::from)?,
        ),
    };
    super::cancel::before_run(&opts.out_dir, choice)?;
    Ok(executor)
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
    started: std::time::Instant,
) -> Result<Exit, AppError> {
    let run_dir = opts.run_dir();
    let order = goldgate_judge::report::variants::VariantOrder::from_config(config);
    let table = goldgate_judge::report::variants::build(&summary.records, &order);
    out!(
        "{}",
        goldgate_judge::report::variants::render_terminal(&table)
    );
    outln!("results: {}", run_dir.display());
    // A job whose case says `TEST_EVALUATION: xpass` passes when the training itself failed
    // (Megatron's exit 0); a launch error, timeout or infrastructure failure never does.
    let failed = summary
        .records
        .iter()
        .any(|r| !r.outcome.passed() && !goldgate_judge::compare::record_failed_as_expected(r))
        || summary.interrupted;
    let run_exit = if failed { Exit::Failure } else { Exit::Pass };
    if args.no_compare || summary.interrupted {
        let platform = &config.platform(args.select.platform.as_deref())?.name;
        outln!(
            "{}",
            ungated_line(summary, platform, failed, started.elapsed())
        );
        return Ok(run_exit);
    }
    let compare = args.clocks.compare_options(
        config,
        &args.golden_root,
        &args.select.root,
        args.select.platform.clone(),
        args.gate.allow_env_mismatch,
    );
    let comparison = super::run_notes::judge(opts, args.rerun_failed, &compare)?;
    let elapsed = Some(started.elapsed());
    Ok(run_exit.worst(super::compare::gate(&comparison, &args.gate, elapsed)?))
}
