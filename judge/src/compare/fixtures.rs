//! Stage "compare": test-only builders of recorded jobs.

use std::path::PathBuf;

use goldgate_schema::{RunRecord, StepValues, VariantRecord};

/// A passed job of `case` (default variant) with the given metrics.
pub(crate) fn record(
    case: &str,
    repeat: u32,
    metrics: &[(&str, &[(u64, f64)])],
) -> (PathBuf, RunRecord) {
    let r = RunRecord {
        run_id: "run".into(),
        wall_seconds: 1.0,
        metrics: metrics
            .iter()
            .map(|(m, v)| (m.to_string(), StepValues(v.iter().copied().collect())))
            .collect(),
        ..RunRecord::passed(case, VariantRecord::baseline(), repeat, "dev_cpu")
    };
    (
        PathBuf::from(format!("{case}/default/{repeat}/results.json")),
        r,
    )
}
