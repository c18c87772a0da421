//! Stage "run", local executor: a case's `BEFORE_SCRIPT` and `AFTER_SCRIPT`. Megatron's
//! `_run_training.sh` `eval`s them under `set -euxo pipefail` before and after every training
//! run; goldgate gives each to `bash -euo pipefail -c` (the one place a shell runs: the field
//! is a script) in the job folder, with the run's environment, as a process group of its own
//! under the job's timeout, its output in its own log. The after script sees the training
//! run's exit code as `EXIT_CODE` and runs whether the training passed or not. A script that
//! fails fails the job, explained by the script's last line.

use std::path::PathBuf;

use crate::launch::{self, LaunchSpec, StopFlag};
use crate::run::watch::LogWatch;
use goldgate_schema::Outcome;

/// Which script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    Before,
    After,
}

impl Hook {
    /// The field's name in `model_config.yaml`.
    pub(super) fn field(self) -> &'static str {
        match self {
            Hook::Before => "BEFORE_SCRIPT",
            Hook::After => "AFTER_SCRIPT",
        }
    }
}

/// A script that did not pass: how it ended, the line that explains it, its log.
#[derive(Debug)]
pub(super) struct ScriptFailure {
    pub(super) outcome: Outcome,
    pub(super) line: String,
    pub(super) log: PathBuf,
}

/// Runs `script` like the training run `run` (folder, environment, timeout), its output in
/// `log` (redacted, as the training run's; raw beside it when the run keeps its raw log).
/// `Ok(None)`: it passed.
pub(super) fn run_script(
    hook: Hook,
    script: &str,
    run: &LaunchSpec,
    log: PathBuf,
    stop: &StopFlag,
) -> Result<Option<ScriptFailure>, String> {
    let argv = ["bash", "-euo", "pipefail", "-c", script].map(str::to_owned);
    let mut spec = LaunchSpec::new(argv.to_vec(), run.cwd.clone());
    spec.env = run.env.clone();
    // bash keeps an inherited `PWD` that names another folder; the script's is the job's.
    spec.env
        .insert("PWD".to_owned(), run.cwd.display().to_string());
    spec.env_unset = run.env_unset.clone();
    spec.timeout = run.timeout;
    spec.grace = run.grace;
    spec.cuda_visible_devices = run.cuda_visible_devices.clone();
    spec.raw_log = run
        .raw_log
        .as_ref()
        .map(|_| crate::run::watch::raw_log_path(&log));
    let redactor = crate::run::watch::redactor(&spec.env, &spec.env_unset);
    let mut watch = LogWatch::new().redacting(redactor).storing(&log)?;
    let mut last = String::new();
    let mut keep_last = |line: &[u8]| {
        let line = String::from_utf8_lossy(line);
        if !line.trim().is_empty() {
            last = line.trim().to_owned();
        }
    };
    let report = launch::launch(&spec, stop, |event| {
        if let launch::LaunchEvent::Output(bytes) = event {
            watch.feed(bytes, &mut |_| {}, &mut keep_last);
        }
    })
    .map_err(|e| format!("cannot run the {}: {e}", hook.field()))?;
    let (.., stored) = watch.finish_all(&mut |_| {}, &mut keep_last);
    stored?;
    let outcome = launch::classify(report.outcome, launch::FailureSigns::NONE, spec.timeout);
    if outcome.passed() {
        return Ok(None);
    }
    let said = match last.is_empty() {
        true => "no output".to_owned(),
        false => last,
    };
    Ok(Some(ScriptFailure {
        line: format!("{} {}: {said}", hook.field(), outcome.label()),
        outcome,
        log,
    }))
}

/// The exit code the after script sees as `EXIT_CODE`.
pub(super) fn exit_code(outcome: &Outcome) -> i32 {
    match outcome {
        Outcome::Passed => 0,
        Outcome::Failed { exit_code } => *exit_code,
        Outcome::Killed { signal } => 128 + signal,
        _ => 1,
    }
}
