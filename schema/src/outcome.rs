//! How a job ended: the one outcome type of a job, as `results.json` (`outcome`, each
//! attempt's `outcome`) and `run.json` (each job's `outcome`) record it.

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a job ended. A job that did not pass is never compared as if it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Exit code 0 and no failure marker.
    Passed,
    /// Non-zero exit code.
    Failed { exit_code: i32 },
    /// Ended by a signal it did not ask for.
    Killed { signal: i32 },
    /// Ran past `--timeout`; stopped with SIGTERM, then SIGKILL.
    TimedOut { after_seconds: f64 },
    /// CUDA / NCCL out of memory.
    OutOfMemory,
    /// An NCCL or collective operation timed out.
    NcclTimeout,
    /// Training produced NaN.
    Nan,
    /// goldgate was interrupted (Ctrl-C / SIGTERM) while the job ran.
    Interrupted,
    /// The job could not be started (program not found, bad working directory, ...).
    LaunchError { message: String },
    /// The batch scheduler ended the job for exceeding its memory on a host (Slurm's
    /// `OUT_OF_MEMORY`: the job's cgroup limit, not a CUDA allocation).
    HostOutOfMemory,
    /// The cluster failed the job, not its program (Slurm's `NODE_FAIL`, `PREEMPTED`,
    /// `BOOT_FAIL`, or its controller unreachable for longer than `slurm.outage_limit`):
    /// retried under `--retries`.
    Infrastructure { state: String },
    /// The job never left the batch scheduler's queue: goldgate cancelled it, past the
    /// pending limit or at once when Slurm's `reason` can never clear (`PartitionConfig`,
    /// `BadConstraints`, ...). `pending_seconds`: its whole time in the queue, from
    /// submission until it left (the attempt's `queued_seconds`).
    NotStarted {
        reason: String,
        pending_seconds: f64,
    },
}

impl Outcome {
    /// Whether the job ran to a normal end.
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }

    /// Whether the program under test itself failed: it exited non-zero, was killed by a
    /// signal, ran out of GPU memory, hit an NCCL timeout or produced NaN. Only such a failure
    /// is what a case with `TEST_EVALUATION: xpass` expects. A launch error, a timeout, an
    /// interruption and the cluster's failures (host out of memory, node failure) are not:
    /// they say nothing about the program, so they are never "failed as expected".
    pub fn is_program_failure(&self) -> bool {
        match self {
            Outcome::Failed { .. }
            | Outcome::Killed { .. }
            | Outcome::OutOfMemory
            | Outcome::NcclTimeout
            | Outcome::Nan => true,
            Outcome::Passed
            | Outcome::TimedOut { .. }
            | Outcome::Interrupted
            | Outcome::LaunchError { .. }
            | Outcome::HostOutOfMemory
            | Outcome::Infrastructure { .. }
            | Outcome::NotStarted { .. } => false,
        }
    }

    /// A short human label: `passed`, `failed (exit 1)`, `out of memory`, ...
    pub fn label(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::Failed { exit_code } => format!("failed (exit {exit_code})"),
            Outcome::Killed { signal } => format!("killed (signal {signal})"),
            Outcome::TimedOut { after_seconds } => format!("timed out after {after_seconds:.0} s"),
            Outcome::OutOfMemory => "out of memory".into(),
            Outcome::NcclTimeout => "NCCL timeout".into(),
            Outcome::Nan => "NaN".into(),
            Outcome::Interrupted => "interrupted".into(),
            Outcome::LaunchError { message } => format!("launch error: {message}"),
            Outcome::HostOutOfMemory => "host out of memory".into(),
            Outcome::Infrastructure { state } => format!("infrastructure failure ({state})"),
            Outcome::NotStarted {
                reason,
                pending_seconds,
            } => format!("never started (pending {pending_seconds:.0} s: {reason})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_programs_own_failures_are_program_failures() {
        let yes = [
            Outcome::Failed { exit_code: 1 },
            Outcome::Killed { signal: 11 },
            Outcome::OutOfMemory,
            Outcome::NcclTimeout,
            Outcome::Nan,
        ];
        let no = [
            Outcome::Passed,
            Outcome::TimedOut { after_seconds: 5.0 },
            Outcome::Interrupted,
            Outcome::LaunchError {
                message: "program 'torchrun' not found".into(),
            },
            Outcome::HostOutOfMemory,
            Outcome::Infrastructure {
                state: "NODE_FAIL".into(),
            },
            Outcome::NotStarted {
                reason: "PartitionConfig".into(),
                pending_seconds: 3.0,
            },
        ];
        assert!(yes.iter().all(Outcome::is_program_failure));
        assert!(!no.iter().any(Outcome::is_program_failure));
    }
}
