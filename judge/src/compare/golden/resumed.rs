//! Stage "compare": the second half of a resume test, as Megatron's
//! `test_pretraining_resume_checkpoint_pipeline.py` checks it. The second run of a
//! ckpt-resume or frozen-resume job resumes at `TRAIN_ITERS / 2`; each of the case's Megatron
//! metrics (`METRICS`, default `lm loss` and `num-zeros`) at the steps after that is judged
//! against the first run's values at the same steps, by the metric's own rule. A second run
//! that printed no step after `TRAIN_ITERS / 2` (it did not resume where the test says, or
//! loaded the final checkpoint and had nothing left to train) is a missing metric.

use std::path::PathBuf;

use super::band::{self, Series};
use goldgate_core::rules::RuleSet;
use goldgate_schema::RunRecord;
use goldgate_schema::metric_names::GOLDGATE_METRICS;
use goldgate_schema::{MetricResult, Verdict};

/// Megatron's checks when a case names no `METRICS`.
const DEFAULT_CHECKS: [&str; 2] = ["lm loss", "num-zeros"];

/// The name of a metric's resumed-half row: `lm loss (resumed)`.
fn resumed_name(metric: &str) -> String {
    format!("{metric} (resumed)")
}

/// One row per Megatron metric of a resume test (none for other jobs). `selected`: the
/// metrics the case compares (its `METRICS` plus goldgate's own keys), `None` = Megatron's
/// default checks.
pub(crate) fn judge_resumed(
    group: &[(PathBuf, RunRecord)],
    selected: Option<&[String]>,
    rules: &RuleSet,
    nondeterministic: bool,
) -> Vec<MetricResult> {
    if group.iter().all(|(_, r)| r.resumed.is_none()) {
        return Vec::new();
    }
    let checks: Vec<String> = match selected {
        Some(list) => list
            .iter()
            .filter(|m| !GOLDGATE_METRICS.contains(&m.as_str()))
            .cloned()
            .collect(),
        None => DEFAULT_CHECKS.iter().map(|m| (*m).to_owned()).collect(),
    };
    checks
        .iter()
        .filter_map(|metric| {
            let rule = rules.find(metric)?;
            let rows: Vec<MetricResult> = group
                .iter()
                .map(|(_, r)| one_repeat(metric, rule, r, nondeterministic))
                .collect();
            worst(rows)
        })
        .collect()
}

/// The second run of one repeat against its own first run.
fn one_repeat(
    metric: &str,
    rule: &goldgate_core::rules::Rule,
    record: &RunRecord,
    nondeterministic: bool,
) -> MetricResult {
    let name = resumed_name(metric);
    let Some(resumed) = &record.resumed else {
        return missing(&name, rule, "the second run was not recorded".to_owned());
    };
    let first: Series = record
        .metrics
        .get(metric)
        .map(|s| {
            s.0.range(resumed.from_step + 1..)
                .map(|(k, v)| (*k, *v))
                .collect()
        })
        .unwrap_or_default();
    let second = resumed.metrics.get(metric).map(|s| &s.0);
    if first.is_empty() {
        let detail = format!("the first run has no step after {}", resumed.from_step);
        return missing(&name, rule, detail);
    }
    let Some(second) = second.filter(|s| !s.is_empty()) else {
        let started = match resumed.first_step {
            Some(step) => format!("it started at step {step}"),
            None => "it printed no step".to_owned(),
        };
        let detail = format!(
            "the second run has no step after {} ({started})",
            resumed.from_step
        );
        return missing(&name, rule, detail);
    };
    let mut result = band::judge(&name, rule, &first, &[Some(second)], nondeterministic);
    let prefix = format!(
        "second run (resumed at step {}) against the first",
        resumed.from_step
    );
    result.detail = match result.detail.is_empty() {
        true => prefix,
        false => format!("{prefix}: {}", result.detail),
    };
    result
}

fn missing(name: &str, rule: &goldgate_core::rules::Rule, detail: String) -> MetricResult {
    MetricResult {
        metric: name.to_owned(),
        verdict: Verdict::MissingMetric,
        golden: None,
        now: None,
        delta_pct: None,
        interval: None,
        tolerance: rule.describe(rule.exact),
        unit: rule.unit,
        repeats: 1,
        detail,
        band: None,
        pass_reason: None,
    }
}

/// The row of the worst repeat, counting every repeat.
fn worst(rows: Vec<MetricResult>) -> Option<MetricResult> {
    let n = rows.len();
    let mut worst = rows.into_iter().max_by_key(|r| r.verdict)?;
    worst.repeats = n;
    Some(worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::record;
    use goldgate_schema::{ResumedRun, StepValues};

    fn resume_job(second: &[(u64, f64)], first_step: Option<u64>) -> Vec<(PathBuf, RunRecord)> {
        let first: Vec<(u64, f64)> = (1..=20).map(|s| (s, 10.0 - s as f64 * 0.1)).collect();
        let mut job = record("gpt/r", 1, &[("lm loss", &first), ("num-zeros", &first)]);
        job.1.resumed = Some(ResumedRun {
            from_step: 10,
            first_step,
            metrics: [("lm loss", second), ("num-zeros", second)]
                .iter()
                .map(|(m, v)| ((*m).to_owned(), StepValues(v.iter().copied().collect())))
                .collect(),
            tensorboard: None,
        });
        vec![job]
    }

    fn verdicts(group: &[(PathBuf, RunRecord)]) -> Vec<(String, Verdict, String)> {
        judge_resumed(group, None, &RuleSet::default(), false)
            .into_iter()
            .map(|r| (r.metric, r.verdict, r.detail))
            .collect()
    }

    #[test]
    fn the_resumed_steps_are_judged_against_the_first_runs_same_steps() {
        let same: Vec<(u64, f64)> = (11..=20).map(|s| (s, 10.0 - s as f64 * 0.1)).collect();
        let rows = verdicts(&resume_job(&same, Some(11)));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, "lm loss (resumed)");
        assert!(rows.iter().all(|r| r.1 == Verdict::Pass), "{rows:?}");
        // Steps 1-10 of the first run play no part: a second run equal from 11 on passes
        // even though it has no earlier steps, and one that differs there fails.
        let off: Vec<(u64, f64)> = (11..=20).map(|s| (s, 20.0)).collect();
        let rows = verdicts(&resume_job(&off, Some(11)));
        assert!(rows.iter().all(|r| r.1 == Verdict::Regression), "{rows:?}");
    }

    #[test]
    fn a_second_run_with_nothing_after_the_resume_step_is_missing() {
        // What a ckpt-resume without Megatron's edits does: run 2 loads the final checkpoint
        // (iteration 20) and trains nothing.
        let rows = verdicts(&resume_job(&[], None));
        assert!(
            rows.iter().all(|r| r.1 == Verdict::MissingMetric),
            "{rows:?}"
        );
        assert_eq!(
            rows[0].2,
            "the second run has no step after 10 (it printed no step)"
        );
    }

    #[test]
    fn other_jobs_get_no_resumed_rows() {
        let plain = vec![record("gpt/r", 1, &[("lm loss", &[(1, 1.0)])])];
        assert!(verdicts(&plain).is_empty());
    }
}
