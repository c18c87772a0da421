//! Stage "plan": finding the program a bare entry name (`fake-trainer`) refers to.
//!
//! `plan` keeps a bare name as written; `launch` and `repro` look it up next to goldgate's own
//! executable first (so `cargo run` and an unpacked release find the fake trainer), then in `PATH`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The file `name` runs: `name` itself when it holds a `/`, else the first executable file
/// called `name` in `exe_dir`, then in the folders of `path_var`. `None` when there is none.
pub fn resolve_program(
    name: &str,
    exe_dir: Option<&Path>,
    path_var: Option<&OsStr>,
) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let from_path = path_var.into_iter().flat_map(std::env::split_paths);
    exe_dir
        .map(Path::to_path_buf)
        .into_iter()
        .chain(from_path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn exe_dir_wins_over_path_and_plain_files_are_skipped() {
        let exe = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        let next_to_goldgate = executable(exe.path(), "fake-trainer");
        let on_path = executable(bin.path(), "fake-trainer");
        std::fs::write(bin.path().join("data-only"), "x").unwrap();
        let path_var = std::env::join_paths([bin.path()]).unwrap();
        assert_eq!(
            resolve_program("fake-trainer", Some(exe.path()), Some(&path_var)),
            Some(next_to_goldgate)
        );
        assert_eq!(
            resolve_program("fake-trainer", None, Some(&path_var)),
            Some(on_path)
        );
        assert_eq!(resolve_program("data-only", None, Some(&path_var)), None);
        assert_eq!(
            resolve_program("missing", Some(exe.path()), Some(&path_var)),
            None
        );
    }

    #[test]
    fn names_with_a_slash_are_kept() {
        assert_eq!(
            resolve_program("./run.sh", None, None),
            Some(PathBuf::from("./run.sh"))
        );
        assert_eq!(resolve_program("", None, None), None);
    }
}
