//! I/O: the one place that writes to stdout and stderr. Every line is written whole under the
//! stream lock and flushed at once, because the reader is a pipe and the checkpoint worker prints
//! from another thread.

use std::io::Write;

/// A log line on stdout. A closed pipe is not worth dying for: the run keeps its exit status.
pub(crate) fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}

/// A diagnostic line on stderr (warnings, tracebacks), as Python writes them.
pub(crate) fn err(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}").and_then(|()| stderr.flush());
}
