//! Stage "run", either executor: what a run whose goldgate died left in its jobs' folders,
//! and how whoever cleans up after it (`goldgate cancel`, the next run on the results folder)
//! settles the part no executor owns. Whether the run's goldgate is gone ([`died`],
//! [`still_running`]); the jobs whose folders may hold what was never settled (those whose end
//! goldgate never recorded); what each job's leftovers are masked with — this environment's
//! secrets and the variables `run.json` names as the job's (`secret_names`, never a value) —
//! and, when this environment lacks one of those, what cannot be masked; and the launcher's
//! per-rank logs under `logs/`, masked ([`settle_left`]). The Slurm executor's own leftovers
//! (its raw output, its queue) are settled under `run::slurm`, with these pieces.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goldgate_core::fsio::{check_no_links, check_relative};
use goldgate_core::redact::{MIN_SECRET_LEN, Redactor, is_secret_name};
use goldgate_schema::RunIndex;

use crate::run::rank_logs;

/// Whether the goldgate process that ran `index` is known to be gone while the run never
/// finished: recorded on this host, and its process no longer exists. A run of another host,
/// or one that recorded no process, is not known to have died.
pub fn died(index: &RunIndex) -> bool {
    let Some(runner) = index
        .runner
        .as_ref()
        .filter(|_| index.finished_at.is_none())
    else {
        return false;
    };
    runner.host == crate::run::provenance::hostname()
        && runner.pid != std::process::id()
        && !std::path::Path::new(&format!("/proc/{}", runner.pid)).exists()
}

/// Why the run's goldgate may still be running it, or `None` when it finished or is known to
/// have died.
pub fn still_running(index: &RunIndex) -> Option<String> {
    if index.finished_at.is_some() || died(index) {
        return None;
    }
    Some(match &index.runner {
        Some(r) if r.host == crate::run::provenance::hostname() => {
            format!("its goldgate (pid {}) is still running", r.pid)
        }
        Some(r) => format!(
            "it never finished, and its goldgate ran on {} (pid {}), where this cannot look",
            r.host, r.pid
        ),
        None => "it never finished, and it records no goldgate process".to_owned(),
    })
}

/// Settles what the jobs of `index` (its folder `run_dir`) that goldgate never saw end left
/// in their folders — per-rank logs a goldgate killed mid-job never masked — once no goldgate
/// may be running the run (a live run's goldgate settles its own: two runs into one folder
/// never mask each other's live files). What a local run leaves; a run that used Slurm is
/// settled by `slurm::cancel_left`, which cancels its jobs first and settles Slurm's raw output
/// too. Returns a line for each thing it could not settle, or settled only in part.
pub fn settle_left(run_dir: &Path, index: &RunIndex) -> Vec<String> {
    if still_running(index).is_some() {
        return Vec::new();
    }
    let here = Environment::here();
    (job_folders(run_dir, index).filter(|job| job.unfinished))
        .flat_map(|job| settle_rank_logs(run_dir, &job, &here.masking(&job), index.keep_raw_log))
        .collect()
}

/// The folder of one job of a run that no goldgate follows any more.
#[derive(Debug)]
pub(crate) struct JobFolder {
    /// The goldgate job id, for messages.
    pub(crate) id: String,
    pub(crate) dir: PathBuf,
    /// goldgate never recorded the job's end: its per-rank logs may hold what was never masked.
    pub(crate) unfinished: bool,
    /// What `run.json` says the job's output is masked for.
    secret_names: Vec<String>,
}

/// The folders of the jobs of `index` (its folder `run_dir`), in plan order; a job folder that
/// `run.json` puts outside the run folder, or reaches through a link, is never looked into.
pub(crate) fn job_folders<'a>(
    run_dir: &'a Path,
    index: &'a RunIndex,
) -> impl Iterator<Item = JobFolder> + 'a {
    index.jobs.iter().filter_map(move |job| {
        let rel = job.dir.to_str()?;
        check_relative("job folder", rel).ok()?;
        let dir = run_dir.join(rel);
        check_no_links(run_dir, &dir).ok()?;
        Some(JobFolder {
            id: job.job_id.clone(),
            dir,
            unfinished: job.outcome.is_none(),
            secret_names: job.secret_names.clone(),
        })
    })
}

/// The secrets of this process's environment, by variable: what a dead run's leftovers are
/// masked with.
pub(crate) struct Environment(BTreeMap<String, Vec<u8>>);

impl Environment {
    /// This process's variables whose values are long enough to be masked.
    pub(crate) fn here() -> Environment {
        Environment(
            std::env::vars_os()
                .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_encoded_bytes())))
                .filter(|(_, v)| v.len() >= MIN_SECRET_LEN)
                .collect(),
        )
    }

    /// What `job`'s leftovers are masked with: every secret of this environment, and the
    /// variables the job's secrets came from; and the job's secrets it lacks.
    pub(crate) fn masking(&self, job: &JobFolder) -> Masking {
        let missing = (job.secret_names.iter())
            .filter(|n| !self.0.contains_key(*n))
            .cloned()
            .collect();
        let redactor = Redactor::from_values(
            (self.0.iter())
                .filter(|(n, _)| is_secret_name(n) || job.secret_names.contains(n))
                .map(|(_, v)| v),
        );
        Masking { redactor, missing }
    }
}

/// What one job's leftovers are masked with.
pub(crate) struct Masking {
    pub(crate) redactor: Redactor,
    /// The names of the job's secrets this environment does not hold: what it cannot mask.
    pub(crate) missing: Vec<String>,
}

/// The job's per-rank logs, masked; their text withheld (replaced by a note) when this
/// environment lacks a secret of the job's. Returns a warning per log it could not settle.
pub(crate) fn settle_rank_logs(
    run_dir: &Path,
    job: &JobFolder,
    masking: &Masking,
    keep_raw: bool,
) -> Vec<String> {
    let logs = job.dir.join("logs");
    if check_no_links(run_dir, &logs).is_err() {
        return Vec::new();
    }
    if masking.missing.is_empty() {
        // The first attempt's console log, which both executors call so, was masked as it
        // was written.
        let console = logs.join("console.log");
        return rank_logs::mask(&logs, &console, &masking.redactor, keep_raw);
    }
    let note = format!(
        "[goldgate: this log's text is not kept: this environment lacks {}, which masks it]",
        masking.missing.join(", ")
    );
    rank_logs::withhold(&logs, &note, keep_raw)
}
