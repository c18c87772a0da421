//! Stage "run": the results writer. Consumes [`RunEvent`]s and keeps `OUT/<run-id>/run.json`
//! and each job's `results.json` on disk as the run goes (hyperfine's partial results: a crash
//! loses nothing already finished). Every write is atomic; every failed write is kept and
//! reported at the end, not only the last.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::RunError;
use super::event::{ExecEvent, RunEvent};
use super::options::RunOptions;
use crate::plan::Job;
use goldgate_core::redact::SecretSalt;
use goldgate_schema::{JobEntry, RunIndex, Runner, SCHEMA_VERSION};

/// Writes a run's files as its events arrive.
pub struct ResultsWriter {
    run_dir: PathBuf,
    index: Option<RunIndex>,
    errors: Vec<RunError>,
}

impl ResultsWriter {
    /// Writes `run.json` of the run `opts` describe, listing `jobs`, none finished; `command`
    /// is recorded in it, and so is `--keep-raw-log`. A run whose index cannot be written does
    /// not start.
    pub fn create(
        opts: &RunOptions,
        jobs: &[Job],
        command: Vec<String>,
    ) -> Result<ResultsWriter, RunError> {
        let run_dir = opts.run_dir();
        let mut index = new_index(&opts.run_id, jobs, &run_dir, command);
        index.keep_raw_log = opts.keep_raw_log;
        let mut writer = ResultsWriter {
            run_dir,
            index: Some(index),
            errors: Vec::new(),
        };
        writer.write_index();
        match writer.errors.pop() {
            Some(e) => Err(e),
            None => Ok(writer),
        }
    }

    /// Marks the run as the rerun of `run`'s failed or unfinished jobs (`--rerun-failed`), so
    /// that run's other jobs complete it when it is judged; rewrites the index.
    pub fn mark_rerun_of(&mut self, run: &str) -> Result<(), RunError> {
        if let Some(index) = self.index.as_mut() {
            index.rerun_of = Some(run.to_owned());
        }
        self.write_index();
        self.errors.pop().map_or(Ok(()), Err)
    }

    /// Handles one event: a job's record and the index when a job ends, the index when the
    /// run ends.
    pub fn event(&mut self, event: &RunEvent<'_>) {
        match event {
            RunEvent::JobFinished { index, job, record } => {
                let path = job.dirs.job.join("results.json");
                self.write_json(&path, record);
                if let Some(entry) = self.index.as_mut().and_then(|i| i.jobs.get_mut(*index)) {
                    entry.outcome = Some(record.outcome.clone());
                }
                self.write_index();
            }
            RunEvent::RunFinished { .. } => {
                if let Some(index) = self.index.as_mut() {
                    index.finished_at = Some(jiff::Timestamp::now().to_string());
                }
                self.write_index();
            }
            RunEvent::Exec {
                index,
                event: ExecEvent::Submitted { id },
                ..
            } => {
                if let Some(entry) = self.index.as_mut().and_then(|i| i.jobs.get_mut(*index)) {
                    entry.scheduler_job_ids.push(*id);
                }
                self.write_index();
            }
            RunEvent::RunStarted { .. }
            | RunEvent::JobStarted { .. }
            | RunEvent::Exec { .. }
            | RunEvent::AttemptFinished { .. } => {}
        }
    }

    /// Every write that failed, or nothing.
    pub fn finish(mut self) -> Result<(), RunError> {
        match self.errors.len() {
            0 => Ok(()),
            1 => Err(self.errors.remove(0)),
            _ => Err(RunError::Saves {
                errors: self.errors,
            }),
        }
    }

    fn write_index(&mut self) {
        if let Some(index) = self.index.take() {
            self.write_json(&self.run_dir.join("run.json"), &index);
            self.index = Some(index);
        }
    }

    fn write_json<T: serde::Serialize>(&mut self, path: &Path, value: &T) {
        let result = serde_json::to_string_pretty(value)
            .map_err(|source| RunError::Encode {
                path: path.to_path_buf(),
                source,
            })
            .and_then(|text| {
                // A job writes into its own folder: a link it leaves where results.json goes is
                // refused, never followed.
                goldgate_core::fsio::write_under(&self.run_dir, path, text.as_bytes()).map_err(
                    |source| RunError::Write {
                        path: path.to_path_buf(),
                        source,
                    },
                )
            });
        if let Err(e) = result {
            self.errors.push(e);
        }
    }
}

/// The command line as `run.json` keeps it: every secret value a job will see masked, as its
/// output is (one rule: [`super::watch::redactor`]), and the value of every secret-named
/// `NAME=VALUE` word of the command itself (`ab --b-env HF_TOKEN=…` gives it to arm B's jobs,
/// but arm A's command line holds it too).
fn redacted_command(command: Vec<String>, jobs: &[Job]) -> Vec<String> {
    let assigned = command.iter().filter_map(|word| {
        // `--b-env=HF_TOKEN=…` as well as `HF_TOKEN=…`.
        let word = match word.strip_prefix("--") {
            Some(flag) => flag.split_once('=').map_or(word.as_str(), |(_, rest)| rest),
            None => word,
        };
        word.split_once('=')
    });
    let mut redactors = vec![goldgate_core::redact::Redactor::from_env(assigned)];
    redactors.extend(
        jobs.iter()
            .map(|j| super::watch::redactor(&j.env, &j.env_unset)),
    );
    command
        .into_iter()
        .map(|word| {
            redactors
                .iter()
                .fold(word, |word, r| r.redact_str(&word).into_owned())
        })
        .collect()
}

fn new_index(run_id: &str, jobs: &[Job], run_dir: &Path, command: Vec<String>) -> RunIndex {
    // Without a random source the checks are left out: a run that died is then settled as
    // before they existed, trusting the names.
    let salt = SecretSalt::random().ok();
    RunIndex {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.to_string(),
        started_at: jiff::Timestamp::now().to_string(),
        finished_at: None,
        platform: jobs.first().map(|j| j.platform.clone()).unwrap_or_default(),
        goldgate_version: env!("CARGO_PKG_VERSION").to_string(),
        command: redacted_command(command, jobs),
        jobs: jobs.iter().map(|j| job_entry(j, run_dir, salt)).collect(),
        ab: jobs.iter().find_map(|j| j.ab.clone()),
        runner: Some(Runner {
            host: super::provenance::hostname(),
            pid: std::process::id(),
        }),
        rerun_of: None,
        keep_raw_log: false,
        secret_salt: salt.map(|salt| salt.to_hex()),
    }
}

/// `job`'s entry in a new `run.json`: not yet finished, its secrets named and, with a `salt`,
/// each one's value checked (never stored).
fn job_entry(job: &Job, run_dir: &Path, salt: Option<SecretSalt>) -> JobEntry {
    let secrets = super::watch::secret_values(job);
    let secret_checks: BTreeMap<String, u16> = (secrets.iter())
        .filter_map(|(name, value)| Some((name.clone(), salt?.check(value))))
        .collect();
    JobEntry {
        job_id: job.id.clone(),
        dir: (job.dirs.job.strip_prefix(run_dir))
            .unwrap_or(&job.dirs.job)
            .to_path_buf(),
        outcome: None,
        scheduler_job_ids: Vec::new(),
        secret_names: secrets.into_iter().map(|(name, _)| name).collect(),
        secret_checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_given_on_the_command_line_never_reaches_run_json() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = RunOptions::new("r", dir.path(), dir.path());
        let run_dir = opts.run_dir();
        // Arm A's job: the secret is arm B's, but the command line holds it.
        let job = Job::fixture(dir.path(), "gpt/c", 1);
        let secret = "hf_Zq81xVbN0aQ7sLm2Tr5Ye3Uc";
        let command = [
            "goldgate",
            "ab",
            "gpt/c",
            "--b-env",
            &format!("HF_TOKEN={secret}"),
            &format!("--a-env=WANDB_API_KEY={secret}x"),
        ]
        .map(str::to_owned)
        .to_vec();
        let writer =
            ResultsWriter::create(&opts, &[job], command).unwrap_or_else(|e| panic!("{e}"));
        writer.finish().unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(run_dir.join("run.json")).unwrap_or_default();
        assert!(!text.contains(secret), "{text}");
        let index: RunIndex = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(index.command[4], "HF_TOKEN=<redacted>");
        assert_eq!(index.command[5], "--a-env=WANDB_API_KEY=<redacted>");
    }

    #[test]
    fn run_json_checks_each_secrets_value_under_a_salt_of_its_own_and_never_holds_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut job = Job::fixture(dir.path(), "gpt/c", 1);
        let secret = "literal-key-in-the-case-42";
        job.env.insert("WANDB_API_KEY".into(), secret.into());
        let index = new_index("r", &[job.clone()], dir.path(), Vec::new());
        let text = serde_json::to_string(&index).unwrap_or_default();
        assert!(!text.contains(secret), "{text}");
        let salt = (index.secret_salt.as_deref())
            .and_then(SecretSalt::from_hex)
            .unwrap_or_else(|| panic!("no salt: {text}"));
        let checks = &index.jobs[0].secret_checks;
        assert_eq!(
            checks.get("WANDB_API_KEY"),
            Some(&salt.check(secret.as_bytes()))
        );
        assert_eq!(
            checks.keys().collect::<Vec<_>>(),
            index.jobs[0].secret_names.iter().collect::<Vec<_>>()
        );
        let again = new_index("r2", &[job], dir.path(), Vec::new());
        assert_ne!(again.secret_salt, index.secret_salt, "a salt per run");
    }
}
