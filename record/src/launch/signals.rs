//! Stage "launch": Ctrl-C and SIGTERM to goldgate — and every other signal whose default
//! action would also end goldgate and orphan the job (SIGHUP from a closed terminal or SSH
//! session, SIGQUIT, SIGUSR1/2, SIGALRM, SIGXCPU from `ulimit -t`, SIGVTALRM, SIGPROF, SIGIO,
//! SIGPWR, SIGSTKFLT, the real-time signals). The first signal asks every running job to stop (SIGTERM, grace period, SIGKILL) and
//! marks it interrupted; the second kills at once. SIGXFSZ (a write past `ulimit -f`) is
//! caught and dropped, so the write fails with `EFBIG` and is reported instead of killing
//! goldgate without results.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::error::LaunchError;

/// Shared count of stop requests; cheap to clone and to poll. Supervisors that sleep until
/// something happens register a wake-up ([`StopFlag::on_request`]) instead of polling it.
#[derive(Clone, Default)]
pub struct StopFlag(Arc<Shared>);

#[derive(Default)]
struct Shared {
    requests: AtomicU32,
    next_id: AtomicU64,
    wakers: Mutex<Vec<(u64, Waker)>>,
}

type Waker = Box<dyn Fn() + Send>;

impl std::fmt::Debug for StopFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopFlag")
            .field("requests", &self.0.requests.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl StopFlag {
    /// A flag nobody has raised yet.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Records one stop request (what a SIGINT/SIGTERM does) and wakes whoever registered.
    pub fn request(&self) {
        self.0.requests.fetch_add(1, Ordering::SeqCst);
        for (_, wake) in self.wakers().iter() {
            wake();
        }
    }

    /// True after the first request: stop jobs gracefully, start no new ones.
    pub fn is_requested(&self) -> bool {
        self.0.requests.load(Ordering::SeqCst) >= 1
    }

    /// True after the second request: SIGKILL at once, no grace period.
    pub fn is_forced(&self) -> bool {
        self.0.requests.load(Ordering::SeqCst) >= 2
    }

    /// Calls `wake` at every request from now until the guard is dropped. Register before
    /// the first look at [`StopFlag::is_requested`], and no request can go unnoticed.
    pub(crate) fn on_request(&self, wake: impl Fn() + Send + 'static) -> WakeOnStop {
        let id = self.0.next_id.fetch_add(1, Ordering::SeqCst);
        self.wakers().push((id, Box::new(wake)));
        WakeOnStop {
            flag: self.clone(),
            id,
        }
    }

    fn wakers(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Waker)>> {
        // A waker that panicked leaves the list itself intact.
        self.0
            .wakers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A registration made by [`StopFlag::on_request`]; dropping it unregisters.
pub(crate) struct WakeOnStop {
    flag: StopFlag,
    id: u64,
}

impl Drop for WakeOnStop {
    fn drop(&mut self) {
        self.flag.wakers().retain(|(id, _)| *id != self.id);
    }
}

/// Signals handled like Ctrl-C: every signal whose default action ends the process and that
/// another process (a shell, a batch system, the kernel enforcing `ulimit -t`) sends, so none
/// of them can end goldgate and orphan its jobs. Not among them: SIGXFSZ (dropped, see
/// [`install_signal_handlers`]), SIGPIPE (ignored by the Rust runtime: a closed pipe is a
/// write error), the faults a process raises on itself (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
/// SIGABRT, SIGTRAP, SIGSYS: a bug, not a request to stop) and SIGKILL/SIGSTOP, which no
/// process can catch. The real-time signals (`SIGRTMIN..=SIGRTMAX`) are added at run time.
const STOP_SIGNALS: [i32; 13] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGXCPU,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
];

/// [`STOP_SIGNALS`] and the real-time signals the C library leaves to programs.
pub(super) fn stop_signals() -> Vec<i32> {
    let mut all = STOP_SIGNALS.to_vec();
    all.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    all
}

/// Installs handlers for [`stop_signals`] that raise the returned flag, and one that drops
/// SIGXFSZ; call it once, before any job is spawned.
///
/// The handlers are registered (through tokio's signal driver on a small dedicated thread)
/// before this function returns, so a signal can never hit the default "terminate" action
/// while a job is running — which would orphan the job's process group.
pub fn install_signal_handlers() -> Result<StopFlag, LaunchError> {
    let flag = StopFlag::new();
    let thread_flag = flag.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
    std::thread::Builder::new()
        .name("goldgate-signals".to_owned())
        .spawn(move || watch_signals(thread_flag, ready_tx))
        .map_err(|source| LaunchError::Signals { source })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(flag),
        Ok(Err(source)) => Err(LaunchError::Signals { source }),
        Err(_) => Err(LaunchError::Signals {
            source: std::io::Error::other("signal thread ended early"),
        }),
    }
}

fn watch_signals(flag: StopFlag, ready: std::sync::mpsc::Sender<std::io::Result<()>>) {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    runtime.block_on(async move {
        let open = |raw| signal(SignalKind::from_raw(raw));
        let streams = (|| {
            let stops = stop_signals()
                .into_iter()
                .map(open)
                .collect::<Result<Vec<Signal>, _>>()?;
            Ok::<_, std::io::Error>((stops, open(libc::SIGXFSZ)?))
        })();
        let (stops, mut xfsz) = match streams {
            Ok(s) => s,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        // One task per stop signal; each delivery is one request.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        for mut stream in stops {
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let _ = ready.send(Ok(()));
        loop {
            // `Some(true)`: a stop signal; `Some(false)`: SIGXFSZ, dropped; `None`: shutting down.
            let got = tokio::select! {
                got = rx.recv() => got.map(|()| true),
                got = xfsz.recv() => got.map(|()| false),
            };
            match got {
                None => return,
                Some(true) => flag.request(),
                Some(false) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_counts_requests() {
        let flag = StopFlag::new();
        let other = flag.clone();
        assert!(!flag.is_requested());
        other.request();
        assert!(flag.is_requested() && !flag.is_forced());
        other.request();
        assert!(flag.is_forced());
    }

    #[test]
    fn requests_wake_registered_sleepers_until_they_unregister() {
        let flag = StopFlag::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let guard = flag.on_request(move || {
            let _ = tx.send(());
        });
        let other = flag.clone();
        std::thread::spawn(move || other.request()).join().unwrap();
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)), Ok(()));
        drop(guard);
        flag.request();
        assert!(rx.recv().is_err(), "the waker (and its sender) is dropped");
    }
}
