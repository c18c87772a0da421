//! Stage "run", Slurm executor: the Slurm commands goldgate runs — `sbatch --parsable`,
//! `squeue`, `scontrol show job`, `scancel` — each started directly (no shell), its failure a
//! typed [`SlurmError`].

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A Slurm command that could not be run or failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SlurmError {
    /// The program is not there (Slurm's client commands are not installed or not on PATH).
    #[error("cannot run `{program}`: {source}")]
    #[diagnostic(help(
        "the Slurm executor runs Slurm's client commands (sbatch, squeue, scontrol, scancel); install them or put them on PATH"
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

/// Submits a batch script with more options on the command line (they win over the
/// script's `#SBATCH` lines); returns the job id.
pub(crate) fn sbatch(script: &Path, options: &[String]) -> Result<u64, SlurmError> {
    let script = script.display().to_string();
    let mut args: Vec<&str> = vec!["--parsable"];
    args.extend(options.iter().map(String::as_str));
    args.push(&script);
    let out = run("sbatch", &args)?;
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

/// `scancel --signal=SIG` to the job's steps only (not `--full`: the batch shell lives on,
/// so a trainer that catches SIGTERM to save a checkpoint runs its handler and the script
/// still writes its exit line), or Slurm's own cancel (SIGTERM to everything, `KillWait`,
/// SIGKILL) when `signal` is `None`.
pub(crate) fn scancel(id: u64, signal: Option<&str>) -> Result<(), SlurmError> {
    let id = id.to_string();
    let result = match signal {
        Some(signal) => {
            let signal = format!("--signal={signal}");
            run("scancel", &[&signal, &id])
        }
        None => run("scancel", &[&id]),
    };
    result.map(|_| ())
}

/// Slurm's own cancel of job `id`, waiting at most `limit` for `scancel` (which takes
/// seconds to give up on a controller that does not answer); `false` when it failed or did
/// not finish in time (it is then stopped).
pub(crate) fn scancel_within(id: u64, limit: Duration) -> bool {
    let Ok(mut child) = Command::new("scancel")
        .arg(id.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// `scancel` of several jobs at once (Slurm's own cancel); jobs Slurm no longer knows are
/// not an error.
pub(crate) fn scancel_all(ids: &[u64]) -> Result<(), SlurmError> {
    if ids.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    let args: Vec<&str> = list.iter().map(String::as_str).collect();
    match run("scancel", &args) {
        Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Nodes of `nodes` (a Slurm node list, `n[1-2]`) that Slurm holds down, drained, failed
/// or not responding: the nodes a NODE_FAIL left behind.
pub(crate) fn unhealthy_nodes(nodes: &str) -> Result<Vec<String>, SlurmError> {
    let list = format!("--nodes={nodes}");
    let out = run(
        "sinfo",
        &[
            "--noheader",
            "--Node",
            &list,
            "--states=down,drain,fail,no_respond",
            "--format=%N",
        ],
    )?;
    let mut names: Vec<String> = out.split_whitespace().map(str::to_owned).collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Every job in the queue with its comment (`%i|%k`), for finding what a run left behind.
pub(crate) fn squeue_comments() -> Result<String, SlurmError> {
    run("squeue", &["--noheader", "--format=%i|%T|%k"])
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
