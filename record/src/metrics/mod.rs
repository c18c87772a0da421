//! Stage "metrics": the pure builder that turns what an executor observed into a job's record
//! (`build`, `sampled`), with what only building a record does: long series thinned
//! (`downsample`) and a run's TensorBoard scalars merged into its log metrics (`tensorboard`).
//! The records themselves are `goldgate_schema`'s and loading them back is
//! `goldgate_core::records`.

pub(crate) mod build;
pub mod downsample;
pub(crate) mod sampled;
pub(crate) mod tensorboard;

pub use build::{JobResult, Observed, Peaks};
pub use sampled::Sampled;
