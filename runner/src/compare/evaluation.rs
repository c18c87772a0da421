//! Stage "compare": how Megatron's `run_ci_test.sh` decides a job's fate before any golden
//! value is read. `SKIP_PYTEST=1` (the case's ENV_VARS, or lightweight mode): the job is
//! judged by its exit code alone. `TEST_EVALUATION: xpass`: a training that failed is the
//! expected result and passes; one that passed is compared as usual. `MODE: inference`: the
//! job is judged by its requests (`compare::inference`), not by metric series.

use std::path::{Path, PathBuf};

use super::error::CompareError;
use crate::metrics::RunRecord;

/// What a job's case says about its evaluation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Evaluation {
    /// `SKIP_PYTEST=1` in the job's environment: no comparison.
    pub(crate) skip_checks: bool,
    /// `TEST_EVALUATION: xpass`: the training is expected to fail.
    pub(crate) expect_failure: bool,
    /// `MODE: inference`: judged by its requests (`compare::inference`).
    pub(crate) inference: bool,
}

/// `SKIP_PYTEST` from the recorded environment (the plan's, lightweight mode's edit
/// included), `TEST_EVALUATION` from the case file when it is at hand.
pub(crate) fn evaluation(
    group: &[(PathBuf, RunRecord)],
    root: &Path,
    config: Option<&Path>,
) -> Result<Evaluation, CompareError> {
    let skip_checks = group
        .iter()
        .any(|(_, r)| r.env.get("SKIP_PYTEST").is_some_and(|v| v.trim() == "1"));
    let case = match config {
        Some(config) => Some(crate::case::load_case(root, config)?),
        None => None,
    };
    let expect_failure = case
        .as_ref()
        .and_then(|c| c.test_evaluation.as_ref())
        .is_some_and(|t| t.text.trim() == "xpass");
    let inference = case
        .as_ref()
        .is_some_and(|c| c.mode == crate::case::Mode::Inference);
    Ok(Evaluation {
        skip_checks,
        expect_failure,
        inference,
    })
}
