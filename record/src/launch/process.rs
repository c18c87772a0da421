//! Stage "launch": runs one job as its own process group, streams its combined output to a
//! callback as it comes (the run's log stream splits, redacts and stores it; a raw copy goes
//! to a file only on request), and enforces the timeout and stop requests on the whole group
//! and on any process that escaped it (`escape`).
//!
//! The output travels from the pipe to the log in chunks through a channel of
//! [`CHANNEL_CHUNKS`] places: when the log or the parser falls behind, the reader blocks, the
//! pipe fills and the job waits on its own writes. goldgate's memory stays bounded however
//! fast a job prints or however slow the disk is.

use std::fs::File;
use std::io::{BufWriter, PipeReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::error::LaunchError;
use super::escape;
use super::signals::StopFlag;
use super::spec::{LaunchSpec, resolve_program};

/// How often the supervisor looks at the process group while it stops the job or waits for
/// the group's last processes. While the job runs it sleeps until something happens: output,
/// the main process's exit, a stop request (which wakes it) or the timeout. A wakeup after a
/// long sleep costs real CPU on a virtual machine (~150 µs each on the 2-core development VM,
/// measured as the sampler benchmark's `none` row: 0.15 % of a core with a 100 ms tick).
const TICK: Duration = Duration::from_millis(100);
/// Bytes the reader takes from the pipe at once (one chunk).
const CHUNK: usize = 64 * 1024;
/// Chunks that may wait between the pipe and the log: with [`CHUNK`], at most 1 MiB of a
/// job's output is held in goldgate's memory.
pub const CHANNEL_CHUNKS: usize = 16;
/// Messages handled before the supervisor looks at the timeout and stop requests again, so a
/// job that prints without pause cannot starve them.
const DRAIN_BATCH: usize = 64;
/// How long zombies of the group may linger before goldgate stops waiting for them (they
/// are not goldgate's to reap when they left before goldgate became their subreaper).
const ZOMBIE_WAIT: Duration = Duration::from_secs(1);
/// How long to wait for end-of-output after the whole group is gone (a process that left
/// the group may still hold the pipe).
const EOF_WAIT: Duration = Duration::from_secs(2);

/// What the supervisor reports while a job runs.
#[derive(Debug)]
pub enum LaunchEvent<'a> {
    /// The job started; its process group id equals its pid.
    Spawned { pid: u32, pgid: u32 },
    /// The next bytes of combined stdout+stderr, as read from the pipe (any number of lines,
    /// maybe a partial one: `goldgate_core::log::LogStream` splits them).
    Output(&'a [u8]),
}

/// How the job's main process ended, as the operating system reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Termination {
    /// Exit code.
    Exited(i32),
    /// Killed by this signal number.
    Signaled(i32),
}

/// Why the job ended, from goldgate's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessOutcome {
    /// Ended by itself with this exit code.
    Exited(i32),
    /// Ended by a signal goldgate did not send.
    Signaled(i32),
    /// goldgate stopped it at the timeout.
    TimedOut,
    /// goldgate stopped it because goldgate was asked to stop (Ctrl-C, SIGTERM).
    Interrupted,
}

/// Everything known about a finished job process tree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaunchReport {
    pub outcome: ProcessOutcome,
    pub termination: Termination,
    pub pid: u32,
    pub pgid: u32,
    /// From spawn to the moment the last process of the group was gone.
    pub wall: Duration,
    /// Bytes of output seen.
    pub output_bytes: u64,
    /// Processes of the group outlived the main process and had to be terminated.
    pub stray_processes: bool,
    /// Processes that left the group (a `setsid` daemon) and were stopped after it, as
    /// `pid 123 (sleep)`.
    pub escaped: Vec<String>,
}

enum Msg {
    /// Output as read from the pipe (any number of lines, maybe a partial one).
    Chunk(Vec<u8>),
    Eof,
    Exited(std::io::Result<ExitStatus>),
    /// A stop was requested: look at the flag now.
    Wake,
}

/// Starts the job in its own process group and supervises it until every process of the
/// group is gone.
///
/// Output goes to `on_event` chunk by chunk, and to `spec.raw_log` when set (flushed whenever
/// the pipe is drained, so it survives a crash of the job). At the timeout or on a stop request
/// the group gets SIGTERM, then SIGKILL after `spec.grace` (at once on a second request).
/// Processes left in the group after the main process exits are stopped the same way.
pub fn launch(
    spec: &LaunchSpec,
    stop: &StopFlag,
    mut on_event: impl FnMut(LaunchEvent<'_>),
) -> Result<LaunchReport, LaunchError> {
    let program = spec.argv.first().ok_or(LaunchError::EmptyArgv)?;
    if !spec.cwd.is_dir() {
        return Err(LaunchError::MissingCwd {
            path: spec.cwd.clone(),
        });
    }
    let path_var = spec
        .env
        .get("PATH")
        .map(Into::into)
        .or_else(|| std::env::var_os("PATH"));
    let program_path = resolve_program(program, &spec.cwd, path_var)?;
    let log = spec.raw_log.as_deref().map(open_log).transpose()?;
    become_subreaper();
    let token = escape::new_token();
    let (reader, mut command) = command(spec, &program_path, &token)?;
    let start = Instant::now();
    let child = command.spawn().map_err(|source| LaunchError::Spawn {
        program: program.clone(),
        source,
    })?;
    // Our copies of the pipe's write end must close, or end-of-output never comes.
    drop(command);
    let pid = child.id();
    on_event(LaunchEvent::Spawned { pid, pgid: pid });
    let (tx, rx) = match start_threads(reader, child) {
        Ok(channel) => channel,
        Err(e) => {
            signal_group(pid, Signal::KILL);
            return Err(e);
        }
    };
    let _wake = stop.on_request(move || {
        // A full channel wakes the supervisor anyway.
        let _ = tx.try_send(Msg::Wake);
    });
    let mut sup = Supervisor::new(spec, stop, pid, log, start, token);
    let termination = match sup.run(&rx, &mut on_event) {
        Ok(termination) => termination,
        Err(e) => {
            escape::kill_all(&sup.token);
            return Err(e);
        }
    };
    let outcome = sup.reason.unwrap_or(match termination {
        Termination::Exited(code) => ProcessOutcome::Exited(code),
        Termination::Signaled(sig) => ProcessOutcome::Signaled(sig),
    });
    Ok(LaunchReport {
        outcome,
        termination,
        pid,
        pgid: pid,
        wall: start.elapsed(),
        output_bytes: sup.output_bytes,
        stray_processes: sup.stray,
        escaped: sup.escaped.unwrap_or_default(),
    })
}

fn open_log(path: &Path) -> Result<BufWriter<File>, LaunchError> {
    let err = |source| LaunchError::LogFile {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    Ok(BufWriter::with_capacity(
        64 * 1024,
        File::create(path).map_err(err)?,
    ))
}

fn command(
    spec: &LaunchSpec,
    program: &Path,
    token: &str,
) -> Result<(PipeReader, Command), LaunchError> {
    let plumbing = |source| LaunchError::Plumbing {
        what: "output pipe",
        source,
    };
    let (reader, writer) = std::io::pipe().map_err(plumbing)?;
    let writer2 = writer.try_clone().map_err(plumbing)?;
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    for key in &spec.env_unset {
        cmd.env_remove(key);
    }
    cmd.envs(&spec.env);
    if let Some(devices) = &spec.cuda_visible_devices {
        cmd.env("CUDA_VISIBLE_DEVICES", devices);
    }
    cmd.env(escape::TOKEN_VAR, token);
    Ok((reader, cmd))
}

/// Starts the output reader and the waiter; returns the bounded channel they report on (and a
/// sender for the stop flag's wake-up).
fn start_threads(
    reader: PipeReader,
    mut child: Child,
) -> Result<(SyncSender<Msg>, Receiver<Msg>), LaunchError> {
    let plumbing = |source| LaunchError::Plumbing {
        what: "supervisor threads",
        source,
    };
    let (tx, rx) = mpsc::sync_channel(CHANNEL_CHUNKS);
    let (chunk_tx, wake_tx) = (tx.clone(), tx.clone());
    std::thread::Builder::new()
        .name("goldgate-job-output".to_owned())
        .spawn(move || read_chunks(reader, &chunk_tx))
        .map_err(plumbing)?;
    std::thread::Builder::new()
        .name("goldgate-job-wait".to_owned())
        .spawn(move || {
            let _ = tx.send(Msg::Exited(child.wait()));
        })
        .map_err(plumbing)?;
    Ok((wake_tx, rx))
}

/// Sends the pipe's output in chunks of at most [`CHUNK`] bytes, blocking while the channel
/// is full, then end-of-output.
fn read_chunks(mut pipe: PipeReader, tx: &SyncSender<Msg>) {
    loop {
        let mut buf = vec![0u8; CHUNK];
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        buf.truncate(n);
        if tx.send(Msg::Chunk(buf)).is_err() {
            return;
        }
    }
    let _ = tx.send(Msg::Eof);
}

/// Sends `sig` to the whole group; a group that is already gone is not an error.
fn signal_group(pgid: u32, sig: Signal) {
    if let Some(pid) = pid_of(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// True while any process of the group exists, zombies included (`kill(-pgid, 0)`).
pub fn group_alive(pgid: u32) -> bool {
    let Some(pid) = pid_of(pgid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process_group(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// True while a running (not zombie) process of the group exists. `kill(-pgid, 0)` answers
/// first; `/proc` is read only when it says "exists", because orphaned zombies that nobody
/// reaps (a container's PID 1 often does not) also answer it.
fn group_running(pgid: u32) -> bool {
    group_alive(pgid) && live_member_in_proc(pgid).unwrap_or(true)
}

/// Scans `/proc/*/stat` for a non-zombie process in group `pgid`; `None` if `/proc` is unreadable.
fn live_member_in_proc(pgid: u32) -> Option<bool> {
    let mut buf = String::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        buf.clear();
        let Ok(mut file) = File::open(entry.path().join("stat")) else {
            continue;
        };
        if file.read_to_string(&mut buf).is_err() {
            continue;
        }
        // Fields after the command name: state ppid pgrp ...
        let Some(rest) = buf.rfind(')').map(|i| &buf[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let (state, _ppid, group) = (fields.next(), fields.next(), fields.next());
        if group.and_then(|g| g.parse::<u32>().ok()) == Some(pgid)
            && state != Some("Z")
            && state != Some("X")
        {
            return Some(true);
        }
    }
    Some(false)
}

/// Makes goldgate the reaper of orphaned job processes, so that they do not linger as
/// zombies when the job's main process dies before its children (see [`reap_group`]).
fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// Reaps exited members of the group that were re-parented to goldgate. Only called after
/// the main process was reaped by its own waiter, whose status it must not steal.
fn reap_group(pgid: u32) {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let Some(pid) = pid_of(pgid) else { return };
    while let Ok(Some(_)) = waitid(
        WaitId::Pgid(Some(pid)),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
    ) {}
}

fn pid_of(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

struct Supervisor<'a> {
    spec: &'a LaunchSpec,
    stop: &'a StopFlag,
    pgid: u32,
    log: Option<BufWriter<File>>,
    start: Instant,
    reason: Option<ProcessOutcome>,
    term_sent: Option<Instant>,
    killed: bool,
    stray: bool,
    output_bytes: u64,
    status: Option<(Termination, Instant)>,
    eof: bool,
    zombies_since: Option<Instant>,
    /// The environment token of this launch's processes (`escape`).
    token: String,
    /// Set once escaped processes were looked for (after the group is gone).
    escaped: Option<Vec<String>>,
}

impl<'a> Supervisor<'a> {
    fn new(
        spec: &'a LaunchSpec,
        stop: &'a StopFlag,
        pgid: u32,
        log: Option<BufWriter<File>>,
        start: Instant,
        token: String,
    ) -> Self {
        Supervisor {
            spec,
            stop,
            pgid,
            log,
            start,
            reason: None,
            term_sent: None,
            killed: false,
            stray: false,
            output_bytes: 0,
            status: None,
            eof: false,
            zombies_since: None,
            token,
            escaped: None,
        }
    }

    fn run(
        &mut self,
        rx: &Receiver<Msg>,
        on_event: &mut impl FnMut(LaunchEvent<'_>),
    ) -> Result<Termination, LaunchError> {
        // A stop requested before the wake-up was registered is seen here, before any sleep.
        self.enforce(Instant::now());
        loop {
            self.flush_log()?;
            let got = match self.next_look(Instant::now()) {
                Some(wait) => rx.recv_timeout(wait),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match got {
                Ok(msg) => self.handle(msg, on_event)?,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.eof = true,
            }
            for msg in rx.try_iter().take(DRAIN_BATCH) {
                self.handle(msg, on_event)?;
            }
            if self.status.is_some() {
                reap_group(self.pgid);
            }
            self.enforce(Instant::now());
            if self.status.is_some() && self.group_gone() {
                if self.escaped.is_none() {
                    self.stop_escaped();
                }
                if let Some((termination, since)) = self.status
                    && (self.eof || since.elapsed() >= EOF_WAIT)
                {
                    self.flush_log()?;
                    return Ok(termination);
                }
            }
        }
    }

    /// Once the group is gone: stops the processes that escaped it (they may hold the output
    /// pipe open), then gives their output [`EOF_WAIT`] to arrive.
    fn stop_escaped(&mut self) {
        let escaped = escape::stop_escaped(&self.token, self.spec.grace, self.stop);
        if let Some((termination, _)) = self.status
            && !escaped.is_empty()
        {
            self.status = Some((termination, Instant::now()));
        }
        self.escaped = Some(escaped);
    }

    fn handle(
        &mut self,
        msg: Msg,
        on_event: &mut impl FnMut(LaunchEvent<'_>),
    ) -> Result<(), LaunchError> {
        match msg {
            Msg::Chunk(bytes) => {
                if let Some(log) = &mut self.log {
                    let written = log.write_all(&bytes);
                    written.map_err(|e| self.log_error(e))?;
                }
                self.output_bytes += bytes.len() as u64;
                on_event(LaunchEvent::Output(&bytes));
            }
            Msg::Eof => self.eof = true,
            Msg::Wake => {}
            Msg::Exited(Ok(status)) => self.status = Some((termination_of(status), Instant::now())),
            Msg::Exited(Err(source)) => {
                signal_group(self.pgid, Signal::KILL);
                return Err(LaunchError::Wait {
                    pid: self.pgid,
                    source,
                });
            }
        }
        Ok(())
    }

    /// How long to sleep when nothing arrives: until the timeout while the job runs (`None`:
    /// no timeout), [`TICK`] once it is being stopped or has exited.
    fn next_look(&self, now: Instant) -> Option<Duration> {
        if self.status.is_some() || self.reason.is_some() || self.term_sent.is_some() {
            return Some(TICK);
        }
        let deadline = self.start.checked_add(self.spec.timeout?)?;
        Some(deadline.saturating_duration_since(now))
    }

    /// Timeout, stop requests and leftover processes: SIGTERM first, SIGKILL after the grace.
    fn enforce(&mut self, now: Instant) {
        if self.status.is_none() && self.reason.is_none() {
            let timed_out = self
                .spec
                .timeout
                .is_some_and(|t| now.duration_since(self.start) >= t);
            if self.stop.is_requested() {
                self.reason = Some(ProcessOutcome::Interrupted);
            } else if timed_out {
                self.reason = Some(ProcessOutcome::TimedOut);
            }
        }
        let leftovers =
            self.status.is_some() && self.term_sent.is_none() && group_running(self.pgid);
        if self.term_sent.is_none() && (self.reason.is_some() || leftovers) {
            self.stray = leftovers;
            self.term_sent = Some(now);
            signal_group(self.pgid, Signal::TERM);
        }
        if let Some(sent) = self.term_sent {
            let due = now.duration_since(sent) >= self.spec.grace || self.stop.is_forced();
            if due && (!self.killed || group_running(self.pgid)) {
                self.killed = true;
                signal_group(self.pgid, Signal::KILL);
            }
        }
    }

    /// After the main process was reaped: true once no process of the group exists, or only
    /// zombies that nobody reaped within [`ZOMBIE_WAIT`] remain.
    fn group_gone(&mut self) -> bool {
        if !group_alive(self.pgid) {
            return true;
        }
        if group_running(self.pgid) {
            self.zombies_since = None;
            return false;
        }
        let since = *self.zombies_since.get_or_insert_with(Instant::now);
        since.elapsed() >= ZOMBIE_WAIT
    }

    fn flush_log(&mut self) -> Result<(), LaunchError> {
        match &mut self.log {
            Some(log) => log.flush().map_err(|e| self.log_error(e)),
            None => Ok(()),
        }
    }

    fn log_error(&self, source: std::io::Error) -> LaunchError {
        signal_group(self.pgid, Signal::KILL);
        LaunchError::LogFile {
            path: self.spec.raw_log.clone().unwrap_or_default(),
            source,
        }
    }
}

fn termination_of(status: ExitStatus) -> Termination {
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(sig)) => Termination::Signaled(sig),
        // Neither code nor signal happens only for stopped/continued states, which
        // `wait` does not report; treat it as a failure rather than guess success.
        (None, None) => Termination::Exited(-1),
    }
}
