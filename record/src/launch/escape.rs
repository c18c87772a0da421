//! Stage "launch": processes that escaped the job's process group. A job that double-forks a
//! daemon into its own session (`setsid`) leaves the group goldgate signals, so stopping the
//! group does not stop it. Every process of a job inherits a token in its environment
//! ([`TOKEN_VAR`]); once the group is gone, any live process still carrying the token escaped,
//! and is stopped the way the group was (SIGTERM, the grace period, SIGKILL) and reported.
//! A process that also cleared its environment is not found, nor one caught in the instant of
//! an `exec` before the kernel has set up its new environment (it reads empty then).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::signals::StopFlag;

/// The variable that marks a job's processes: `<goldgate pid>.<launch number>`.
pub const TOKEN_VAR: &str = "GOLDGATE_JOB_TOKEN";
/// How often stopped processes are looked at until they are gone.
const POLL: Duration = Duration::from_millis(20);
/// How long processes may take to disappear after SIGKILL before goldgate stops waiting.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Rounds of finding and stopping: a process may start another while it is being stopped.
const ROUNDS: usize = 3;

/// A token no other launch of any goldgate process uses.
pub(crate) fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A live process carrying the token, held by a pidfd so a signal never reaches a process
/// that reused its pid.
struct Stray {
    pid: u32,
    name: String,
    fd: OwnedFd,
}

/// Stops every live process that carries `token` (SIGTERM, up to `grace`, SIGKILL; at once
/// when the stop is forced) and returns them as `pid 123 (sleep)`, in the order found.
pub(crate) fn stop_escaped(token: &str, grace: Duration, stop: &StopFlag) -> Vec<String> {
    let mut found = Vec::new();
    for _ in 0..ROUNDS {
        let strays = find(token);
        if strays.is_empty() {
            break;
        }
        found.extend(strays.iter().map(|s| format!("pid {} ({})", s.pid, s.name)));
        terminate(&strays, grace, stop);
    }
    found
}

/// SIGKILL to every process carrying `token`, without waiting (the error path of a launch).
pub(crate) fn kill_all(token: &str) {
    for s in find(token) {
        let _ = pidfd_send_signal(&s.fd, Signal::KILL);
    }
}

/// Live processes whose environment holds `TOKEN_VAR=token`, goldgate itself excluded.
fn find(token: &str) -> Vec<Stray> {
    let needle = format!("{TOKEN_VAR}={token}\0");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || !carries(pid, needle.as_bytes()) {
            continue;
        }
        // The pidfd pins the process; the second look makes sure it is still the one found.
        let pidfd = i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok());
        let Some(fd) = pidfd else {
            continue;
        };
        if let Some(name) = live_name(pid).filter(|_| carries(pid, needle.as_bytes())) {
            found.push(Stray { pid, name, fd });
        }
    }
    found
}

/// Whether the environment `pid` started with holds `needle` (`NAME=value\0`) as a whole
/// entry. Unreadable environments (other users' processes, zombies) hold nothing.
fn carries(pid: u32, needle: &[u8]) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    memchr::memmem::find_iter(&environ, needle).any(|at| at == 0 || environ[at - 1] == 0)
}

/// The command name of `pid` when it runs (not a zombie); `None` when it is gone.
fn live_name(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let state = stat.get(close + 1..)?.split_ascii_whitespace().next()?;
    if matches!(state, "Z" | "X") {
        return None;
    }
    Some(stat.get(open + 1..close)?.to_owned())
}

/// SIGTERM, then SIGKILL after `grace` to those still running; waits until they are gone (or
/// [`KILL_WAIT`] after the SIGKILL), reaping those that were re-parented to goldgate.
fn terminate(strays: &[Stray], grace: Duration, stop: &StopFlag) {
    let signal_all = |sig| {
        for s in strays {
            let _ = pidfd_send_signal(&s.fd, sig);
        }
    };
    signal_all(Signal::TERM);
    let start = Instant::now();
    let mut killed_at: Option<Instant> = None;
    loop {
        if strays.iter().all(gone) {
            return;
        }
        match killed_at {
            None if start.elapsed() >= grace || stop.is_forced() => {
                signal_all(Signal::KILL);
                killed_at = Some(Instant::now());
            }
            Some(at) if at.elapsed() >= KILL_WAIT => return,
            _ => {}
        }
        std::thread::sleep(POLL);
    }
}

/// Whether a stray has exited; reaps it when goldgate (their subreaper) is its parent.
fn gone(s: &Stray) -> bool {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let _ = waitid(
        WaitId::PidFd(std::os::fd::AsFd::as_fd(&s.fd)),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
    );
    live_name(s.pid).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_setsid_daemon_carrying_the_token_is_found_stopped_and_named() {
        let token = new_token();
        // The daemon leaves the shell's session and group at once; the shell exits.
        let status = Command::new("sh")
            .args(["-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 &"])
            .env(TOKEN_VAR, &token)
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        // The shell's child execs `setsid`, which execs `sleep`: while the kernel sets up each
        // new image its environment reads empty, and `find` cannot see it for that instant.
        // A loaded machine can stretch the instant, so the daemon counts as there once it runs
        // `sleep` with its environment in place (what goldgate meets after a job: a daemon
        // that is settled).
        let deadline = Instant::now() + Duration::from_secs(10);
        while !find(&token).iter().any(|s| s.name == "sleep") {
            assert!(Instant::now() < deadline, "the daemon never appeared");
            std::thread::sleep(POLL);
        }
        let stopped = stop_escaped(&token, Duration::from_secs(5), &StopFlag::new());
        assert_eq!(stopped.len(), 1, "{stopped:?}");
        assert!(
            stopped[0].starts_with("pid ") && stopped[0].ends_with(" (sleep)"),
            "{stopped:?}"
        );
        assert!(find(&token).is_empty(), "nothing with the token is left");
    }

    #[test]
    fn only_the_whole_variable_matches() {
        assert!(!carries(std::process::id(), b"GOLDGATE_JOB_TOKEN=never\0"));
        let tokens: std::collections::HashSet<_> = (0..100).map(|_| new_token()).collect();
        assert_eq!(tokens.len(), 100);
    }
}
