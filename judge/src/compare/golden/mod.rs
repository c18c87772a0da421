//! Stage "compare": a run's jobs judged against their golden files — `engine` (group repeats,
//! find each golden, judge every metric into a `Comparison`), the two rules of a metric (`band`,
//! `two_sample`), reading goldens (`io`, `samples`: the per-job values a golden keeps), the
//! platform check, and Megatron's test semantics (`evaluation`, `resumed`, `inference`).

pub(crate) mod band;
pub mod engine;
pub(crate) mod evaluation;
pub(crate) mod inference;
pub(crate) mod io;
pub mod platform;
pub(crate) mod resumed;
pub(crate) mod samples;
pub(crate) mod two_sample;
