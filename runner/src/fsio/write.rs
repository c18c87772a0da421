//! Shared by every stage that writes a file a user keeps (results, run index, goldens, reports,
//! the probe): atomic writes — a temp file in the same folder, fsync, rename — so a crash or a
//! full disk never leaves a half-written file behind, with one permission rule for all of them.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `bytes` to `path` atomically: readers see the old file or the new one, never a mix.
/// A replaced file keeps its permissions; a new one gets the usual `0o666` less the umask, like
/// any file a program creates (not the temp file's private `0o600`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let permissions = match std::fs::metadata(path) {
        Ok(meta) => meta.permissions(),
        Err(_) => std::fs::Permissions::from_mode(0o666),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".goldgate-")
        .suffix(".tmp")
        .permissions(permissions.clone())
        .tempfile_in(dir)?;
    // The umask applies at creation only; a replaced file's mode is restored exactly.
    if std::fs::metadata(path).is_ok() {
        tmp.as_file().set_permissions(permissions)?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable.
    if let Ok(d) = std::fs::File::open(dir) {
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
}
