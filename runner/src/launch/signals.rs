//! Stage "launch": Ctrl-C and SIGTERM to goldgate. The first signal asks every running job
//! to stop (SIGTERM, grace period, SIGKILL) and marks it interrupted; the second kills at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::error::LaunchError;

/// Shared count of stop requests; cheap to clone and to poll.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicU32>);

impl StopFlag {
    /// A flag nobody has raised yet.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Records one stop request (what a SIGINT/SIGTERM does).
    pub fn request(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// True after the first request: stop jobs gracefully, start no new ones.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst) >= 1
    }

    /// True after the second request: SIGKILL at once, no grace period.
    pub fn is_forced(&self) -> bool {
        self.0.load(Ordering::SeqCst) >= 2
    }
}

/// Installs SIGINT and SIGTERM handlers that raise the returned flag; call it once, before
/// any job is spawned.
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
    use tokio::signal::unix::{SignalKind, signal};
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
        let streams =
            signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)));
        let (mut int, mut term) = match streams {
            Ok(s) => s,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            tokio::select! {
                got = int.recv() => if got.is_none() { return },
                got = term.recv() => if got.is_none() { return },
            }
            flag.request();
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
}
