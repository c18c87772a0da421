//! Stage "run", Slurm executor: reading what Slurm says about a job — `squeue` lines and
//! `scontrol show job` — and mapping its end state to goldgate's [`Outcome`] (pure functions).

use std::collections::BTreeMap;

use crate::launch::{FailureSigns, ProcessOutcome, classify};
use goldgate_schema::Outcome;

/// One job as `squeue` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueueEntry {
    /// `PENDING`, `RUNNING`, `COMPLETED`, `NODE_FAIL`, ...
    pub state: String,
    /// Why it waits or ended (`Priority`, `NonZeroExitCode`, ...).
    pub reason: String,
    /// Its nodes (`n[1-2]`), empty while pending.
    pub nodes: String,
}

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for nodes (or requeued, held, being configured).
    Pending,
    /// Running, or ending (`COMPLETING`): still in the queue.
    Running,
    /// Left the queue in this end state.
    Ended,
}

/// Parses `squeue --format=%i|%T|%r|%N` lines.
pub(crate) fn parse_squeue(text: &str) -> BTreeMap<u64, QueueEntry> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.trim().splitn(4, '|');
            let id = fields.next()?.parse().ok()?;
            let state = fields.next()?.to_owned();
            let reason = fields.next().unwrap_or_default().to_owned();
            let nodes = fields.next().unwrap_or_default().to_owned();
            Some((
                id,
                QueueEntry {
                    state,
                    reason,
                    nodes,
                },
            ))
        })
        .collect()
}

/// The phase of a Slurm job state.
pub(crate) fn phase(state: &str) -> Phase {
    match state {
        "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD"
        | "CONFIGURING" => Phase::Pending,
        "COMPLETED" | "FAILED" | "TIMEOUT" | "CANCELLED" | "NODE_FAIL" | "PREEMPTED"
        | "BOOT_FAIL" | "OUT_OF_MEMORY" | "DEADLINE" | "REVOKED" | "SPECIAL_EXIT" => Phase::Ended,
        // RUNNING, COMPLETING, SIGNALING, STAGE_OUT, RESIZING, SUSPENDED, STOPPED, and states
        // newer Slurm versions add: still the job's, still in the queue.
        _ => Phase::Running,
    }
}

/// A `Key=value` field of `scontrol show job --oneliner` output.
pub(crate) fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

/// `ExitCode=3:0` → 3; `ExitCode=0:9` (killed by signal 9) → 128 + 9.
pub(crate) fn exit_code(text: &str) -> Option<i32> {
    let (code, signal) = field(text, "ExitCode")?.split_once(':')?;
    let (code, signal): (i32, i32) = (code.parse().ok()?, signal.parse().ok()?);
    Some(if code == 0 && signal > 0 {
        128 + signal
    } else {
        code
    })
}

/// Why goldgate itself ended a job, if it did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cancelled {
    /// goldgate did not cancel it.
    No,
    /// Ctrl-C / SIGTERM to goldgate.
    Interrupt,
    /// Its running time passed goldgate's limit.
    Timeout,
    /// It never left the queue: past the pending limit, or for a reason that never clears.
    NotStarted {
        reason: String,
        pending_seconds: f64,
    },
    /// Slurm's controller did not answer for longer than the outage limit.
    Unreachable,
}

/// Slurm's pending reasons that no waiting clears (the request itself, or the account, must
/// change; see Slurm's "Job Reason Codes"), each with what it means. `ReqNodeNotAvail` clears
/// when its nodes come back, so it is not among them.
const NEVER_CLEARS: [(&str, &str); 8] = [
    (
        "PartitionConfig",
        "the job asks for more than its partition has (nodes, CPUs, memory, GRES)",
    ),
    (
        "BadConstraints",
        "the job's constraints can never be satisfied",
    ),
    (
        "DependencyNeverSatisfied",
        "the job's dependency can never be satisfied",
    ),
    ("InvalidAccount", "the job's account is invalid"),
    ("InvalidQOS", "the job's QOS is invalid"),
    (
        "AccountNotAllowed",
        "the job's account may not use the partition",
    ),
    ("QOSNotAllowed", "the job's QOS may not use the partition"),
    (
        "PartitionTimeLimit",
        "the job's time limit exceeds its partition's",
    ),
];

/// What a pending reason means when no waiting clears it; `None` for reasons that may clear
/// (`Priority`, `Resources`, `PartitionDown`, `ReqNodeNotAvail`, ...). `squeue`'s reason may
/// carry detail after a comma (`ReqNodeNotAvail, UnavailableNodes:n3`).
pub(crate) fn never_clears(reason: &str) -> Option<&'static str> {
    let code = reason.split(',').next().unwrap_or(reason).trim();
    NEVER_CLEARS
        .iter()
        .find(|(name, _)| *name == code)
        .map(|(_, meaning)| *meaning)
}

/// The infrastructure failure's state when Slurm's controller stopped answering.
pub(crate) const UNREACHABLE: &str = "controller unreachable";

/// How a job that left the queue in `state` ended, for goldgate.
///
/// COMPLETED and FAILED are judged by the exit code and the log (as local jobs are: an
/// out-of-memory marker names the failure); TIMEOUT is a timeout; OUT_OF_MEMORY the host's;
/// NODE_FAIL, PREEMPTED, BOOT_FAIL (and states of federations and reservations) are failures
/// of the cluster, retried under `--retries`; CANCELLED by someone else is an interruption.
pub(crate) fn outcome(
    state: &str,
    exit: Option<i32>,
    cancelled: Cancelled,
    signs: FailureSigns,
    limit_seconds: f64,
) -> Outcome {
    match cancelled {
        Cancelled::Interrupt => return Outcome::Interrupted,
        Cancelled::Timeout => {
            return Outcome::TimedOut {
                after_seconds: limit_seconds,
            };
        }
        Cancelled::NotStarted {
            reason,
            pending_seconds,
        } => {
            return Outcome::NotStarted {
                reason,
                pending_seconds,
            };
        }
        Cancelled::Unreachable => {
            return Outcome::Infrastructure {
                state: UNREACHABLE.to_owned(),
            };
        }
        Cancelled::No => {}
    }
    match state {
        "COMPLETED" => classify(ProcessOutcome::Exited(exit.unwrap_or(0)), signs, None),
        "FAILED" => classify(ProcessOutcome::Exited(exit.unwrap_or(1)), signs, None),
        "TIMEOUT" | "DEADLINE" => Outcome::TimedOut {
            after_seconds: limit_seconds,
        },
        "OUT_OF_MEMORY" => Outcome::HostOutOfMemory,
        "CANCELLED" => Outcome::Interrupted,
        other => Outcome::Infrastructure {
            state: other.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: FailureSigns = FailureSigns::NONE;

    #[test]
    fn squeue_lines() {
        let jobs = parse_squeue("12|RUNNING|None|n[1-2]\n13|PENDING|Priority|\nnoise\n");
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[&12].nodes, "n[1-2]");
        assert_eq!(jobs[&13].reason, "Priority");
        assert_eq!(phase(&jobs[&13].state), Phase::Pending);
        assert_eq!(phase("COMPLETING"), Phase::Running);
        assert_eq!(phase("NODE_FAIL"), Phase::Ended);
    }

    #[test]
    fn reasons_that_never_clear() {
        assert!(never_clears("PartitionConfig").is_some());
        assert!(never_clears("BadConstraints").is_some());
        for may_clear in [
            "Priority",
            "Resources",
            "PartitionDown",
            "ReqNodeNotAvail, UnavailableNodes:n2",
            "None",
            "",
        ] {
            assert_eq!(never_clears(may_clear), None, "{may_clear}");
        }
    }

    #[test]
    fn exit_codes_from_scontrol() {
        let text = "JobId=5 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:01";
        assert_eq!(field(text, "JobState"), Some("FAILED"));
        assert_eq!(exit_code(text), Some(3));
        assert_eq!(exit_code("ExitCode=0:9"), Some(137));
        assert_eq!(exit_code("JobState=RUNNING"), None);
    }

    #[test]
    fn the_state_mapping_table() {
        let oom = FailureSigns { oom: true, ..NONE };
        let o = |state, exit, signs| outcome(state, exit, Cancelled::No, signs, 60.0);
        assert_eq!(o("COMPLETED", Some(0), NONE), Outcome::Passed);
        assert_eq!(o("FAILED", Some(3), NONE), Outcome::Failed { exit_code: 3 });
        assert_eq!(o("FAILED", Some(1), oom), Outcome::OutOfMemory);
        assert_eq!(
            o("TIMEOUT", None, NONE),
            Outcome::TimedOut {
                after_seconds: 60.0
            }
        );
        assert_eq!(o("OUT_OF_MEMORY", None, NONE), Outcome::HostOutOfMemory);
        for state in ["NODE_FAIL", "PREEMPTED", "BOOT_FAIL"] {
            assert_eq!(
                o(state, None, NONE),
                Outcome::Infrastructure {
                    state: state.to_owned()
                }
            );
        }
        assert_eq!(o("CANCELLED", None, NONE), Outcome::Interrupted);
        let parked = Cancelled::NotStarted {
            reason: "PartitionDown".into(),
            pending_seconds: 3.0,
        };
        assert_eq!(
            outcome("CANCELLED", None, parked, NONE, 5.0),
            Outcome::NotStarted {
                reason: "PartitionDown".into(),
                pending_seconds: 3.0
            }
        );
        assert_eq!(
            outcome("UNKNOWN", None, Cancelled::Unreachable, NONE, 5.0),
            Outcome::Infrastructure {
                state: UNREACHABLE.to_owned()
            }
        );
        let ours = outcome("CANCELLED", None, Cancelled::Timeout, NONE, 5.0);
        assert_eq!(ours, Outcome::TimedOut { after_seconds: 5.0 });
        let ctrl_c = outcome("COMPLETED", Some(0), Cancelled::Interrupt, NONE, 5.0);
        assert_eq!(ctrl_c, Outcome::Interrupted);
    }
}
