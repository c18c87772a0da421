//! Stage "run", Slurm executor: follows a log that another machine appends to on a shared
//! filesystem, handing what it gained to the caller (the run's log stream splits it).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

/// A log read from where the last read stopped.
pub(crate) struct Tail {
    path: PathBuf,
    offset: u64,
    chunk: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            chunk: vec![0u8; 1 << 16],
        }
    }

    /// Reads what was appended since the last call and hands it over in chunks. A log that
    /// does not exist yet reads as empty; any other failure to open, seek or read is the
    /// error (what was read before it was handed over; the next call goes on from there).
    pub(crate) fn read(&mut self, on_bytes: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        loop {
            let n = match file.read(&mut self.chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.offset += n as u64;
            on_bytes(&self.chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn every_appended_byte_arrives_once_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut tail = Tail::new(path.clone());
        let mut got: Vec<u8> = Vec::new();
        let mut push = |b: &[u8]| got.extend_from_slice(b);
        tail.read(&mut push).unwrap();
        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        tail.read(&mut push).unwrap();
        f.write_all(b"o\r\nthree").unwrap();
        tail.read(&mut push).unwrap();
        assert_eq!(got, b"one\ntwo\r\nthree");
    }

    #[test]
    fn a_log_that_cannot_be_read_is_an_error_not_silence() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the log should be: opening works, reading fails.
        let mut tail = Tail::new(dir.path().to_path_buf());
        assert!(tail.read(&mut |_| {}).is_err());
    }
}
