//! Stage "compare": how one metric of an A/B comparison came out — its test, its verdict, A's
//! and B's values — whichever test judged it (`across_jobs`, `within_job`); and when a sequence
//! of looks may stop. `ab.json` and every A/B report read these.

use serde::{Deserialize, Serialize};

use goldgate_schema::Unit;

/// A metric's verdict in an A/B comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbVerdict {
    Pass,
    Improvement,
    /// Not decided yet (only while pairs are still being added).
    Undecided,
    /// Not decided at `max_pairs`, or when the sequence stopped on another metric.
    Inconclusive,
    /// In one arm's jobs only, and every job of the other arm says its samplers tried and
    /// could not read it (`memory.not_sampled`: a job that ended before its memory was first
    /// read): not judged, neither a regression nor a pass. Exit 0 with a warning; exit 1 under
    /// `--strict`.
    NotSampled,
    /// In one arm's jobs but not the other's.
    MissingMetric,
    Regression,
}

impl AbVerdict {
    /// The kebab-case label every report uses.
    pub fn label(self) -> &'static str {
        match self {
            AbVerdict::Pass => "pass",
            AbVerdict::Improvement => "improvement",
            AbVerdict::Undecided => "undecided",
            AbVerdict::Inconclusive => "inconclusive",
            AbVerdict::NotSampled => "not-sampled",
            AbVerdict::MissingMetric => "missing-metric",
            AbVerdict::Regression => "regression",
        }
    }

    /// Whether more pairs can change it.
    pub fn is_open(self) -> bool {
        matches!(self, AbVerdict::Undecided)
    }
}

/// How a metric of an A/B comparison is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbTest {
    /// Timing: B/A with its interval, pair by pair.
    Sequential,
    /// Timing within one job: a signed-rank test on save pairs (`compare::ab::within_job`).
    SignedRank,
    /// B against A under the metric's own rule, no statistics (loss, counters, memory).
    Rule,
}

/// How one metric of an A/B comparison came out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbMetric {
    pub metric: String,
    pub unit: Unit,
    pub test: AbTest,
    pub verdict: AbVerdict,
    /// A's and B's value (geometric means over pairs, or medians over jobs for `rule`).
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// `B/A − 1`.
    pub change: Option<f64>,
    /// The change's interval and its level (sequential only).
    pub interval: Option<(f64, f64)>,
    pub level: Option<f64>,
    pub pairs: usize,
    pub detail: String,
}

impl AbMetric {
    /// `metric` judged by `test`, nothing measured yet: `undecided`, no values, no pairs.
    pub fn open(metric: &str, test: AbTest) -> AbMetric {
        AbMetric {
            metric: metric.to_owned(),
            unit: Unit::of_metric(metric),
            test,
            verdict: AbVerdict::Undecided,
            a: None,
            b: None,
            change: None,
            interval: None,
            level: None,
            pairs: 0,
            detail: String::new(),
        }
    }
}

/// Whether the sequence may stop: a metric regressed (a timing interval wholly above the
/// minimum effect, or a counter off A's value: more pairs cannot undo either), or none is open.
pub fn settled(metrics: &[AbMetric]) -> bool {
    metrics.iter().any(|m| m.verdict == AbVerdict::Regression)
        || !metrics.iter().any(|m| m.verdict.is_open())
}

/// Closes the sequence: every metric still open becomes `inconclusive`.
pub fn close(metrics: &mut [AbMetric]) {
    for m in metrics {
        if m.verdict.is_open() {
            m.verdict = AbVerdict::Inconclusive;
        }
    }
}
