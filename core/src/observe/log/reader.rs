//! Stage "observe", log parser: [`LogReader`] splits any `io::Read` (a file, a child's pipe)
//! into lines with a bounded buffer. Lines are bytes (no UTF-8 check); a line longer than the
//! cap is cut to the cap and the rest skipped, so a megabyte-long line never grows memory; a
//! last line without `\n` is still returned.

use std::io::{self, Read};

/// Bytes of one line that are kept; the rest of a longer line is skipped.
pub const MAX_LINE: usize = 64 * 1024;
/// Read buffer size (several lines per `read` call).
const BUF: usize = 256 * 1024;

/// Reads lines from `R` with at most `BUF` + `MAX_LINE` bytes buffered.
pub struct LogReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Inside a cut line: drop bytes up to the next `\n`.
    skipping: bool,
    lines: u64,
    long_lines: u64,
}

impl<R: Read> LogReader<R> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> LogReader<R> {
        LogReader {
            inner,
            buf: vec![0; BUF + MAX_LINE],
            start: 0,
            end: 0,
            eof: false,
            skipping: false,
            lines: 0,
            long_lines: 0,
        }
    }

    /// Lines returned so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines that were longer than [`MAX_LINE`] and were cut.
    pub fn long_lines(&self) -> u64 {
        self.long_lines
    }

    /// The next line without its `\n` (a `\r` before it is kept; the parser ignores it),
    /// or `None` at the end of input.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            let pending = &self.buf[self.start..self.end];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                let line_start = self.start;
                self.start += i + 1;
                if self.skipping {
                    self.skipping = false;
                    continue;
                }
                self.lines += 1;
                if i > MAX_LINE {
                    self.long_lines += 1;
                }
                return Ok(Some(&self.buf[line_start..line_start + i.min(MAX_LINE)]));
            }
            if self.skipping {
                self.start = self.end;
            } else if pending.len() >= MAX_LINE {
                let line_start = self.start;
                self.start += MAX_LINE;
                self.skipping = true;
                self.lines += 1;
                self.long_lines += 1;
                return Ok(Some(&self.buf[line_start..line_start + MAX_LINE]));
            }
            if self.eof {
                return Ok(self.last_line());
            }
            self.fill()?;
        }
    }

    /// What is left at end of input: a last line without `\n`, if any.
    fn last_line(&mut self) -> Option<&[u8]> {
        if self.skipping || self.start == self.end {
            return None;
        }
        let line_start = self.start;
        self.start = self.end;
        self.lines += 1;
        Some(&self.buf[line_start..self.end])
    }

    /// Moves the pending bytes to the front and reads more after them.
    fn fill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A reader that returns at most `step` bytes per call, to cross buffer boundaries.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn lines(data: &[u8], step: usize) -> (Vec<Vec<u8>>, u64) {
        let mut r = LogReader::new(Trickle { data, step });
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(l.to_vec());
        }
        (out, r.long_lines())
    }

    #[test]
    fn splits_lines_across_reads_and_keeps_a_truncated_last_line() {
        for step in [1, 3, 7, 1 << 20] {
            let (got, long) = lines(b"a\r\n\nbc\nlast", step);
            assert_eq!(
                got,
                vec![
                    b"a\r".to_vec(),
                    b"".to_vec(),
                    b"bc".to_vec(),
                    b"last".to_vec()
                ]
            );
            assert_eq!(long, 0);
        }
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(lines(b"", 10).0.is_empty());
    }

    #[test]
    fn long_lines_are_cut_at_the_cap_and_the_rest_skipped() {
        let mut data = vec![b'x'; 3 * 1024 * 1024];
        data.extend_from_slice(b"\nnext\n");
        data.extend(std::iter::repeat_n(b'z', MAX_LINE + 1));
        data.push(b'\n');
        data.extend(std::iter::repeat_n(b'y', MAX_LINE + 5));
        for step in [4096, 1 << 20] {
            let (got, long) = lines(&data, step);
            let lens: Vec<usize> = got.iter().map(Vec::len).collect();
            assert_eq!(lens, vec![MAX_LINE, 4, MAX_LINE, MAX_LINE]);
            assert_eq!(got[1], b"next");
            assert_eq!(long, 3);
        }
    }
}
