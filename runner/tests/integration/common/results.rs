//! Reading back what a test's `goldgate run` wrote: its records and its files.

use std::path::{Path, PathBuf};

use goldgate_schema::RunRecord;

/// Every `results.json` record under `out` (a results folder or one run of it).
pub fn records(out: &Path) -> Vec<RunRecord> {
    match goldgate_core::records::load_results(out) {
        Ok(found) => found.into_iter().map(|(_, r)| r).collect(),
        Err(e) => panic!("results under {}: {e}", out.display()),
    }
}

/// Every file below `dir`, at any depth, links listed and not followed (none when `dir`
/// cannot be read, e.g. before a job made it).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
