//! Bounded reads: a file goldgate reads (golden, `results.json`, `run.json`, `goldgate.yaml`, a
//! case, the probe's output) must be a regular file — a symlink to one is fine — of at most a
//! limit. A symlink to `/dev/zero` would otherwise grow until the kernel kills goldgate, and a
//! FIFO would block forever; both get an error that names the file instead.

use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The bytes of `path`, or `Err(size)` when it holds more than `limit` bytes. A path that is
/// not a regular file is an [`io::ErrorKind::InvalidInput`] error saying what it is.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let (file, len) = open_regular(path)?;
    if len > limit {
        return Ok(Err(len));
    }
    read_at_most(file, limit)
}

/// `path` opened for reading, and its length, when it is a regular file (a symlink to one is
/// fine): for a file streamed rather than read whole. Read it up to that length (`take`): a
/// file that grows while it is read is still bounded.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    // `stat` first, so that a FIFO is never opened; then the opened file is checked again,
    // in case the path was swapped in between.
    regular(std::fs::metadata(path)?.file_type())?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    regular(meta.file_type())?;
    Ok((file, meta.len()))
}

/// [`read_limited`] as one error: a file over `limit` is an [`io::ErrorKind::InvalidData`]
/// error giving both sizes.
pub fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_limited(path, limit)?.map_err(|size| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{size} bytes, more than the {limit} goldgate reads from such a file"),
        )
    })
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_bounded(path, limit)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads until end of file, stopping one byte past `limit` (a file that grows while it is read
/// is still bounded).
fn read_at_most(file: File, limit: u64) -> io::Result<Result<Vec<u8>, u64>> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if len > limit {
        return Ok(Err(len));
    }
    Ok(Ok(bytes))
}

/// `Ok` for a regular file; else an error naming what the path is.
fn regular(file_type: FileType) -> io::Result<()> {
    if file_type.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}, not a regular file", describe(file_type)),
    ))
}

/// What a non-regular file is, in words.
pub(super) fn describe(file_type: FileType) -> &'static str {
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO (named pipe)"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Whether anything at all is at `path`: a file of any kind, or a symlink (even a dangling one
/// or a loop). A lookup that finds a FIFO where a golden should be must report that file, not
/// "no golden file".
pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Makes a FIFO at `path` (for the tests of the special-file rules).
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(err: &io::Error) -> String {
        err.to_string()
    }

    #[test]
    fn regular_files_and_symlinks_to_them_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("golden.json");
        std::fs::write(&file, b"{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_limited(&file, 10).unwrap(), Ok(b"{}".to_vec()));
        assert_eq!(read_limited(&link, 10).unwrap(), Ok(b"{}".to_vec()));
        assert_eq!(read_limited(&file, 1).unwrap(), Err(2));
        assert_eq!(
            read_text(&file, 1).unwrap_err().to_string(),
            "2 bytes, more than the 1 goldgate reads from such a file"
        );
        assert_eq!(read_text(&link, 2).unwrap(), "{}");
    }

    #[test]
    fn a_symlink_to_dev_zero_is_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("results.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_limited(&link, u64::MAX).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(text(&err), "a character device, not a regular file");
    }

    #[test]
    fn a_fifo_is_refused_at_once_and_a_folder_too() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("golden.json");
        mkfifo(&fifo);
        // Without the check this open would block until a writer came (never).
        let err = read_limited(&fifo, 1 << 20).unwrap_err();
        assert_eq!(text(&err), "a FIFO (named pipe), not a regular file");
        let err = read_limited(dir.path(), 1 << 20).unwrap_err();
        assert_eq!(text(&err), "a folder, not a regular file");
        assert!(exists(&fifo));
        assert!(!exists(&dir.path().join("missing")));
    }

    #[test]
    fn dangling_links_and_loops_exist_but_do_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let loop_a = dir.path().join("a");
        std::os::unix::fs::symlink(dir.path().join("b"), &loop_a).unwrap();
        std::os::unix::fs::symlink(&loop_a, dir.path().join("b")).unwrap();
        assert!(exists(&loop_a));
        assert!(read_limited(&loop_a, 10).is_err());
    }
}
