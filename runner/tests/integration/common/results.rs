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

/// A value for the secret `name` other than `had`, the value the only run under `out` had,
/// that fails that run's check of it (`run.json`'s `secret_checks`, the first two bytes of
/// SHA-256 over its `secret_salt` and the value, recomputed here): `base` with the first
/// suffix that does, so no test depends on a 1-in-65536 chance. Panics when the run recorded
/// no check of `name`, or one that `had` fails.
pub fn another_value(out: &Path, name: &str, had: &str, base: &str) -> String {
    use sha2::Digest;
    let indexes = goldgate_core::records::load_indexes(out)
        .unwrap_or_else(|e| panic!("run.json under {}: {e}", out.display()));
    let index = &indexes[0].1;
    let salt = index.secret_salt.as_deref().expect("run.json has a salt");
    assert_eq!(salt.len(), 32, "{salt}");
    let salt: Vec<u8> = (0..16)
        .map(|i| {
            u8::from_str_radix(&salt[2 * i..2 * i + 2], 16)
                .unwrap_or_else(|e| panic!("salt {salt}: {e}"))
        })
        .collect();
    let check = |value: &str| {
        let digest = sha2::Sha256::new()
            .chain_update(&salt)
            .chain_update(value)
            .finalize();
        u16::from_be_bytes([digest[0], digest[1]])
    };
    let recorded = index.jobs[0].secret_checks[name];
    assert_eq!(check(had), recorded, "run.json's check of {name}");
    (0..)
        .map(|n| format!("{base}{n}"))
        .find(|v| check(v) != recorded)
        .unwrap_or_else(|| unreachable!("an endless search"))
}
