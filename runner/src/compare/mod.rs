//! Stage "compare": rules, statistics and verdicts; `bless` and `calibrate`.

pub mod judge;
pub mod rules;
pub(crate) mod stats;
pub mod verdict;

pub use verdict::{
    COMPARISON_SCHEMA_VERSION, Comparison, Counts, JobComparison, MetricResult, Unit, Verdict,
};
