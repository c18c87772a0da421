//! Stage "launch": settling the node before a job (`goldgate run --settle`), so that one job's
//! dirty pages are not written back while the next job saves its checkpoints.
//!
//! `sync` flushes every dirty page to disk (`sync(2)`: anyone may). `drop-caches` also empties
//! the page cache, dentries and inodes (writes `3` to `/proc/sys/vm/drop_caches`), so every job
//! starts from a cold cache; that needs root and a writable `/proc/sys`, which containers often
//! refuse. [`check`] asks before the first job, so a run that cannot settle stops at once with
//! a clear message instead of running unsettled jobs.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The kernel's switch for dropping caches.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// What to do before each job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Settle {
    /// Nothing (the default).
    #[default]
    None,
    /// `sync(2)`.
    Sync,
    /// `sync(2)`, then drop the page cache, dentries and inodes.
    DropCaches,
}

impl Settle {
    /// Parses `none`, `sync` or `drop-caches` (the `--settle` values).
    pub fn parse(text: &str) -> Result<Settle, String> {
        match text {
            "none" => Ok(Settle::None),
            "sync" => Ok(Settle::Sync),
            "drop-caches" => Ok(Settle::DropCaches),
            other => Err(format!(
                "unknown settle mode `{other}` (use none, sync or drop-caches)"
            )),
        }
    }

    /// The name `--settle` takes and `results.json` records.
    pub fn label(self) -> &'static str {
        match self {
            Settle::None => "none",
            Settle::Sync => "sync",
            Settle::DropCaches => "drop-caches",
        }
    }
}

/// Settling was refused or failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SettleError {
    /// The page cache cannot be dropped here.
    #[error("--settle drop-caches: cannot write {}", path.display())]
    #[diagnostic(help(
        "dropping caches needs root and a writable /proc/sys; use --settle sync, which anyone may"
    ))]
    NotPermitted {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Whether `mode` can be done on this machine: opens `drop_caches` for writing (and writes
/// nothing) when it is asked for.
pub fn check(mode: Settle) -> Result<(), SettleError> {
    match mode {
        Settle::None | Settle::Sync => Ok(()),
        Settle::DropCaches => open(DROP_CACHES).map(drop),
    }
}

/// Settles the node; returns how long it took.
pub fn settle(mode: Settle) -> Result<Duration, SettleError> {
    let start = Instant::now();
    if mode == Settle::None {
        return Ok(Duration::ZERO);
    }
    rustix::fs::sync();
    if mode == Settle::DropCaches {
        drop_caches(DROP_CACHES)?;
    }
    Ok(start.elapsed())
}

/// Writes `3` to the kernel's switch at `path`.
fn drop_caches(path: &str) -> Result<(), SettleError> {
    open(path)?
        .write_all(b"3\n")
        .map_err(|source| SettleError::NotPermitted {
            path: PathBuf::from(path),
            source,
        })
}

fn open(path: &str) -> Result<std::fs::File, SettleError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|source| SettleError::NotPermitted {
            path: PathBuf::from(path),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_round_trip() {
        for mode in [Settle::None, Settle::Sync, Settle::DropCaches] {
            assert_eq!(Settle::parse(mode.label()), Ok(mode));
        }
        assert!(
            Settle::parse("drop")
                .unwrap_err()
                .contains("none, sync or drop-caches")
        );
    }

    #[test]
    fn sync_is_always_permitted_and_none_does_nothing() {
        check(Settle::Sync).unwrap();
        assert_eq!(settle(Settle::None).unwrap(), Duration::ZERO);
        settle(Settle::Sync).unwrap();
    }

    /// A switch that cannot be written is refused with the file named and a hint (the real
    /// one is not written here: dropping the caches of a shared build machine slows everyone).
    #[test]
    fn a_switch_that_cannot_be_written_is_refused_with_a_hint() {
        let e = drop_caches("/nonexistent/vm/drop_caches").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/vm/drop_caches"), "{e}");
        let help = miette::Diagnostic::help(&e)
            .map(|h| h.to_string())
            .unwrap_or_default();
        assert!(help.contains("--settle sync"), "{help}");
        let dir = tempfile::tempdir().unwrap();
        let switch = dir.path().join("drop_caches");
        std::fs::write(&switch, "").unwrap();
        drop_caches(switch.to_str().unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&switch).unwrap(), "3\n");
    }
}
