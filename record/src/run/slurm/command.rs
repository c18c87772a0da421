//! Stage "run", Slurm executor: the Slurm commands goldgate runs — `sbatch --parsable`,
//! `squeue`, `scontrol show job`, `scancel` — each started directly (no shell), its failure a
//! typed [`SlurmError`]. Each may take at most [`COMMAND_TIMEOUT`] (a controller that hangs
//! hangs its clients) and its output is read line by line, each line bounded, so a queue of
//! any size costs goldgate one line of memory where it is streamed ([`own_jobs`]).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one Slurm command may run before goldgate stops it and calls it failed.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of one output line kept (the rest of a longer line is dropped).
const MAX_OUTPUT_LINE: usize = 4096;
/// Bytes of a command's stderr kept for its error message.
const MAX_STDERR: usize = 16 * 1024;

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
    /// The command did not finish in time (a controller that does not answer); it was stopped.
    #[error("`{command}` did not finish within {} s; stopped", after.as_secs())]
    #[diagnostic(help("is slurmctld answering? `scontrol ping` says"))]
    TimedOut { command: String, after: Duration },
}

/// Runs `program args...` and returns its stdout.
fn run(program: &str, args: &[&str]) -> Result<String, SlurmError> {
    let mut out = String::new();
    run_lines(program, args, COMMAND_TIMEOUT, &mut |line| {
        out.push_str(line);
        out.push('\n');
    })?;
    Ok(out)
}

/// Runs `program args...`, handing each line of its stdout (without `\n`, cut to
/// [`MAX_OUTPUT_LINE`] bytes) to `on_line` as it comes; stops it after `limit`.
fn run_lines(
    program: &str,
    args: &[&str],
    limit: Duration,
    on_line: &mut dyn FnMut(&str),
) -> Result<(), SlurmError> {
    run_lines_env(program, args, &BTreeMap::new(), limit, on_line)
}

/// [`run_lines`] with `env` set on top of goldgate's environment.
fn run_lines_env(
    program: &str,
    args: &[&str],
    env: &BTreeMap<String, String>,
    limit: Duration,
    on_line: &mut dyn FnMut(&str),
) -> Result<(), SlurmError> {
    let command = || format!("{program} {}", args.join(" "));
    let spawn_error = |source| SlurmError::Spawn {
        program: program.to_owned(),
        source,
    };
    let mut child = Command::new(program)
        .args(args)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_error)?;
    let stderr = child
        .stderr
        .take()
        .map(|e| std::thread::spawn(|| read_bounded(e)));
    let (done, watchdog) = watchdog(&child, limit);
    if let Some(stdout) = child.stdout.take() {
        read_lines(stdout, on_line);
    }
    // The watchdog is told and joined before the child is reaped: it never signals a pid
    // that another process may have been given.
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let status = child.wait().map_err(spawn_error)?;
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if timed_out {
        return Err(SlurmError::TimedOut {
            command: command(),
            after: limit,
        });
    }
    if status.success() {
        return Ok(());
    }
    Err(SlurmError::Failed {
        command: command(),
        status: status.to_string(),
        stderr: stderr.trim().to_owned(),
    })
}

/// A thread that kills `child` unless told within `limit` that it is done; it returns
/// whether it killed.
fn watchdog(child: &Child, limit: Duration) -> (mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (tx, rx) = mpsc::channel::<()>();
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    let handle = std::thread::spawn(move || match rx.recv_timeout(limit) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            true
        }
        _ => false,
    });
    (tx, handle)
}

/// Hands each line of `input` to `on_line`, holding at most one line of
/// [`MAX_OUTPUT_LINE`] bytes.
fn read_lines(input: impl Read, on_line: &mut dyn FnMut(&str)) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    while let Ok(buf) = reader.fill_buf()
        && !buf.is_empty()
    {
        let (take, complete) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let room = MAX_OUTPUT_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take + usize::from(complete));
        if complete {
            on_line(&String::from_utf8_lossy(&line));
            line.clear();
        }
    }
    if !line.is_empty() {
        on_line(&String::from_utf8_lossy(&line));
    }
}

/// The first [`MAX_STDERR`] bytes of `input`, read to its end.
fn read_bounded(input: impl Read) -> String {
    let mut kept = Vec::new();
    let mut input = input;
    let _ = (&mut input).take(MAX_STDERR as u64).read_to_end(&mut kept);
    let _ = std::io::copy(&mut input, &mut std::io::sink());
    String::from_utf8_lossy(&kept).into_owned()
}

/// Checks that Slurm's client commands run (`sbatch --version`; no call to the controller).
pub(crate) fn check_installed() -> Result<(), SlurmError> {
    run("sbatch", &["--version"]).map(|_| ())
}

/// Submits a batch script with more options on the command line (they win over the
/// script's `#SBATCH` lines) and `env` on top of goldgate's environment, which the batch job
/// inherits (sbatch's `--export=ALL`): a secret the case sets reaches the job through it,
/// never through the script (`export HF_TOKEN="${HF_TOKEN:?…}"`). Returns the job id.
pub(crate) fn sbatch(
    script: &Path,
    options: &[String],
    env: &BTreeMap<String, String>,
) -> Result<u64, SlurmError> {
    let script = script.display().to_string();
    let mut args: Vec<&str> = vec!["--parsable"];
    args.extend(options.iter().map(String::as_str));
    args.push(&script);
    let mut out = String::new();
    run_lines_env("sbatch", &args, env, COMMAND_TIMEOUT, &mut |line| {
        out.push_str(line);
        out.push('\n');
    })?;
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
/// seconds to give up on a controller that does not answer; it is then stopped). A job Slurm
/// no longer knows has nothing left to cancel: not an error.
pub(crate) fn scancel_within(id: u64, limit: Duration) -> Result<(), SlurmError> {
    match run_lines("scancel", &[&id.to_string()], limit, &mut |_| {}) {
        Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => Ok(()),
        other => other,
    }
}

/// `sacct`'s state and exit code of job `id` (`--parsable2`: `CANCELLED by 0|0:15`), the
/// job's own line only (`--allocations`); `None` when the cluster keeps no accounting
/// (`Slurm accounting storage is disabled`) or has no line for the job.
pub(crate) fn sacct_job(id: u64) -> Result<Option<String>, SlurmError> {
    let jobs = format!("--jobs={id}");
    let args = [
        "--noheader",
        "--parsable2",
        "--allocations",
        &jobs,
        "--format=State,ExitCode",
    ];
    match run("sacct", &args) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(SlurmError::Failed { stderr, .. })
            if stderr.contains("accounting storage is disabled") =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
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

/// Each of this user's jobs in the queue — id, state and comment (`%i|%T|%k`) — handed to
/// `on_job` as `squeue` prints it, for finding what a run left behind. Only the user's own
/// jobs (`--user`): another user's job never counts, whatever its comment says.
pub(crate) fn own_jobs(on_job: &mut dyn FnMut(u64, &str, &str)) -> Result<(), SlurmError> {
    let user = format!("--user={}", rustix::process::getuid().as_raw());
    let args = ["--noheader", &user, "--format=%i|%T|%k"];
    run_lines("squeue", &args, COMMAND_TIMEOUT, &mut |line| {
        let mut fields = line.trim().splitn(3, '|');
        if let (Some(id), Some(state), Some(comment)) =
            (fields.next(), fields.next(), fields.next())
            && let Ok(id) = id.parse()
        {
            on_job(id, state, comment);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_hangs_is_stopped_at_its_limit() {
        let t = std::time::Instant::now();
        let err = run_lines("sleep", &["30"], Duration::from_millis(300), &mut |_| {});
        assert!(matches!(err, Err(SlurmError::TimedOut { .. })), "{err:?}");
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    }

    #[test]
    fn output_is_read_line_by_line_with_each_line_bounded() {
        let script = "head -c 100000 /dev/zero | tr '\\0' x; echo; echo 1\\|R\\|c; printf last";
        let mut lines = Vec::new();
        run_lines("sh", &["-c", script], COMMAND_TIMEOUT, &mut |l| {
            lines.push(l.to_owned())
        })
        .unwrap();
        let lens: Vec<usize> = lines.iter().map(String::len).collect();
        assert_eq!(lens, [MAX_OUTPUT_LINE, 5, 4]);
        assert_eq!(lines[1..], ["1|R|c", "last"]);
        let err = run_lines(
            "sh",
            &["-c", "echo no >&2; exit 4"],
            COMMAND_TIMEOUT,
            &mut |_| {},
        );
        assert!(
            matches!(&err, Err(SlurmError::Failed { stderr, .. }) if stderr == "no"),
            "{err:?}"
        );
    }

    #[test]
    fn job_ids_with_and_without_a_cluster() {
        assert_eq!(parse_job_id("123\n").unwrap(), 123);
        assert_eq!(parse_job_id("77;c1\n").unwrap(), 77);
        assert!(parse_job_id("Submitted batch job 5").is_err());
    }
}
