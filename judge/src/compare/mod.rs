//! Stage "compare": statistics and verdicts under the rules (`goldgate_core::rules`); `bless` and
//! `calibrate`.

pub mod ab;
pub mod ab_covariate;
pub mod ab_in_job;
pub mod ab_outcome;
pub mod ab_study;
pub mod bless;
pub mod calibrate;
pub mod engine;
pub(crate) mod error;
pub(crate) mod evaluation;
#[cfg(test)]
mod fixtures;
pub(crate) mod golden_io;
pub(crate) mod golden_samples;
pub(crate) mod inference;
pub(crate) mod judge;
pub(crate) mod judge_two_sample;
pub(crate) mod noise;
pub(crate) mod options;
pub mod platform;
pub mod power;
pub(crate) mod resumed;
pub mod runs;
pub mod saved;
pub mod stats;
pub mod tensorboard;
pub(crate) mod twosample;

pub use engine::{compare_dir, compare_records, golden_variant, is_default_variant};
pub use error::CompareError;
pub use evaluation::{failed_as_expected, record_failed_as_expected};
pub use options::CompareOptions;
pub use runs::{Records, RunSelection, load_runs, select_runs};
