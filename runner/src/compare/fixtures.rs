//! Stage "compare": test-only builders of recorded jobs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::metrics::{
    Fingerprint, MemoryRecord, Outcome, RunRecord, SCHEMA_VERSION, StepValues, VariantRecord,
};

/// A passed job of `case` (default variant) with the given metrics.
pub(crate) fn record(
    case: &str,
    repeat: u32,
    metrics: &[(&str, &[(u64, f64)])],
) -> (PathBuf, RunRecord) {
    let r = RunRecord {
        schema_version: SCHEMA_VERSION,
        run_id: "run".into(),
        job_id: format!("{case}@default#{repeat}"),
        case: case.into(),
        variant: VariantRecord {
            name: "default".into(),
            slug: "default".into(),
            choices: BTreeMap::new(),
        },
        repeat,
        platform: "dev_cpu".into(),
        outcome: Outcome::Passed,
        attempts: vec![],
        started_at: String::new(),
        wall_seconds: 1.0,
        argv: vec![],
        env: BTreeMap::new(),
        env_unset: vec![],
        fingerprint: Fingerprint::default(),
        nondeterministic: false,
        metrics: metrics
            .iter()
            .map(|(m, v)| (m.to_string(), StepValues(v.iter().copied().collect())))
            .collect(),
        checkpoints: vec![],
        memory: MemoryRecord::default(),
        probe: None,
        observer_cpu_seconds: None,
        warnings: Vec::new(),
        warmup: false,
        resumed: None,
    };
    (
        PathBuf::from(format!("{case}/default/{repeat}/results.json")),
        r,
    )
}
