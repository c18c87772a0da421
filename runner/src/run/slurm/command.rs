//! Stage "run", Slurm executor: the Slurm commands goldgate runs — `sbatch --parsable`,
//! `squeue`, `scontrol show job`, `scancel` — each started directly (no shell), its failure a
//! typed [`SlurmError`].

use std::path::Path;
use std::process::Command;

/// A Slurm command that could not be run or failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SlurmError {
    /// The program is not there (Slurm's client commands are not installed or not on PATH).
    #[error("cannot run `{program}`: {source}")]
    #[diagnostic(help(
        "(hint: the Slurm executor runs Slurm's client commands (sbatch, squeue, scontrol, scancel); install them or put them on PATH)"
    ))]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The command ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    /// `sbatch --parsable` printed something other than a job id.
    #[error("`sbatch --parsable` printed `{output}`, not a job id")]
    JobId { output: String },
}

/// Runs `program args...` and returns its stdout.
fn run(program: &str, args: &[&str]) -> Result<String, SlurmError> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| SlurmError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(SlurmError::Failed {
        command: format!("{program} {}", args.join(" ")),
        status: output.status.to_string(),
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    })
}

/// Checks that Slurm's client commands run (`sbatch --version`; no call to the controller).
pub(crate) fn check_installed() -> Result<(), SlurmError> {
    run("sbatch", &["--version"]).map(|_| ())
}

/// Submits a batch script; returns the job id.
pub(crate) fn sbatch(script: &Path) -> Result<u64, SlurmError> {
    let script = script.display().to_string();
    let out = run("sbatch", &["--parsable", &script])?;
    parse_job_id(&out)
}

/// `123` or `123;cluster` → 123.
fn parse_job_id(out: &str) -> Result<u64, SlurmError> {
    let text = out.trim();
    text.split(';')
        .next()
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| SlurmError::JobId {
            output: text.to_owned(),
        })
}

/// The `squeue` format goldgate reads: id, state, reason, node list.
pub(crate) const SQUEUE_FORMAT: &str = "%i|%T|%r|%N";

/// One `squeue` call for all of `ids`, finished jobs included (while Slurm keeps them).
pub(crate) fn squeue(ids: &[u64]) -> Result<String, SlurmError> {
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    let jobs = format!("--jobs={}", list.join(","));
    let format = format!("--format={SQUEUE_FORMAT}");
    match run("squeue", &["--noheader", "--states=all", &jobs, &format]) {
        Ok(text) => Ok(text),
        // Every listed job is gone from the controller: nothing to show.
        Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => {
            Ok(String::new())
        }
        Err(e) => Err(e),
    }
}

/// `scontrol show job ID --oneliner`; `None` when Slurm no longer knows the job.
pub(crate) fn show_job(id: u64) -> Result<Option<String>, SlurmError> {
    match run("scontrol", &["show", "job", "--oneliner", &id.to_string()]) {
        Ok(text) => Ok(Some(text)),
        Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => Ok(None),
        Err(e) => Err(e),
    }
}

/// `scancel` with a signal to the batch shell and every step (`--full`), or Slurm's own
/// cancel (SIGTERM, `KillWait`, SIGKILL) when `signal` is `None`.
pub(crate) fn scancel(id: u64, signal: Option<&str>) -> Result<(), SlurmError> {
    let id = id.to_string();
    let result = match signal {
        Some(signal) => {
            let signal = format!("--signal={signal}");
            run("scancel", &["--full", &signal, &id])
        }
        None => run("scancel", &[&id]),
    };
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_with_and_without_a_cluster() {
        assert_eq!(parse_job_id("123\n").unwrap(), 123);
        assert_eq!(parse_job_id("77;c1\n").unwrap(), 77);
        assert!(parse_job_id("Submitted batch job 5").is_err());
    }
}
