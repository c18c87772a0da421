//! Stage "metrics": the `results.json` record of one job, the `run.json` index of a run,
//! loading them back, and atomic writes.

pub mod atomic;
pub mod build;
pub mod execute;
pub mod record;
pub mod sampling;

pub use record::{
    Attempt, CheckpointRecord, Fingerprint, GpuDevicePeak, GpuMemory, JobEntry, MemoryRecord,
    Outcome, RunIndex, RunRecord, SCHEMA_VERSION, StepValues, Timeline, VariantRecord,
};
