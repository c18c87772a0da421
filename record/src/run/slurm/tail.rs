//! Stage "run", Slurm executor: follows a log that another machine appends to on a shared
//! filesystem, handing each complete line to the caller as it arrives.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use crate::launch::MAX_LINE;

/// A log read from where the last read stopped.
pub(crate) struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// Reads what was appended since the last call and hands over every complete line
    /// (without its line ending; lines longer than `MAX_LINE` are cut there). A log that does
    /// not exist yet reads as empty.
    pub(crate) fn read(&mut self, on_line: &mut dyn FnMut(&[u8])) {
        let Ok(mut file) = File::open(&self.path) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut chunk = vec![0u8; 1 << 16];
        while let Ok(n) = file.read(&mut chunk) {
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            self.take(&chunk[..n], on_line);
        }
    }

    /// Hands over the last line even without a line ending (call once the writer is done).
    pub(crate) fn finish(&mut self, on_line: &mut dyn FnMut(&[u8])) {
        self.read(on_line);
        if !self.partial.is_empty() {
            on_line(&self.partial);
            self.partial.clear();
        }
    }

    fn take(&mut self, bytes: &[u8], on_line: &mut dyn FnMut(&[u8])) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            match piece.strip_suffix(b"\n") {
                Some(rest) => {
                    self.partial.extend_from_slice(rest);
                    let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
                    on_line(&line[..line.len().min(MAX_LINE)]);
                    self.partial.clear();
                }
                None => {
                    let room = (MAX_LINE + 1).saturating_sub(self.partial.len());
                    self.partial
                        .extend_from_slice(&piece[..piece.len().min(room)]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn lines_arrive_whole_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut tail = Tail::new(path.clone());
        let mut lines: Vec<String> = Vec::new();
        let mut push = |l: &[u8]| lines.push(String::from_utf8_lossy(l).into_owned());
        tail.read(&mut push);
        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        tail.read(&mut push);
        f.write_all(b"o\r\nthree").unwrap();
        tail.read(&mut push);
        tail.finish(&mut push);
        assert_eq!(lines, ["one", "two", "three"]);
    }
}
