//! Stage "metrics": the results schema — the `results.json` record of one job, the `run.json`
//! index of a run, loading them back — and the pure builder that turns observations into a
//! record.

pub mod build;
pub mod downsample;
pub mod record;
pub mod sampled;
pub mod tensorboard;

pub use build::{JobResult, Observed, Peaks};
pub use record::{
    Attempt, CheckpointRecord, Fingerprint, GoldenKey, GpuDevicePeak, GpuMemory, JobEntry, Judging,
    MemAvailableRecord, MemoryRecord, NodeMemory, Outcome, ResumedRun, RulesRef, RunIndex,
    RunRecord, Runner, SCHEMA_VERSION, StepValues, TensorboardRecord, Timeline, VariantRecord,
};
pub use sampled::Sampled;
