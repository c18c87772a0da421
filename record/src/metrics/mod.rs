//! Stage "metrics": the pure builder that turns what an executor observed into a job's record
//! (`build`, `sampled`); the records themselves and their loading are `goldgate-core`'s
//! `metrics`, re-exported here.

pub(crate) mod build;
pub(crate) mod sampled;

pub use build::{JobResult, Observed, Peaks};
pub use goldgate_core::metrics::*;
pub use sampled::Sampled;
