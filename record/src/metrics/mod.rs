//! Stage "metrics": the pure builder that turns what an executor observed into a job's record
//! (`build`, `sampled`). The records themselves are `goldgate_schema`'s and their loading is
//! `goldgate_core::metrics::record`.

pub(crate) mod build;
pub(crate) mod sampled;

pub use build::{JobResult, Observed, Peaks};
pub use sampled::Sampled;
