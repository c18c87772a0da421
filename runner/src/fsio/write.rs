//! Writes of every file goldgate keeps: a regular file is replaced atomically — a temp file in
//! the same folder, fsync, rename — so a crash or a full disk never leaves a half-written file,
//! with one permission rule for all of them. A path that is not a regular file is never
//! replaced by one: a character device or FIFO (`--junit /dev/null`, `--json /dev/stdout`) is
//! written in place, a symlink's target is written (the link stays), and a folder, block
//! device, socket or dangling link is refused with an error that says so.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::read::describe;

/// Writes `bytes` to `path`: atomically for a regular file (readers see the old file or the
/// new one, never a mix), in place for a character device or FIFO. A replaced file keeps its
/// permissions; a new one gets the usual `0o666` less the umask, like any file a program
/// creates (not the temp file's private `0o600`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => replace(&regular_target(path)?, bytes, Some(&meta)),
        Ok(meta) => write_special(path, &meta, bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(refused("a dangling symbolic link"));
            }
            replace(path, bytes, None)
        }
        Err(e) => Err(e),
    }
}

/// The file a write to `path` replaces: `path` itself, or the file a symlink leads to (the
/// rename must replace the target, not the link).
fn regular_target(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        true => std::fs::canonicalize(path),
        false => Ok(path.to_path_buf()),
    }
}

/// A character device or FIFO is written in place (opened without creating or truncating);
/// a FIFO nobody reads is refused at once instead of blocking. Anything else is refused.
fn write_special(path: &Path, meta: &Metadata, bytes: &[u8]) -> io::Result<()> {
    let kind = meta.file_type();
    if !(kind.is_char_device() || kind.is_fifo()) {
        return Err(refused(describe(kind)));
    }
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => refused("a FIFO that no process is reading"),
            _ => e,
        })?;
    // Opened without blocking; the writes themselves may block (a slow reader), as `>` would.
    let flags = rustix::fs::fcntl_getfl(&file)? - rustix::fs::OFlags::NONBLOCK;
    rustix::fs::fcntl_setfl(&file, flags)?;
    (&file).write_all(bytes)
}

fn refused(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("refusing to write: the path is {what}, not a regular file"),
    )
}

/// Creates or replaces the regular file `path` through a temp file and a rename.
fn replace(path: &Path, bytes: &[u8], old: Option<&Metadata>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let permissions = match old {
        Some(meta) => meta.permissions(),
        None => std::fs::Permissions::from_mode(0o666),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".goldgate-")
        .suffix(".tmp")
        .permissions(permissions.clone())
        .tempfile_in(dir)?;
    // The umask applies at creation only; a replaced file's mode is restored exactly.
    if old.is_some() {
        tmp.as_file().set_permissions(permissions)?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/results.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("results.json")]);
    }

    #[test]
    fn golden_files_from_bless_are_readable_by_others() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir
            .path()
            .join("golden/gpt/a/golden_values_dev_dgx_h100.json");
        let file = crate::golden::parse_golden(&p, r#"{"lm loss": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": 2.5}}}"#).unwrap();
        crate::golden::write_golden(&p, &file).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o044, 0o044, "group and others can read ({mode:o})");
    }

    #[test]
    fn new_files_are_readable_by_others_and_replaced_files_keep_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        write_atomic(&p, b"one").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o044, 0o044, "group and others can read ({mode:o})");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn a_character_device_is_written_in_place_never_replaced() {
        // As root, replacing /dev/null with a regular file breaks the whole machine; here a
        // symlink to it stands in for the device node, which a test cannot create.
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        write_atomic(&null, b"report").unwrap();
        let meta = std::fs::symlink_metadata(&null).unwrap();
        assert!(meta.file_type().is_symlink(), "the link is still a link");
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        write_atomic(Path::new("/dev/null"), b"report").unwrap();
    }

    #[test]
    fn a_symlink_to_a_file_keeps_the_link_and_replaces_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.xml");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("junit.xml");
        std::os::unix::fs::symlink("real.xml", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }

    #[test]
    fn a_fifo_is_written_in_place_when_read_and_refused_when_not() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("report.md");
        crate::fsio::mkfifo(&fifo);
        let err = write_atomic(&fifo, b"x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to write: the path is a FIFO that no process is reading, not a regular file"
        );
        // A reader that opened the FIFO (without blocking) gets the report through it.
        let mut reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        write_atomic(&fifo, b"through the pipe").unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut got).unwrap();
        assert_eq!(got, b"through the pipe");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    #[test]
    fn folders_and_dangling_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to write: the path is a folder, not a regular file"
        );
        let dangling = dir.path().join("gone");
        std::os::unix::fs::symlink(dir.path().join("nowhere/x"), &dangling).unwrap();
        assert!(write_atomic(&dangling, b"x").is_err());
        assert!(!dir.path().join("nowhere").exists());
    }
}
