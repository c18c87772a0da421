//! Stage "observe", log parser: [`LogTail`] keeps what explains a failed job — the exception
//! line of the last Python traceback, the last line that looks like an error, and the last
//! [`TAIL_LINES`] lines of the log — in bounded memory, whatever the log's length.

use std::sync::LazyLock;

use aho_corasick::packed;
use aho_corasick::{AhoCorasick, MatchKind};

/// Lines of the log's end kept.
pub const TAIL_LINES: usize = 30;
/// Characters of one kept line.
const MAX_CHARS: usize = 400;
/// Bytes of one kept line before it is cut to [`MAX_CHARS`] characters (4 per character at
/// most in UTF-8).
const MAX_BYTES: usize = MAX_CHARS * 4 + 4;

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

/// Follows a log line by line (lines already split and cleaned). Every line of a log passes
/// here, so it allocates nothing per line: the last lines live in a ring of reused buffers,
/// and only a line that names an error is turned into text.
#[derive(Debug, Default)]
pub struct LogTail {
    /// The last lines as bytes (cut to [`MAX_BYTES`]); `next` is where the next one goes.
    ring: Vec<Vec<u8>>,
    next: usize,
    /// Inside a traceback: its frames have been seen, the exception line comes next.
    in_traceback: bool,
    /// The line being looked at, in ASCII lower case (reused).
    lower: Vec<u8>,
    summary: TailSummary,
}

impl LogTail {
    /// One line of the log.
    pub fn see(&mut self, raw: &[u8]) {
        self.see_checked(raw, true);
    }

    /// [`LogTail::see`]; `errors` false when the caller knows the line holds none of
    /// [`ERROR_WORDS`] ([`super::stream`] searched its whole chunk at once).
    pub(super) fn see_checked(&mut self, raw: &[u8], errors: bool) {
        let body = trim_end(without_rank(raw));
        if body.starts_with(b"Traceback (most recent call last)") {
            self.in_traceback = true;
        } else if self.in_traceback && !body.is_empty() && !matches!(body[0], b' ' | b'\t') {
            // The first unindented line after the frames is the exception (`raise` chains
            // print "During handling ..." and another traceback, which restarts this).
            if !body.starts_with(b"During handling")
                && !body.starts_with(b"The above exception")
                && (self.summary.exception.is_none() || !is_consequence(body))
            {
                self.summary.exception = Some(text(body));
            }
            self.in_traceback = false;
        }
        if errors
            && looks_like_error(body, &mut self.lower)
            && (self.summary.error_line.is_none() || !is_consequence(body))
        {
            self.summary.error_line = Some(text(body));
        }
        self.keep(raw);
    }

    /// Puts `raw` into the ring, in place of the oldest line once it is full.
    fn keep(&mut self, raw: &[u8]) {
        let raw = &raw[..raw.len().min(MAX_BYTES)];
        if self.ring.len() < TAIL_LINES {
            self.ring.push(raw.to_vec());
        } else {
            let slot = &mut self.ring[self.next];
            slot.clear();
            slot.extend_from_slice(raw);
        }
        self.next = (self.next + 1) % TAIL_LINES;
    }

    pub fn finish(mut self) -> TailSummary {
        let oldest = if self.ring.len() < TAIL_LINES {
            0
        } else {
            self.next
        };
        self.ring.rotate_left(oldest);
        self.summary.lines = self.ring.iter().map(|l| text(l)).collect();
        self.summary
    }
}

/// `line` as text, cut to [`MAX_CHARS`] characters.
fn text(line: &[u8]) -> String {
    let line = String::from_utf8_lossy(line);
    match line.char_indices().nth(MAX_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.into_owned(),
    }
}

fn trim_end(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &s[..end]
}

/// The line without torchrun's `[default0]:` / `[rank0]:` prefix.
fn without_rank(line: &[u8]) -> &[u8] {
    let Some(rest) = line.strip_prefix(b"[") else {
        return line;
    };
    let Some(at) = memchr::memchr(b']', rest).filter(|&i| rest.get(i + 1) == Some(&b':')) else {
        return line;
    };
    let tag = &rest[..at];
    match tag.starts_with(b"default") || tag.starts_with(b"rank") {
        true => &rest[at + 2..],
        false => line,
    }
}

/// A line that only says a process was stopped because something else failed first: a
/// multi-node job's other nodes, signalled when one node failed (torchrun's
/// `SignalException: Process 7 got signal: 15`, srun's `task 0: Terminated`, slurmstepd's
/// `*** STEP 12.0 ON n1 CANCELLED ...`). It never replaces an earlier line that names a
/// real failure: the first node's real error stays the failure line.
fn is_consequence(body: &[u8]) -> bool {
    let body = &*String::from_utf8_lossy(body);
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

/// The words of an error line, in lower case.
pub(super) const ERROR_WORDS: [&str; 6] = [
    "error",
    "exception",
    "fatal",
    "killed",
    "segmentation fault",
    "core dumped",
];

/// The search for [`ERROR_WORDS`] in a lower-cased line. Every line of a log is searched and
/// few match, so it is the packed (Teddy, SIMD) searcher where the CPU has it: a
/// case-insensitive automaton costs several times more per line.
enum ErrorWords {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

static SEARCH: LazyLock<ErrorWords> = LazyLock::new(|| {
    let packed = packed::Config::new().builder().extend(ERROR_WORDS).build();
    match packed {
        Some(searcher) => ErrorWords::Packed(searcher),
        None => ErrorWords::Automaton(
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(ERROR_WORDS)
                .unwrap_or_else(|e| unreachable!("the words are constant: {e}")),
        ),
    }
});

/// An exception or error message, as Python, NCCL, CUDA and shells print them: one of
/// [`ERROR_WORDS`] in any case, on a line that does not start with `warning`. `lower` is a
/// buffer for the lower-cased line.
fn looks_like_error(body: &[u8], lower: &mut Vec<u8>) -> bool {
    lower.clear();
    lower.extend_from_slice(body);
    lower.make_ascii_lowercase();
    let found = match &*SEARCH {
        ErrorWords::Packed(s) => s.find(lower.as_slice()).is_some(),
        ErrorWords::Automaton(a) => a.is_match(lower.as_slice()),
    };
    found && !lower.starts_with(b"warning")
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
