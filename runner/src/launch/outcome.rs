//! Stage "launch": turns how a job ended plus the failure markers the log parser found into
//! one status (whether `--retries` may run it again is the scheduler's rule, `run::may_retry`).

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

/// The status of one job run, as recorded in `results.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "status")]
pub enum JobStatus {
    Passed,
    Failed { code: i32 },
    Killed { signal: i32 },
    TimedOut,
    OutOfMemory,
    NcclTimeout,
    Nan,
    Interrupted,
}

impl JobStatus {
    /// True only for [`JobStatus::Passed`].
    pub fn passed(self) -> bool {
        self == JobStatus::Passed
    }
}

/// One status for a finished job.
///
/// An interruption wins (the user stopped it; nothing else is known). A clean exit 0 passes
/// even if a marker was printed (the job recovered). Otherwise the most specific marker
/// names the failure — an out-of-memory beats an NCCL timeout (the OOM usually causes it),
/// which beats NaN — and without markers the exit code, signal or timeout does.
pub fn classify(outcome: ProcessOutcome, signs: FailureSigns) -> JobStatus {
    match outcome {
        ProcessOutcome::Interrupted => return JobStatus::Interrupted,
        ProcessOutcome::Exited(0) => return JobStatus::Passed,
        _ => {}
    }
    if signs.oom {
        JobStatus::OutOfMemory
    } else if signs.nccl_timeout {
        JobStatus::NcclTimeout
    } else if signs.nan {
        JobStatus::Nan
    } else {
        match outcome {
            ProcessOutcome::Exited(code) => JobStatus::Failed { code },
            ProcessOutcome::Signaled(signal) => JobStatus::Killed { signal },
            ProcessOutcome::TimedOut => JobStatus::TimedOut,
            ProcessOutcome::Interrupted => JobStatus::Interrupted,
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
            (ProcessOutcome::Exited(0), NONE, JobStatus::Passed),
            (ProcessOutcome::Exited(0), all, JobStatus::Passed),
            (
                ProcessOutcome::Exited(1),
                NONE,
                JobStatus::Failed { code: 1 },
            ),
            (
                ProcessOutcome::Signaled(11),
                NONE,
                JobStatus::Killed { signal: 11 },
            ),
            (ProcessOutcome::TimedOut, NONE, JobStatus::TimedOut),
            (ProcessOutcome::TimedOut, nccl, JobStatus::NcclTimeout),
            (ProcessOutcome::Exited(1), oom, JobStatus::OutOfMemory),
            (ProcessOutcome::Exited(1), nan, JobStatus::Nan),
            (ProcessOutcome::Exited(1), all, JobStatus::OutOfMemory),
            (
                ProcessOutcome::Signaled(6),
                FailureSigns {
                    nccl_timeout: true,
                    nan: true,
                    ..NONE
                },
                JobStatus::NcclTimeout,
            ),
            (ProcessOutcome::Interrupted, all, JobStatus::Interrupted),
        ];
        for (outcome, signs, want) in cases {
            assert_eq!(classify(outcome, signs), want, "{outcome:?} {signs:?}");
        }
    }

    #[test]
    fn status_serializes_with_a_tag() {
        let json = serde_json::to_string(&JobStatus::Failed { code: 3 }).unwrap();
        assert_eq!(json, r#"{"status":"failed","code":3}"#);
        assert_eq!(
            serde_json::to_string(&JobStatus::TimedOut).unwrap(),
            r#"{"status":"timed-out"}"#
        );
    }
}
