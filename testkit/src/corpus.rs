//! Where the tests find Megatron-LM's functional-test corpus, the one place that decides it.
//!
//! In order: `$GOLDGATE_MEGATRON_CORPUS` (a Megatron-LM checkout, or a copy of its `tests/`
//! folder's parent; CI's `ci.yml` points it at a sparse checkout), else `../shared/megatron_corpus`
//! beside the workspace root (the development machines' copy). When neither exists a test that
//! needs the corpus prints one `skipped:` line and returns, so a fresh clone's `cargo test` passes
//! without it; under `CI=true` it fails instead (`prereq`). A variable that is set but names no folder is a mistake and fails the test: a
//! silent skip there would hide that CI checked nothing.

use std::path::PathBuf;

/// The variable that names the corpus.
pub const CORPUS_VAR: &str = "GOLDGATE_MEGATRON_CORPUS";

/// The corpus checkout's root (it holds `tests/functional_tests/test_cases`), or `None` after
/// printing the skip line.
pub fn megatron_corpus() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CORPUS_VAR).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join(CASES).is_dir(),
            "{CORPUS_VAR}={} holds no {CASES} folder",
            dir.display()
        );
        return Some(dir);
    }
    // This crate's folder is one below the workspace root, as every member's is.
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/megatron_corpus");
    if beside.join(CASES).is_dir() {
        return Some(beside);
    }
    skip_line();
    None
}

/// The corpus's case root, `tests/functional_tests/test_cases`, or `None` (skip line printed).
pub fn test_cases() -> Option<PathBuf> {
    megatron_corpus().map(|dir| dir.join(CASES))
}

const CASES: &str = "tests/functional_tests/test_cases";

/// Case folders of Megatron-LM (at the pinned commit) that hold Python for a recipe's own
/// `script` and no `model_config.yaml`. A full checkout has them; the filtered copy
/// (`../shared/megatron_corpus`, configs and goldens only) does not.
pub const SCRIPT_FOLDERS: [&str; 2] = [
    "common/moe_perf",
    "gpt/gpt_inference_server_smoke_tp1_pp1_dp8_583m",
];

/// Those of [`SCRIPT_FOLDERS`] that this corpus holds (under its case root `cases`).
pub fn script_folders_in(cases: &std::path::Path) -> Vec<&'static str> {
    SCRIPT_FOLDERS
        .into_iter()
        .filter(|d| cases.join(d).is_dir())
        .collect()
}

/// The skip line, or under `CI=true` the test's failure ([`crate::prereq::missing`]).
fn skip_line() {
    crate::prereq::missing(&format!(
        "no Megatron-LM corpus (set {CORPUS_VAR} to a Megatron-LM checkout, or put one at \
         ../shared/megatron_corpus beside the workspace)"
    ));
}
