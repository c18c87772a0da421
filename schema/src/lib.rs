//! The files goldgate writes for other tools to read, as plain serde types: `results.json`
//! (one [`RunRecord`] per job), `run.json` (the [`RunIndex`] of a run), the comparison JSON
//! (`goldgate compare --json`, [`Comparison`]), the exit codes ([`Exit`]) and the metric names
//! ([`metric_names`]). A committed JSON Schema of each file lies beside this crate
//! (`schema/*.schema.json`, from `json_schemas` under the feature `json-schema`, which also
//! derives schemars' `JsonSchema` for every type); a test keeps it up to date.
//!
//! This crate holds no logic of goldgate's stages (nothing that runs, reads a file or judges):
//! a tool that reads goldgate's output (a history store, a dashboard, a PR comment built on
//! another machine) depends on it alone, as nextest's `nextest-metadata` is to nextest.
//!
//! # Stability
//!
//! Each file carries a `schema_version` ([`SCHEMA_VERSION`] for `results.json` and `run.json`,
//! [`COMPARISON_SCHEMA_VERSION`] for the comparison). Within one version, fields are only
//! added, each one optional on reading (absent in older files; the types say what an absent
//! field reads as), so a reader built against this crate reads every file of the versions in
//! [`READABLE_SCHEMA_VERSIONS`]. Removing or renaming a field, changing its type or meaning, or
//! a new `Outcome`/`Verdict` variant that older readers would misjudge bumps the version.
//! Readers must ignore fields they do not know. The Rust API follows the crate's semver: a
//! new field on a struct is a breaking change for code that builds the struct by name, so
//! build records on [`RunRecord::passed`] with struct update syntax.

pub mod comparison;
pub mod exit;
pub mod index;
pub mod metric_names;
pub mod outcome;
pub mod record;
pub mod step_values;

pub use comparison::{
    COMPARISON_SCHEMA_VERSION, Comparison, Counts, GateDecision, JobComparison, MetricResult,
    READABLE_COMPARISON_VERSIONS, Unit, Verdict,
};
pub use exit::Exit;
pub use index::{JobEntry, RunIndex, Runner};
pub use outcome::Outcome;
pub use record::{
    AB_ARM_VARIABLE, AbMember, Attempt, CheckpointRecord, Fingerprint, GoldenKey, GpuDevicePeak,
    GpuMemory, Judging, MemAvailableRecord, MemoryRecord, NodeIo, NodeMemory,
    READABLE_SCHEMA_VERSIONS, ResumedRun, RulesRef, RunRecord, SCHEMA_VERSION, SaveParts,
    SaveProbe, SourceDisagreement, TensorboardRecord, Timeline, VariantRecord,
};
pub use step_values::StepValues;

/// The JSON Schema of each file this crate describes, by the file name it is committed under
/// beside the crate: `results.schema.json`, `run.schema.json`, `comparison.schema.json`.
#[cfg(feature = "json-schema")]
pub fn json_schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("results.schema.json", schema_of::<RunRecord>()),
        ("run.schema.json", schema_of::<RunIndex>()),
        ("comparison.schema.json", schema_of::<Comparison>()),
    ]
}

#[cfg(feature = "json-schema")]
fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    schemars::schema_for!(T).to_value()
}
