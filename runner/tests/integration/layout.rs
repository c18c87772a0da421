//! The integration tests stay one binary: a `runner/tests/<name>.rs` would be
//! a test binary of its own that links the whole crate again, a file here that `main.rs` does
//! not declare would compile nowhere and never run, and a snapshot whose module is gone would
//! be an orphan that no test reads.
#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `runner/tests/integration`: this binary's folder.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration")
}

/// The names of the `*.<ext>` files directly in `dir`, without the extension.
fn stems(dir: &Path, ext: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The modules `main.rs` declares (`mod name;`).
fn declared() -> BTreeSet<String> {
    std::fs::read_to_string(here().join("main.rs"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn no_test_file_outside_the_one_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let own = stems(&tests, "rs");
    assert!(
        own.is_empty(),
        "runner/tests/{{{}}}.rs would each be a test binary linking the whole crate: move them \
         into runner/tests/integration/ and declare them in its main.rs (`mod name;`)",
        own.into_iter().collect::<Vec<_>>().join(",")
    );
}

#[test]
fn every_file_here_is_a_declared_module_and_every_module_a_file() {
    let mut files = stems(&here(), "rs");
    files.remove("main");
    let mut modules = declared();
    modules.remove("common");
    let undeclared: Vec<_> = files.difference(&modules).collect();
    let missing: Vec<_> = modules.difference(&files).collect();
    assert!(
        undeclared.is_empty() && missing.is_empty(),
        "files main.rs does not declare (they never run): {undeclared:?}; \
         modules without a file: {missing:?}"
    );
}

/// insta names a snapshot `integration__<module>__<test>.snap` (the module path with `::`
/// written `__`); one whose module is not declared here is left over from a moved test.
#[test]
fn every_snapshot_belongs_to_a_module_of_this_binary() {
    let modules = declared();
    let orphans: Vec<_> = stems(&here().join("snapshots"), "snap")
        .into_iter()
        .filter(|name| {
            let module = name
                .strip_prefix("integration__")
                .and_then(|rest| rest.split("__").next());
            !module.is_some_and(|m| modules.contains(m))
        })
        .collect();
    assert!(orphans.is_empty(), "snapshots of no module: {orphans:?}");
}
