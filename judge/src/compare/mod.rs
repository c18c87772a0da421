//! Stage "compare": recorded jobs judged under the rules (`goldgate_core::rules`), one folder per
//! concern: `golden` (a run against its golden files), `bless` (writing golden files), `ab` (the
//! A/B test, across jobs and within a job), `stats` (the statistics the rules use) and `noise`
//! (what unchanged jobs say about the rules: `calibrate`, `power`). Beside them, what every
//! command shares: which runs it reads (`runs`), its options and errors, a saved comparison.

pub mod ab;
pub mod bless;
pub(crate) mod error;
#[cfg(test)]
mod fixtures;
pub mod golden;
pub mod noise;
pub(crate) mod options;
pub mod runs;
pub mod saved;
pub mod stats;

pub use error::CompareError;
pub use golden::engine::{compare_dir, compare_records, golden_variant, is_default_variant};
pub use golden::evaluation::{failed_as_expected, record_failed_as_expected};
pub use options::CompareOptions;
pub use runs::{Records, RunSelection, load_runs, select_runs};
