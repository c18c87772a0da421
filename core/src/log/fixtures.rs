//! Test support (the `fixtures` feature): the real Megatron logs of an H200 under
//! `core/tests/fixtures/h200/` (`megatron-core` 0.19.2, torchrun with `--tee 3`: sync, async
//! through mcore and through nvrx's /dev/shm, overlapping async saves,
//! `--empty-unused-memory-level 2`). They are this crate's, the parser's real inputs; a crate
//! that builds on what the parser reads from them (`goldgate_record::metrics::build`) asks here
//! instead of naming a folder of this crate.

use std::path::{Path, PathBuf};

use super::{LogError, LogSummary, summarize_file};

/// The path of the H200 log `name` (`sync.log`, `async_mcore.log`, ...).
pub fn h200_log(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200")
        .join(name)
}

/// The H200 log `name`, parsed.
pub fn h200_summary(name: &str) -> Result<LogSummary, LogError> {
    summarize_file(&h200_log(name))
}
