//! `goldgate cancel`: cancels what a run left in Slurm's queue — this user's jobs whose
//! comment names the run — after goldgate was killed (an OOM kill, a runner that died) or
//! gave a job up while Slurm's controller was away. The run is the folder's: a `run.json`
//! whose run id is not its folder's is refused, and so, without `--force`, is a run whose
//! goldgate may still be running it. Then what the run's jobs left in their folders is settled:
//! Slurm's raw output masked into the console logs (or kept raw, for a run that asked for
//! `--keep-raw-log`), per-rank logs masked (a local run's too). `goldgate run` does the same
//! first on a results folder whose last run died.

use std::path::{Path, PathBuf};

use super::error::{AppError, CmdError};
use super::output::{errln, outln};
use goldgate_core::config::ExecutorChoice;
use goldgate_schema::{Exit, RunIndex};

/// Arguments of `goldgate cancel`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The folder of runs (`goldgate run --out`).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// The run whose jobs to cancel (default: the newest run under `--out`).
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Cancel the run's jobs even though its goldgate may still be running it (its process
    /// is alive on this host, or the run never finished on another host).
    #[arg(long)]
    pub force: bool,
}

/// Runs the command: exit 0 whether or not anything was left.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let missing = || CmdError::NoRun {
        out: args.out.clone(),
        run: args.run.clone(),
    };
    let index = match &args.run {
        Some(id) => {
            goldgate_core::fsio::check_component("run id", id).map_err(|_| missing())?;
            let path = args.out.join(id).join("run.json");
            if !goldgate_core::fsio::exists(&path) {
                return Err(missing().into());
            }
            goldgate_core::records::load_index(&path)?
        }
        None => goldgate_judge::compare::runs::newest_run(&args.out).ok_or_else(missing)?,
    };
    let folder = check_folder(&args.out, args.run.as_deref(), &index)?;
    if !args.force
        && let Some(why) = goldgate_record::run::leftovers::still_running(&index)
    {
        return Err(CmdError::LiveRun {
            run: index.run_id.clone(),
            why,
        }
        .into());
    }
    let cleaned = goldgate_record::run::slurm::cancel_left(&args.out.join(folder), &index)
        .map_err(goldgate_record::run::RunError::from)?;
    outln!("{}", cancelled_line(&index.run_id, &cleaned.cancelled));
    for warning in &cleaned.warnings {
        errln!("warning: {warning}");
    }
    Ok(Exit::Pass)
}

/// The run's identity is its folder: `run.json` under `OUT/<id>/` must say run `<id>`.
/// Jobs are found by the run id (their Slurm comment), so a `run.json` that names another run
/// would cancel that run's jobs.
/// Returns the folder's name.
fn check_folder(out: &Path, asked: Option<&str>, index: &RunIndex) -> Result<String, CmdError> {
    let folder = match asked {
        Some(id) => id.to_owned(),
        None => folder_of(out, index).unwrap_or_default(),
    };
    if folder == index.run_id {
        return Ok(folder);
    }
    Err(CmdError::ForeignRunId {
        path: out.join(&folder).join("run.json"),
        found: index.run_id.clone(),
        folder,
    })
}

/// The name of the folder under `out` whose `run.json` is `index`.
fn folder_of(out: &Path, index: &RunIndex) -> Option<String> {
    std::fs::read_dir(out).ok()?.flatten().find_map(|e| {
        let found = goldgate_core::records::load_index(&e.path().join("run.json")).ok()?;
        (found.run_id == index.run_id && found.started_at == index.started_at)
            .then(|| e.file_name().to_string_lossy().into_owned())
    })
}

/// Before submitting anything: the newest earlier run under `out`, when its goldgate died
/// (the Slurm executor's check, `rerun_failed` false) or, for `--rerun-failed`, once a run
/// that used Slurm is no longer running, may have left Slurm jobs in the queue; they are
/// cancelled, and said so, so that the new jobs do not queue behind them.
pub(crate) fn orphans_before_run(out: &Path, rerun_failed: bool) -> Result<(), AppError> {
    let Some(index) = goldgate_judge::compare::runs::newest_run(out) else {
        return Ok(());
    };
    let died = goldgate_record::run::leftovers::died(&index);
    // A rerun (whatever its executor) asks Slurm only about a run that used it: one that
    // recorded Slurm job ids.
    let on_slurm = index.jobs.iter().any(|j| !j.scheduler_job_ids.is_empty());
    let due = match rerun_failed {
        true => on_slurm && (died || index.finished_at.is_some()),
        false => died,
    };
    if !due {
        return Ok(());
    }
    let folder = folder_of(out, &index).unwrap_or_else(|| index.run_id.clone());
    let cleaned = goldgate_record::run::slurm::cancel_left(&out.join(folder), &index)
        .map_err(goldgate_record::run::RunError::from)?;
    if !cleaned.cancelled.is_empty() {
        errln!("{}", cancelled_line(&index.run_id, &cleaned.cancelled));
    }
    for warning in &cleaned.warnings {
        errln!("warning: {warning}");
    }
    Ok(())
}

/// Before a run with `choice`'s executor submits or starts anything: what the newest earlier
/// run under `out` left when its goldgate died ([`orphans_before_run`] for Slurm's; a local
/// run's [`settle_before_local_run`]).
pub(crate) fn before_run(out: &Path, choice: ExecutorChoice) -> Result<(), AppError> {
    match choice {
        ExecutorChoice::Slurm => orphans_before_run(out, false),
        ExecutorChoice::Local => {
            settle_before_local_run(out);
            Ok(())
        }
    }
}

/// Before a local run: the newest earlier run under `out`, when its goldgate died mid-job,
/// left its jobs' per-rank logs unmasked (the launcher writes them itself); they are masked
/// now, as the run's goldgate would have as each job ended. A run that used Slurm is left to
/// the Slurm executor's check and `goldgate cancel`, which cancel its jobs before settling.
fn settle_before_local_run(out: &Path) {
    let Some(index) = goldgate_judge::compare::runs::newest_run(out) else {
        return;
    };
    let on_slurm = index.jobs.iter().any(|j| !j.scheduler_job_ids.is_empty());
    if on_slurm || !goldgate_record::run::leftovers::died(&index) {
        return;
    }
    let folder = folder_of(out, &index).unwrap_or_else(|| index.run_id.clone());
    for warning in goldgate_record::run::leftovers::settle_left(&out.join(folder), &index) {
        errln!("warning: {warning}");
    }
}

/// `goldgate: cancelled 2 Slurm job(s) of run R: 12 13`, or that it left none.
pub(crate) fn cancelled_line(run_id: &str, ids: &[u64]) -> String {
    if ids.is_empty() {
        return format!("goldgate: run {run_id} left no job in Slurm's queue");
    }
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!(
        "goldgate: cancelled {} Slurm job(s) of run {run_id}: {}",
        ids.len(),
        list.join(" ")
    )
}
