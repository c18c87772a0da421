//! Stage "run", either executor: what a run whose goldgate died left in its jobs' folders,
//! and how whoever cleans up after it (`goldgate cancel`, the next run on the results folder)
//! settles the part no executor owns. Whether the run's goldgate is gone ([`died`],
//! [`still_running`]); the jobs whose folders may hold what was never settled (those whose end
//! goldgate never recorded); what each job's leftovers are masked with — this environment's
//! secrets and the variables `run.json` names as the job's (`secret_names`, never a value) —
//! and, when this environment lacks one of those or holds another value under its name (it
//! fails the run's 16-bit check of the job's value, `secret_checks`), what cannot be masked;
//! and the launcher's per-rank logs under `logs/`, masked ([`settle_left`]). The Slurm
//! executor's own leftovers (its raw output, its queue) are settled under `run::slurm`, with
//! these pieces.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goldgate_core::fsio::{check_no_links, check_relative};
use goldgate_core::redact::{MIN_SECRET_LEN, Redactor, SecretSalt, is_secret_name};
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
    /// `run.json`'s check of the value each of them had, and the run's key for it.
    checks: BTreeMap<String, u16>,
    salt: Option<SecretSalt>,
}

/// The folders of the jobs of `index` (its folder `run_dir`), in plan order; a job folder that
/// `run.json` puts outside the run folder, or reaches through a link, is never looked into.
pub(crate) fn job_folders<'a>(
    run_dir: &'a Path,
    index: &'a RunIndex,
) -> impl Iterator<Item = JobFolder> + 'a {
    let salt = index.secret_salt.as_deref().and_then(SecretSalt::from_hex);
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
            checks: job.secret_checks.clone(),
            salt,
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
    /// variables the job's secrets came from; and the job's secrets it lacks: a variable it
    /// does not hold, or holds with a value that fails the check `run.json` recorded of the
    /// job's (a rotated token, another CI job's).
    pub(crate) fn masking(&self, job: &JobFolder) -> Masking {
        let missing = (job.secret_names.iter())
            .filter_map(|name| {
                let value = self.0.get(name);
                // A run from before the checks recorded none: its names are trusted.
                let passes = |value: &[u8]| match job.checks.get(name) {
                    None => true,
                    Some(check) => job.salt.is_some_and(|salt| salt.check(value) == *check),
                };
                match value {
                    None => Some(name.clone()),
                    Some(value) if passes(value) => None,
                    Some(_) => Some(format!("the run's value of {name} (it holds another)")),
                }
            })
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
    /// The job's secrets this environment does not hold, each naming its variable: what it
    /// cannot mask.
    pub(crate) missing: Vec<String>,
}

/// The job's per-rank logs, masked; their text withheld (replaced by a note) when this
/// environment lacks a secret of the job's, and said. Returns a warning per log it could not
/// settle, and one naming what it lacks when it withheld any.
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
    let lacks = format!(
        "this environment lacks {}, which masks it",
        masking.missing.join(", ")
    );
    let note = format!("[goldgate: this log's text is not kept: {lacks}]");
    let (withheld, mut warnings) = rank_logs::withhold(&logs, &note, keep_raw);
    if withheld > 0 {
        warnings.push(format!(
            "job {}: the text of {withheld} per-rank log(s) is not kept: {lacks}",
            job.id
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(names: &[&str], checks: &[(&str, &[u8])], salt: Option<SecretSalt>) -> JobFolder {
        JobFolder {
            id: "m/c#1".into(),
            dir: PathBuf::from("job"),
            unfinished: true,
            secret_names: names.iter().map(|n| (*n).to_owned()).collect(),
            checks: (checks.iter())
                .filter_map(|(n, v)| Some(((*n).to_owned(), salt?.check(v))))
                .collect(),
            salt,
        }
    }

    fn here(vars: &[(&str, &str)]) -> Environment {
        Environment(
            (vars.iter())
                .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
                .collect(),
        )
    }

    #[test]
    fn a_secret_whose_value_here_fails_the_runs_check_is_not_trusted_to_mask() {
        // A fixed salt: under a random one, another value passes 1 time in 65536.
        let salt = SecretSalt::from_hex("00112233445566778899aabbccddeeff");
        let had: &[(&str, &[u8])] = &[("HF_TOKEN", b"hf-the-runs-token-1"), ("CALLER_A", b"fed-1")];
        let job = job(&["CALLER_A", "HF_TOKEN"], had, salt);
        let same = here(&[("HF_TOKEN", "hf-the-runs-token-1"), ("CALLER_A", "fed-1")]);
        assert!(same.masking(&job).missing.is_empty());
        let rotated = here(&[("HF_TOKEN", "hf-a-rotated-token-2"), ("CALLER_A", "fed-1")]);
        assert_eq!(
            rotated.masking(&job).missing,
            ["the run's value of HF_TOKEN (it holds another)"]
        );
        let lacking = here(&[("HF_TOKEN", "hf-the-runs-token-1")]);
        assert_eq!(lacking.masking(&job).missing, ["CALLER_A"]);
    }

    #[test]
    fn a_run_that_recorded_no_check_is_masked_with_this_environments_values() {
        let job = job(&["HF_TOKEN"], &[], None);
        let masking = here(&[("HF_TOKEN", "hf-any-token-3")]).masking(&job);
        assert!(masking.missing.is_empty());
        assert_eq!(
            masking.redactor.redact_str("t hf-any-token-3"),
            "t <redacted>"
        );
    }

    #[test]
    fn a_check_whose_salt_cannot_be_read_is_failed() {
        let salt = SecretSalt::random().ok();
        let mut job = job(&["HF_TOKEN"], &[("HF_TOKEN", b"hf-the-runs-token-1")], salt);
        job.salt = None;
        let same = here(&[("HF_TOKEN", "hf-the-runs-token-1")]);
        assert_eq!(same.masking(&job).missing.len(), 1);
    }
}
