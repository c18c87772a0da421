//! The one redaction list of the integration tests: what a snapshot or an expected text must
//! not depend on (where the test's temporary folder and the build's binaries are), and the
//! placeholder written instead. Every test that snapshots text holding a path goes through
//! [`redact`].

use std::path::Path;

/// Stands for a test's temporary folder.
pub const TMP: &str = "[TMP]";
/// Stands for the folder of the `goldgate` binary, or of the test binary that stands in for
/// it (goldgate looks for programs next to its own executable first).
pub const GOLDGATE_DIR: &str = "[goldgate-dir]";

/// `text` with each folder in `tmp` (as given and canonicalised) written as [`TMP`], and the
/// test binary's and the goldgate binary's folders as [`GOLDGATE_DIR`]. Longer paths are
/// replaced first, so a folder inside another keeps nothing of its own path.
pub fn redact(text: &str, tmp: &[&Path]) -> String {
    let mut list: Vec<(String, &str)> = Vec::new();
    for dir in tmp {
        list.push((dir.display().to_string(), TMP));
        if let Ok(canonical) = dir.canonicalize() {
            list.push((canonical.display().to_string(), TMP));
        }
    }
    let goldgate = Path::new(env!("CARGO_BIN_EXE_goldgate"));
    let current = std::env::current_exe().ok();
    for exe in [Some(goldgate), current.as_deref()].into_iter().flatten() {
        if let Some(dir) = exe.parent() {
            list.push((dir.display().to_string(), GOLDGATE_DIR));
        }
    }
    list.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    list.into_iter()
        .filter(|(path, _)| !path.is_empty())
        .fold(text.to_owned(), |text, (path, placeholder)| {
            text.replace(&path, placeholder)
        })
}
