//! Stage "launch": turns how a job ended plus the failure markers the log parser found into
//! the job's one outcome type, the schema's `Outcome` (whether `--retries` may run it again is the scheduler's rule, `run::may_retry`).

use std::time::Duration;

use goldgate_schema::Outcome;

use super::process::ProcessOutcome;

/// Failure markers seen in the job's log (filled from the log parser's summary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailureSigns {
    /// `CUDA out of memory`, `torch.OutOfMemoryError`, NCCL `'out of memory'`.
    pub oom: bool,
    /// `Some NCCL operations have failed or timed out.` and the like.
    pub nccl_timeout: bool,
    /// `found NaN in ...`.
    pub nan: bool,
    /// At least one marker that Megatron's CI would retry.
    pub flaky: bool,
}

impl FailureSigns {
    /// No failure marker seen: what a clean log (or no log at all) gives.
    pub const NONE: FailureSigns = FailureSigns {
        oom: false,
        nccl_timeout: false,
        nan: false,
        flaky: false,
    };
}

/// How one process tree ended, as the record keeps it: the one mapping from what `launch`
/// saw (a [`ProcessOutcome`] and the log's [`FailureSigns`]) into the schema's [`Outcome`],
/// used by the local executor, the Slurm executor (from the exit code Slurm reports) and the
/// `BEFORE_SCRIPT`/`AFTER_SCRIPT` runner alike.
///
/// An interruption wins (the user stopped it; nothing else is known). A clean exit 0 passes
/// even if a marker was printed (the job recovered). Otherwise the most specific marker
/// names the failure — an out-of-memory beats an NCCL timeout (the OOM usually causes it),
/// which beats NaN — and without markers the exit code, signal or timeout does. `timeout`
/// is the limit the tree ran under (a timed-out outcome records it).
pub fn classify(
    outcome: ProcessOutcome,
    signs: FailureSigns,
    timeout: Option<Duration>,
) -> Outcome {
    match outcome {
        ProcessOutcome::Interrupted => return Outcome::Interrupted,
        ProcessOutcome::Exited(0) => return Outcome::Passed,
        _ => {}
    }
    if signs.oom {
        Outcome::OutOfMemory
    } else if signs.nccl_timeout {
        Outcome::NcclTimeout
    } else if signs.nan {
        Outcome::Nan
    } else {
        match outcome {
            ProcessOutcome::Exited(exit_code) => Outcome::Failed { exit_code },
            ProcessOutcome::Signaled(signal) => Outcome::Killed { signal },
            ProcessOutcome::TimedOut => Outcome::TimedOut {
                after_seconds: timeout.map_or(0.0, |t| t.as_secs_f64()),
            },
            ProcessOutcome::Interrupted => Outcome::Interrupted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: FailureSigns = FailureSigns::NONE;

    #[test]
    fn classification_table() {
        let oom = FailureSigns { oom: true, ..NONE };
        let nccl = FailureSigns {
            nccl_timeout: true,
            ..NONE
        };
        let nan = FailureSigns { nan: true, ..NONE };
        let all = FailureSigns {
            oom: true,
            nccl_timeout: true,
            nan: true,
            flaky: true,
        };
        let cases = [
            (ProcessOutcome::Exited(0), NONE, Outcome::Passed),
            (ProcessOutcome::Exited(0), all, Outcome::Passed),
            (
                ProcessOutcome::Exited(1),
                NONE,
                Outcome::Failed { exit_code: 1 },
            ),
            (
                ProcessOutcome::Signaled(11),
                NONE,
                Outcome::Killed { signal: 11 },
            ),
            (
                ProcessOutcome::TimedOut,
                NONE,
                Outcome::TimedOut {
                    after_seconds: 60.0,
                },
            ),
            (ProcessOutcome::TimedOut, nccl, Outcome::NcclTimeout),
            (ProcessOutcome::Exited(1), oom, Outcome::OutOfMemory),
            (ProcessOutcome::Exited(1), nan, Outcome::Nan),
            (ProcessOutcome::Exited(1), all, Outcome::OutOfMemory),
            (
                ProcessOutcome::Signaled(6),
                FailureSigns {
                    nccl_timeout: true,
                    nan: true,
                    ..NONE
                },
                Outcome::NcclTimeout,
            ),
            (ProcessOutcome::Interrupted, all, Outcome::Interrupted),
        ];
        for (outcome, signs, want) in cases {
            assert_eq!(
                classify(outcome, signs, Some(Duration::from_secs(60))),
                want,
                "{outcome:?} {signs:?}"
            );
        }
    }
}
