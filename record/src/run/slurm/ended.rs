//! Stage "run", Slurm executor: how a job ended in Slurm's words — its end state, Slurm's
//! reason and exit code ([`EndState`]) — read from `squeue` while it lists the job, else from
//! `scontrol show job` while the controller keeps it (`MinJobAge`), else from `sacct` where
//! the cluster keeps accounting; and the failure line that says it
//! (`Slurm job 12 ended TIMEOUT: it ran past its time limit (reason: TimeLimit)`).

use super::command::{sacct_job, show_job};
use super::state::{exit_code, field};

/// How Slurm says a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EndState {
    /// `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `OUT_OF_MEMORY`, `NODE_FAIL`, ... or
    /// `UNKNOWN` when Slurm no longer knows the job and keeps no accounting.
    pub state: String,
    /// Slurm's reason (`TimeLimit`, `NodeDown`, `NonZeroExitCode`; `None` when it gives
    /// none), or who cancelled it (`sacct`'s `CANCELLED by 1000`: `by uid 1000`).
    pub reason: String,
    /// The job's exit code as Slurm keeps it (`ExitCode=3:0` → 3, `0:15` → 143).
    pub exit: Option<i32>,
}

impl EndState {
    /// `state` with no reason or exit code known (yet).
    pub(crate) fn of(state: &str) -> EndState {
        EndState {
            state: state.to_owned(),
            reason: String::new(),
            exit: None,
        }
    }

    /// From `scontrol show job --oneliner` output; `None` without a `JobState`.
    pub(crate) fn from_show_job(text: &str) -> Option<EndState> {
        Some(EndState {
            state: field(text, "JobState")?.to_owned(),
            reason: field(text, "Reason").unwrap_or_default().to_owned(),
            exit: exit_code(text),
        })
    }

    /// From `sacct --parsable2 --format=State,ExitCode` lines (`CANCELLED by 0|0:15`): the
    /// first line, the job's own (`--allocations`).
    pub(crate) fn from_sacct(text: &str) -> Option<EndState> {
        let line = text.lines().find(|l| !l.trim().is_empty())?;
        let (state, code) = line.trim().split_once('|')?;
        let (state, by) = match state.split_once(" by ") {
            Some((state, uid)) => (state, format!("by uid {}", uid.trim())),
            None => (state, String::new()),
        };
        Some(EndState {
            state: state.trim().to_owned(),
            reason: by,
            exit: exit_code(&format!("ExitCode={}", code.trim())),
        })
    }

    /// Slurm's reason when it gives one (not `None`).
    fn reason(&self) -> Option<&str> {
        Some(self.reason.as_str()).filter(|r| !r.is_empty() && *r != "None")
    }
}

/// The end state of job `id`, which `squeue` no longer lists: `scontrol show job` while the
/// controller keeps it, else `sacct` (a cluster without accounting says so: then `UNKNOWN`).
/// Only a controller that does not answer is an error.
pub(crate) fn read_end(id: u64) -> Result<EndState, String> {
    if let Some(end) = show_job(id)
        .map_err(|e| e.to_string())?
        .as_deref()
        .and_then(EndState::from_show_job)
    {
        return Ok(end);
    }
    let sacct = sacct_job(id).ok().flatten();
    Ok(sacct
        .as_deref()
        .and_then(EndState::from_sacct)
        .unwrap_or_else(|| EndState::of("UNKNOWN")))
}

/// End states in which Slurm, not the job's program, ended the job: their meaning explains
/// the failure better than the log's last error (`srun: error: n1: task 0: Exited with exit
/// code 143` is the signal Slurm sent). See Slurm's "JOB STATE CODES" (squeue(1)).
const SLURM_ENDED: [(&str, &str); 9] = [
    ("TIMEOUT", "it ran past its time limit (--time)"),
    ("DEADLINE", "it reached its deadline (--deadline)"),
    (
        "CANCELLED",
        "cancelled outside goldgate (scancel by a user or an administrator)",
    ),
    (
        "OUT_OF_MEMORY",
        "a node ran out of the memory Slurm gave the job (its cgroup limit)",
    ),
    (
        "NODE_FAIL",
        "a node of the job failed or stopped responding",
    ),
    ("PREEMPTED", "a job of higher priority took its nodes"),
    ("BOOT_FAIL", "a node failed to boot for it"),
    (
        "REVOKED",
        "a sibling of this federated job started elsewhere",
    ),
    (
        "UNKNOWN",
        "Slurm no longer knows the job and keeps no accounting (sacct) to ask",
    ),
];

/// What an end state in which Slurm ended the job means; `None` for `COMPLETED`, `FAILED`
/// and states goldgate does not know (the job's own exit explains those).
pub(crate) fn slurm_ended(state: &str) -> Option<&'static str> {
    SLURM_ENDED
        .iter()
        .find(|(name, _)| *name == state)
        .map(|(_, meaning)| *meaning)
}

/// What Slurm said of a job that did not pass: `Slurm job 12 ended FAILED (exit 1)`; for a
/// state in which Slurm ended the job, what it means and Slurm's reason (`Slurm job 12 ended
/// NODE_FAIL on n2: a node of the job failed or stopped responding (reason: NodeDown)`).
pub(crate) fn slurm_line(id: u64, end: &EndState, exit: Option<i32>, nodes: &str) -> String {
    let state = &end.state;
    let on = match state.as_str() {
        "NODE_FAIL" if !nodes.is_empty() => format!(" on {nodes}"),
        _ => String::new(),
    };
    let reason = end.reason().map(|r| match r.starts_with("by ") {
        true => format!(" ({r})"),
        false => format!(" (reason: {r})"),
    });
    match (slurm_ended(state), exit) {
        (Some(meaning), _) => format!(
            "Slurm job {id} ended {state}{on}: {meaning}{}",
            reason.unwrap_or_default()
        ),
        (None, Some(code)) => format!("Slurm job {id} ended {state}{on} (exit {code})"),
        (None, None) => format!("Slurm job {id} ended {state}{on}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_states_from_scontrol_and_sacct() {
        let text = "JobId=5 JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15";
        let end = EndState::from_show_job(text).unwrap();
        assert_eq!(end.state, "TIMEOUT");
        assert_eq!(end.reason, "TimeLimit");
        assert_eq!(end.exit, Some(143));
        assert_eq!(EndState::from_show_job("JobId=5 Reason=None"), None);
        let end = EndState::from_sacct("CANCELLED by 1000|0:15\n").unwrap();
        assert_eq!(
            (end.state.as_str(), end.reason.as_str(), end.exit),
            ("CANCELLED", "by uid 1000", Some(143))
        );
        let end = EndState::from_sacct("OUT_OF_MEMORY|0:125\n").unwrap();
        assert_eq!(
            (end.state.as_str(), end.reason.as_str()),
            ("OUT_OF_MEMORY", "")
        );
        assert_eq!(EndState::from_sacct(""), None);
    }

    #[test]
    fn lines_say_slurms_end_state_its_meaning_and_reason() {
        let end = |state: &str, reason: &str| EndState {
            state: state.to_owned(),
            reason: reason.to_owned(),
            exit: Some(143),
        };
        let cases = [
            (
                end("TIMEOUT", "TimeLimit"),
                "Slurm job 12 ended TIMEOUT: it ran past its time limit (--time) (reason: TimeLimit)",
            ),
            (
                end("CANCELLED", "None"),
                "Slurm job 12 ended CANCELLED: cancelled outside goldgate (scancel by a user or an administrator)",
            ),
            (
                end("CANCELLED", "by uid 1000"),
                "Slurm job 12 ended CANCELLED: cancelled outside goldgate (scancel by a user or an administrator) (by uid 1000)",
            ),
            (
                end("OUT_OF_MEMORY", "OutOfMemory"),
                "Slurm job 12 ended OUT_OF_MEMORY: a node ran out of the memory Slurm gave the job (its cgroup limit) (reason: OutOfMemory)",
            ),
            (
                end("NODE_FAIL", "NodeDown"),
                "Slurm job 12 ended NODE_FAIL on n2: a node of the job failed or stopped responding (reason: NodeDown)",
            ),
            (
                end("FAILED", "NonZeroExitCode"),
                "Slurm job 12 ended FAILED (exit 3)",
            ),
        ];
        for (end, want) in cases {
            assert_eq!(slurm_line(12, &end, Some(3), "n2"), want);
        }
        let failed = EndState::of("FAILED");
        assert_eq!(
            slurm_line(12, &failed, None, ""),
            "Slurm job 12 ended FAILED"
        );
        assert_eq!(slurm_ended("COMPLETED"), None);
        assert_eq!(slurm_ended("FAILED"), None);
    }
}
