//! Stage "compare": the output types of a comparison — `Verdict` per metric and per job,
//! `MetricResult`, `JobComparison`, `Comparison` — and the one mapping from a comparison to the
//! documented exit code (`Comparison::exit`). They are the schema crate's
//! (`goldgate_schema::comparison`, the comparison JSON), re-exported here under their old path:
//! the boundary types the `report` stage renders. A regression is data here, never an `Err`.

pub use goldgate_schema::comparison::{
    COMPARISON_SCHEMA_VERSION, Comparison, Counts, GateDecision, JobComparison, MetricResult, Unit,
    Verdict,
};
