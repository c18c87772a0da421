//! Stage "observe", log parser: [`LogTail`] keeps what explains a failed job — the exception
//! line of the last Python traceback, the last line that looks like an error, and the last
//! [`TAIL_LINES`] lines of the log — in bounded memory, whatever the log's length.

use std::collections::VecDeque;

/// Lines of the log's end kept.
pub const TAIL_LINES: usize = 30;
/// Characters of one kept line.
const MAX_CHARS: usize = 400;

/// What the end of a log says about a failure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TailSummary {
    /// The exception line of the last Python traceback (`ModuleNotFoundError: No module named
    /// 'x'`), rank prefix removed.
    pub exception: Option<String>,
    /// The last line that looks like an error (`error`, `fatal`, `exception`, `killed`), for
    /// logs without a traceback.
    pub error_line: Option<String>,
    /// The last lines, oldest first.
    pub lines: Vec<String>,
}

impl TailSummary {
    /// The line that best explains a failure: the traceback's exception, else the last
    /// error-looking line.
    pub fn failure_line(&self) -> Option<String> {
        self.exception.clone().or_else(|| self.error_line.clone())
    }
}

/// Follows a log line by line (lines already split and cleaned).
#[derive(Debug, Default)]
pub struct LogTail {
    lines: VecDeque<String>,
    /// Inside a traceback: its frames have been seen, the exception line comes next.
    in_traceback: bool,
    summary: TailSummary,
}

impl LogTail {
    /// One line of the log.
    pub fn see(&mut self, raw: &[u8]) {
        let text = cut(&String::from_utf8_lossy(raw));
        let body = without_rank(&text).trim_end();
        if body.starts_with("Traceback (most recent call last)") {
            self.in_traceback = true;
        } else if self.in_traceback && !body.is_empty() && !body.starts_with([' ', '\t']) {
            // The first unindented line after the frames is the exception (`raise` chains
            // print "During handling ..." and another traceback, which restarts this).
            if !body.starts_with("During handling")
                && !body.starts_with("The above exception")
                && (self.summary.exception.is_none() || !is_consequence(body))
            {
                self.summary.exception = Some(body.to_owned());
            }
            self.in_traceback = false;
        }
        if looks_like_error(body) && (self.summary.error_line.is_none() || !is_consequence(body)) {
            self.summary.error_line = Some(body.to_owned());
        }
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(text);
    }

    pub fn finish(mut self) -> TailSummary {
        self.summary.lines = self.lines.into();
        self.summary
    }
}

/// `line` cut to [`MAX_CHARS`] characters.
fn cut(line: &str) -> String {
    match line.char_indices().nth(MAX_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// The line without torchrun's `[default0]:` / `[rank0]:` prefix.
fn without_rank(line: &str) -> &str {
    let Some(rest) = line.strip_prefix('[') else {
        return line;
    };
    match rest.split_once("]:") {
        Some((tag, body)) if tag.starts_with("default") || tag.starts_with("rank") => body,
        _ => line,
    }
}

/// An exception or error message, as Python, NCCL, CUDA and shells print them.
/// A line that only says a process was stopped because something else failed first: a
/// multi-node job's other nodes, signalled when one node failed (torchrun's
/// `SignalException: Process 7 got signal: 15`, srun's `task 0: Terminated`, slurmstepd's
/// `*** STEP 12.0 ON n1 CANCELLED ...`). It never replaces an earlier line that names a
/// real failure: the first node's real error stays the failure line.
fn is_consequence(body: &str) -> bool {
    [
        "SignalException",
        "got signal: ",
        "KeyboardInterrupt",
        ": Terminated",
        "Force Terminated",
        " CANCELLED AT ",
        "Killed by signal",
    ]
    .iter()
    .any(|w| body.contains(w))
        || body == "Terminated"
}

fn looks_like_error(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    [
        "error",
        "exception",
        "fatal",
        "killed",
        "segmentation fault",
        "core dumped",
    ]
    .iter()
    .any(|w| lower.contains(w))
        && !lower.starts_with("warning")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(lines: &[&str]) -> TailSummary {
        let mut t = LogTail::default();
        for l in lines {
            t.see(l.as_bytes());
        }
        t.finish()
    }

    #[test]
    fn the_other_nodes_being_stopped_never_hides_the_first_nodes_real_failure() {
        // A two-node job: node 1 crashes, then srun stops node 0's launcher.
        let t = tail(&[
            "Traceback (most recent call last):",
            "  File \"pretrain_gpt.py\", line 9, in <module>",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "srun: error: n2: task 1: Exited with exit code 1",
            "Traceback (most recent call last):",
            "  File \"torchrun\", line 8, in <module>",
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 41 got signal: 15",
            "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-12-01T16:00:00 ***",
            "srun: error: n1: task 0: Terminated",
        ]);
        assert_eq!(
            t.failure_line().as_deref(),
            Some("RuntimeError: CUDA error: an illegal memory access was encountered")
        );
        assert_eq!(
            t.error_line.as_deref(),
            Some("srun: error: n2: task 1: Exited with exit code 1")
        );
        // Alone, a stop is still the line that explains the end.
        let stopped = tail(&["srun: error: n1: task 0: Terminated"]);
        assert_eq!(
            stopped.failure_line().as_deref(),
            Some("srun: error: n1: task 0: Terminated")
        );
    }

    #[test]
    fn keeps_the_last_tracebacks_exception_and_the_last_lines() {
        let s = tail(&[
            "[default0]:Traceback (most recent call last):",
            "[default0]:  File \"/w/train_gpt.py\", line 3, in <module>",
            "[default0]:    import megatron.core",
            "[default0]:ModuleNotFoundError: No module named 'megatron'",
            "E1201 10:00:00 torch/distributed/elastic: failed (exitcode: 1) local_rank: 0",
        ]);
        assert_eq!(
            s.exception.as_deref(),
            Some("ModuleNotFoundError: No module named 'megatron'")
        );
        assert_eq!(s.failure_line(), s.exception);
        assert_eq!(s.lines.len(), 5);
        let many: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let s = tail(&refs);
        assert_eq!(s.lines.len(), TAIL_LINES);
        assert_eq!(s.lines[0], "line 70");
        assert_eq!(s.failure_line(), None);
    }

    #[test]
    fn without_a_traceback_the_last_error_looking_line_explains() {
        let s = tail(&[
            "WARNING: something harmless with error in it",
            "bash: line 1: 4242 Killed python train.py",
            "done",
        ]);
        assert_eq!(
            s.failure_line().as_deref(),
            Some("bash: line 1: 4242 Killed python train.py")
        );
        assert_eq!(
            tail(&[&"x".repeat(1000)]).lines[0].chars().count(),
            MAX_CHARS + 1
        );
    }
}
