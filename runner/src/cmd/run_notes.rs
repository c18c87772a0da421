//! Parts of `goldgate run` beside its flow: whether the cases' `BEFORE_SCRIPT`/`AFTER_SCRIPT`
//! run and what it says about them before the first job (also `goldgate ab`'s), the jobs of
//! `--rerun-failed`, and the closing line of a run nothing judged (`--no-compare`, an
//! interrupt).

use super::args::ExecArgs;
use super::error::AppError;
use super::output::{err, errln};
use super::select::{Selection, failed_in_newest_run};
use goldgate_core::config::{Config, ExecutorChoice};
use goldgate_record::plan::Job;
use goldgate_record::run::RunSummary;

/// Whether the cases' scripts run (`ExecArgs::scripts_on`), said first; when not, they are
/// taken out of the jobs, also out of the Slurm batch script that would run them on the node.
pub(crate) fn decide_scripts(
    select: &Selection,
    exec: &ExecArgs,
    config: &Config,
    jobs: &mut [Job],
) -> Result<bool, AppError> {
    let (platform, choice) = select.executor(config)?;
    let scripts = exec.scripts_on(platform, choice);
    err!("{}", scripts_notice(jobs, scripts, choice));
    if !scripts {
        for job in jobs.iter_mut() {
            job.before_script = None;
            job.after_script = None;
        }
    }
    Ok(scripts)
}

/// `--rerun-failed` (`rerun`): keeps the jobs whose case and variant failed in the newest
/// earlier run, and returns that run's id (the rerun is marked as its rerun, so its other jobs
/// complete it); without the flag keeps every job.
pub(crate) fn keep_failed(
    rerun: bool,
    jobs: &mut Vec<Job>,
    out_dir: &std::path::Path,
) -> Result<Option<String>, AppError> {
    if !rerun {
        return Ok(None);
    }
    let (run_id, failed) = failed_in_newest_run(out_dir)?;
    super::cancel::orphans_before_run(out_dir, true)?;
    jobs.retain(|j| failed.contains(&(j.case.clone(), j.variant.name())));
    errln!(
        "goldgate: rerunning {} of run {run_id}'s failed or unfinished case/variant pair(s): {} job(s)",
        failed.len(),
        jobs.len()
    );
    Ok(Some(run_id))
}

/// The comparison `run` gates on: the run's own folder, or for a `--rerun-failed` run the
/// run with the jobs of the run it reran that it did not run again (`compare::runs`).
pub(crate) fn judge(
    opts: &goldgate_record::run::RunOptions,
    rerun: bool,
    compare: &goldgate_judge::compare::CompareOptions,
) -> Result<goldgate_schema::Comparison, AppError> {
    if !rerun {
        return Ok(goldgate_judge::compare::compare_dir(
            &opts.run_dir(),
            compare,
        )?);
    }
    let only = goldgate_judge::compare::RunSelection::Ids(vec![opts.run_id.clone()]);
    let (records, note) = goldgate_judge::compare::load_runs(&opts.out_dir, &only)?;
    if let Some(note) = note {
        errln!("judging {note}");
    }
    Ok(goldgate_judge::compare::compare_records(records, compare)?)
}

/// What goes to stderr before a run whose cases have `BEFORE_SCRIPT`/`AFTER_SCRIPT`: on this
/// machine, each script that will run (once per case and text); skipped, which cases' and how
/// to run them; under Slurm nothing (the job's node runs them, as Megatron's CI does).
pub(super) fn scripts_notice(jobs: &[Job], run: bool, executor: ExecutorChoice) -> String {
    let mut scripts: Vec<(&str, &str, String)> = Vec::new();
    for job in jobs {
        let hooks = [
            ("BEFORE_SCRIPT", &job.before_script),
            ("AFTER_SCRIPT", &job.after_script),
        ];
        for (field, text) in hooks {
            let Some(text) = text.as_deref() else {
                continue;
            };
            let entry = (
                job.case.as_str(),
                field,
                goldgate_record::plan::redact_text(job, text),
            );
            if !scripts.contains(&entry) {
                scripts.push(entry);
            }
        }
    }
    if scripts.is_empty() || (run && executor == ExecutorChoice::Slurm) {
        return String::new();
    }
    let mut cases: Vec<&str> = Vec::new();
    for (case, _, _) in &scripts {
        if !cases.contains(case) {
            cases.push(case);
        }
    }
    if !run {
        return format!(
            "note: not running the BEFORE_SCRIPT/AFTER_SCRIPT of {} case(s) on this machine: {} \
             (`--scripts` runs them; `goldgate plan` shows them)\n",
            cases.len(),
            cases.join(", ")
        );
    }
    let mut s = String::from(
        "goldgate: running the cases' scripts on this machine (bash -euo pipefail -c, in each \
         job folder, around every run):\n",
    );
    for (case, field, text) in scripts {
        s.push_str(&format!("  {case} {field}:\n"));
        for line in text.lines() {
            s.push_str(&format!("    | {line}\n"));
        }
    }
    s
}

/// `FAIL [0.4s] 1 job on dev_cpu: 1 failed, not gated (--no-compare)`: `DONE` when every job
/// ran (exit 0 without a gate says only that).
pub(crate) fn ungated_line(
    summary: &RunSummary,
    platform: &str,
    failed: bool,
    elapsed: std::time::Duration,
) -> String {
    let how = if summary.interrupted {
        "interrupted (`goldgate run … --rerun-failed` runs what did not finish, and is judged \
         with this run's other jobs)"
    } else {
        "not gated (--no-compare)"
    };
    let counts = ungated_counts(&summary.records, platform);
    let tag = goldgate_judge::report::table::time_tag(Some(elapsed));
    let status = if failed { "FAIL" } else { "DONE" };
    format!("{status} {tag}{counts}, {how}")
}

/// `2 jobs (6 repeats) on dev_cpu: 1 failed, 1 ran` — the runs' outcomes when nothing judged
/// them (a job counts as failed when one of its repeats did).
fn ungated_counts(records: &[goldgate_schema::RunRecord], platform: &str) -> String {
    let mut jobs: Vec<(&str, &str, bool)> = Vec::new();
    for r in records.iter().filter(|r| !r.warmup) {
        let bad = !r.outcome.passed() && !goldgate_judge::compare::record_failed_as_expected(r);
        match jobs
            .iter_mut()
            .find(|(c, v, _)| *c == r.case && *v == r.variant.name)
        {
            Some(job) => job.2 |= bad,
            None => jobs.push((&r.case, &r.variant.name, bad)),
        }
    }
    let total = jobs.len();
    let failed = jobs.iter().filter(|j| j.2).count();
    let repeats = records.iter().filter(|r| !r.warmup).count();
    let mut s = format!("{total} job{}", if total == 1 { "" } else { "s" });
    if repeats > total {
        s.push_str(&format!(" ({repeats} repeats)"));
    }
    s.push_str(&format!(" on {platform}"));
    let mut parts = Vec::new();
    if failed > 0 {
        parts.push(format!("{failed} failed"));
    }
    if total > failed {
        parts.push(format!("{} ran", total - failed));
    }
    if !parts.is_empty() {
        s.push_str(": ");
        s.push_str(&parts.join(", "));
    }
    s
}
