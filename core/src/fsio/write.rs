//! Writes of every file goldgate keeps: a regular file is replaced atomically — a temp file in
//! the same folder, fsync, rename — so a crash or a full disk never leaves a half-written file,
//! with one permission rule for all of them. A path that is not a regular file is never
//! replaced by one: a character device or FIFO (`--junit /dev/null`, `--json /dev/stdout`) is
//! written in place, and a folder, block device or socket is refused with an error that says
//! so. A symbolic link is never written through to a regular file: a link to a file (or a
//! dangling link) is itself replaced by the new file, its target untouched, so a link a pull
//! request commits (`report.md -> ~/.bashrc`) cannot make goldgate write outside the folder it
//! was given. [`write_under`] is the rule for writers that own a folder (bless under
//! `--golden-root`, a run's results under `--out`, `--svg DIR`): no component between that
//! root and the file may be a link at all.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::read::describe;

/// Writes `bytes` to `path`: atomically for a regular file (readers see the old file or the
/// new one, never a mix), in place for a character device or FIFO (also through a link, as
/// `/dev/stdout` is). A link to anything else is replaced by the file, never followed. A
/// replaced file keeps its permissions; a new one gets the usual `0o666` less the umask, like
/// any file a program creates (not the temp file's private `0o600`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type().is_symlink(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return replace(path, bytes, None),
        Err(e) => return Err(e),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && link => replace(path, bytes, None),
        Ok(meta) if meta.is_file() => replace(path, bytes, Some(&meta)),
        Ok(meta) if meta.is_dir() && link => replace(path, bytes, None),
        Ok(meta) => write_special(path, &meta, bytes),
        // A dangling link: replaced, so nothing is created where it points.
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(path, bytes, None),
        Err(e) => Err(e),
    }
}

/// [`write_atomic`] for a writer that owns the folder `root`: `path` must lie under `root`, and
/// no folder between them, nor the file itself, may be a symbolic link (a link committed into
/// a golden folder could lead anywhere). `root` itself may be a link: the caller named it.
pub fn write_under(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_no_links(root, path)?;
    write_atomic(path, bytes)
}

/// [`write_under`]'s check, for a writer that creates folders itself before writing.
pub fn check_no_links(root: &Path, path: &Path) -> io::Result<()> {
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    let rel = path.strip_prefix(root).map_err(|_| {
        invalid(format!(
            "refusing to write: the path is not under {}",
            root.display()
        ))
    })?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        if !matches!(part, std::path::Component::Normal(_)) {
            return Err(invalid(format!(
                "refusing to write: {} leaves {}",
                rel.display(),
                root.display()
            )));
        }
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(invalid(format!(
                    "refusing to write: {} is a symbolic link, and goldgate writes nothing \
                     through a link under {}",
                    at.display(),
                    root.display()
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A character device or FIFO is written in place (opened without creating or truncating);
/// a FIFO nobody reads is refused at once instead of blocking. Anything else is refused.
fn write_special(path: &Path, meta: &Metadata, bytes: &[u8]) -> io::Result<()> {
    let kind = meta.file_type();
    if !(kind.is_char_device() || kind.is_fifo()) {
        return Err(refused(describe(kind)));
    }
    // Opened without blocking first: with no process reading a FIFO that open fails at once
    // (ENXIO) where a plain one would wait. The file is then opened again as `>` opens it, so
    // the writes block for a slow reader instead of failing half-way (a reader gone between
    // the two opens is waited for, as `>` would).
    let probe = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => refused("a FIFO that no process is reading"),
            _ => e,
        })?;
    let file = OpenOptions::new().write(true).open(path)?;
    drop(probe);
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
    let (tmp_path, mut tmp) = temp_file(dir, permissions.mode())?;
    let written = (|| {
        // The umask applies at creation only; a replaced file's mode is restored exactly.
        if old.is_some() {
            tmp.set_permissions(permissions)?;
        }
        tmp.write_all(bytes)?;
        tmp.sync_all()?;
        std::fs::rename(&tmp_path, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    written?;
    // Make the rename itself durable.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new temp file beside the target, `.goldgate-<pid>-<n>.tmp`, created exclusively (never an
/// existing file or link) with `mode` less the umask; a name already taken is skipped.
fn temp_file(dir: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..TEMP_ATTEMPTS {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".goldgate-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free temp file name in {}", dir.display()),
    ))
}

/// Names [`temp_file`] tries before it gives up (each taken one was left by another writer).
const TEMP_ATTEMPTS: u32 = 1000;

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
        crate::golden::write_golden(dir.path(), &p, &file).unwrap();
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
    fn a_symlink_to_a_file_is_replaced_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("bashrc");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("junit.xml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
    }

    #[test]
    fn under_a_root_a_linked_folder_or_file_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("gpt")).unwrap();
        let err = write_under(root.path(), &root.path().join("gpt/a/g.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(!outside.path().join("a").exists());
        std::fs::create_dir(root.path().join("b")).unwrap();
        std::fs::write(outside.path().join("g.json"), "old").unwrap();
        std::os::unix::fs::symlink(outside.path().join("g.json"), root.path().join("b/g.json"))
            .unwrap();
        assert!(write_under(root.path(), &root.path().join("b/g.json"), b"x").is_err());
        assert_eq!(
            std::fs::read(outside.path().join("g.json")).unwrap(),
            b"old"
        );
        assert!(write_under(root.path(), Path::new("/tmp/elsewhere.json"), b"x").is_err());
        write_under(root.path(), &root.path().join("c/d/g.json"), b"ok").unwrap();
        assert_eq!(
            std::fs::read(root.path().join("c/d/g.json")).unwrap(),
            b"ok"
        );
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
    fn folders_are_refused_and_dangling_links_replaced_without_creating_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to write: the path is a folder, not a regular file"
        );
        let dangling = dir.path().join("gone");
        std::os::unix::fs::symlink(dir.path().join("nowhere/x"), &dangling).unwrap();
        write_atomic(&dangling, b"x").unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_file());
        assert!(!dir.path().join("nowhere").exists());
    }
}
