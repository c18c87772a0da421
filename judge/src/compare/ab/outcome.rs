//! Stage "compare": what one `goldgate ab` run decided — its jobs (arm, block, pair), every
//! metric's A/B verdict, B's golden comparison of the metrics that are not timed — and the exit
//! code that follows from it (`ab.json`, and the data every A/B report renders).
//!
//! **Exit rule.** A regression (a timing interval wholly above `+min_effect`, a counter or loss
//! off A's value under its rule, a golden regression of B, a metric one arm lacks) exits 1; a
//! failed job 3. `inconclusive` (and `not-sampled`, a metric one arm's samplers could not
//! read) exits 0 with a loud warning, or 1 under `--strict`: the gate's promise is its
//! false-alarm rate, and failing every PR a noisy runner could not decide at `--max-pairs`
//! would break that promise for the noise's sake; a release branch that must
//! prove "no slowdown of `min_effect`" runs `--strict`. A golden file missing for B's variant
//! is a note, never an exit code: B's untimed metrics are still judged against A's, the
//! reference an A/B run brings with it (`bless` B's jobs to add the goldens).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::covariate::CovariateUse;
use super::metric::{AbMetric, AbTest, AbVerdict};
use super::precision::Precision;
use super::within_job::InJobTest;
use super::within_job::checks::InJobChecks;
use crate::compare::error::CompareError;
use goldgate_core::config::Sequential;
use goldgate_schema::Exit;
use goldgate_schema::{MetricResult, Verdict};

/// `ab.json`'s version.
pub const AB_SCHEMA_VERSION: u32 = 1;

/// How the arms were put side by side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmSpec {
    /// `a` or `b`.
    pub arm: String,
    /// Variant choices (`AXIS=VALUE`), the selection's own and the arm's.
    pub variants: Vec<String>,
    /// Extra environment (`K=V`), values of secret names redacted.
    pub env: Vec<String>,
    /// The folder the case's relative entry words resolve in, if not the current one.
    pub dir: Option<String>,
    /// Settings the probe switches while the job runs (`save-delay=0.04`; within-job only).
    pub switches: Vec<String>,
}

impl ArmSpec {
    /// `empty_cache=level2, GOLDGATE_PLANT_SAVE_DELAY_S=0.04, save-delay=0.04`, or `the case as is`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.variants.clone();
        parts.extend(self.env.iter().cloned());
        parts.extend(self.switches.iter().cloned());
        if let Some(dir) = &self.dir {
            parts.push(format!("entry under {dir}"));
        }
        if parts.is_empty() {
            "the case as is".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// How an A/B run compared its arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbModeKind {
    /// Each job runs one arm; jobs pair up in ABBA/BAAB blocks (`compare::ab::across_jobs`).
    Job,
    /// Every job runs both arms, switched by the probe save by save (`compare::ab::within_job`).
    WithinJob,
}

impl AbModeKind {
    /// `job` or `within-job`, as every report writes it.
    pub fn label(self) -> &'static str {
        match self {
            AbModeKind::Job => "job",
            AbModeKind::WithinJob => "within-job",
        }
    }
}

/// The mode an A/B run used, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbMode {
    pub kind: AbModeKind,
    /// Why this mode (e.g. the arms differ in a variant, fixed when the process starts).
    pub reason: String,
}

/// One job of the sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbJob {
    /// 1-based position in the order (warm-up jobs first).
    pub index: u32,
    /// Its run id: the run folder under the A/B folder (`03-b`).
    pub run_id: String,
    pub arm: String,
    /// 1-based block and pair; 0 for a warm-up job.
    pub block: u32,
    pub pair: u32,
    pub warmup: bool,
    /// `results.json`, relative to the A/B folder.
    pub results: String,
    /// `passed`, `failed (exit 1)`, ... once it ran.
    pub outcome: Option<String>,
    pub wall_seconds: Option<f64>,
    /// What failed, for a job that did not pass (`failed to launch: torchrun: not found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// One `goldgate ab` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbReport {
    pub schema_version: u32,
    pub id: String,
    pub case: String,
    pub platform: String,
    /// Job-level or within-job, and why.
    pub mode: AbMode,
    /// The seed of the block order (ABBA or BAAB per block).
    pub seed: u64,
    /// Job-level's test (its `max_pairs` are looks of job pairs).
    pub sequential: Sequential,
    /// Within-job's test (its looks are jobs), when that mode ran.
    pub within_job: Option<InJobTest>,
    pub arms: [ArmSpec; 2],
    pub jobs: Vec<AbJob>,
    /// Complete pairs judged.
    pub pairs: usize,
    pub metrics: Vec<AbMetric>,
    /// B's jobs against the goldens, metrics that are not timed only.
    pub goldens: Vec<MetricResult>,
    /// Why no golden was judged (no golden file for B's variant), if so.
    pub golden_note: Option<String>,
    /// The save/iteration covariate (`ab --covariate`), when asked for: its settings and
    /// whether, or from which pair on why not, it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariate: Option<CovariateUse>,
    pub warnings: Vec<String>,
    /// Whether the sequence is over (`false` while jobs still run).
    pub finished: bool,
    /// Sum of every job's wall time, warm-up included (GPU time on one machine).
    pub job_seconds: f64,
    /// The most GPUs a job saw (NVML); 0 on a machine without one, where `job_seconds` is no
    /// GPU time. Absent (0) in older reports.
    #[serde(default)]
    pub gpus: u32,
    /// The exit code once gated.
    pub exit_code: Option<i32>,
    /// `--precision`: the half-width asked for and where the intervals stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Precision>,
    /// Within-job: the design checks (carry-over, order, end of job) over every job so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<InJobChecks>,
}

impl AbReport {
    /// The overall verdict: the worst metric's, golden regressions included; a failed job
    /// reads as `regression` here and exits 3 through [`AbReport::exit`].
    pub fn verdict(&self) -> AbVerdict {
        let golden_bad = self
            .goldens
            .iter()
            .any(|m| matches!(m.verdict, Verdict::Regression | Verdict::MissingMetric));
        let worst = self
            .metrics
            .iter()
            .map(|m| m.verdict)
            .max()
            .unwrap_or(AbVerdict::Inconclusive);
        if golden_bad || self.job_failed() {
            AbVerdict::Regression
        } else {
            worst
        }
    }

    /// Whether a measured job did not pass.
    pub fn job_failed(&self) -> bool {
        self.jobs
            .iter()
            .any(|j| j.outcome.as_deref().is_some_and(|o| o != "passed"))
    }

    /// The exit code (module doc: the rule and why).
    pub fn exit(&self, strict: bool, fail_on_improvement: bool) -> Exit {
        if self.job_failed() {
            return Exit::Failure;
        }
        let mut exit = Exit::Pass;
        for m in &self.metrics {
            let e = match m.verdict {
                AbVerdict::Pass => Exit::Pass,
                AbVerdict::Improvement if fail_on_improvement => Exit::Regression,
                AbVerdict::Improvement => Exit::Pass,
                AbVerdict::Undecided | AbVerdict::Inconclusive | AbVerdict::NotSampled
                    if strict =>
                {
                    Exit::Regression
                }
                AbVerdict::Undecided | AbVerdict::Inconclusive | AbVerdict::NotSampled => {
                    Exit::Pass
                }
                AbVerdict::MissingMetric | AbVerdict::Regression => Exit::Regression,
            };
            exit = exit.worst(e);
        }
        for m in &self.goldens {
            exit = exit.worst(m.verdict.exit(strict, fail_on_improvement));
        }
        exit
    }

    /// The timing metrics the A/B judged with an interval: where it ran, these are gated by it,
    /// not by the goldens.
    pub fn timed(&self) -> impl Iterator<Item = &str> {
        self.metrics
            .iter()
            .filter(|m| matches!(m.test, AbTest::Sequential | AbTest::SignedRank))
            .map(|m| m.metric.as_str())
    }

    /// Reads back a saved A/B result (`ab --json FILE`, `ab.json`); another schema version is
    /// refused, naming both.
    pub fn parse(path: &Path, text: &str) -> Result<AbReport, CompareError> {
        let invalid = |message: String| CompareError::SavedAb {
            path: path.to_path_buf(),
            message,
        };
        let report: AbReport =
            crate::compare::saved::read_versioned(text, &[AB_SCHEMA_VERSION], "A/B result")
                .map_err(invalid)?;
        if !report.finished {
            return Err(invalid(
                "the A/B sequence did not finish (its jobs were still running)".into(),
            ));
        }
        Ok(report)
    }

    /// Metrics that ended `inconclusive` (for the loud warning).
    pub fn inconclusive(&self) -> Vec<&str> {
        self.metrics
            .iter()
            .filter(|m| m.verdict == AbVerdict::Inconclusive)
            .map(|m| m.metric.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_schema::Unit;

    fn metric(verdict: AbVerdict) -> AbMetric {
        AbMetric {
            metric: "checkpoint-blocking-time".into(),
            unit: Unit::Seconds,
            test: AbTest::Sequential,
            verdict,
            a: Some(1.0),
            b: Some(1.1),
            change: Some(0.1),
            interval: Some((0.0, 0.2)),
            level: Some(0.998),
            pairs: 4,
            detail: String::new(),
        }
    }

    fn report(verdicts: &[AbVerdict]) -> AbReport {
        AbReport {
            schema_version: AB_SCHEMA_VERSION,
            id: "x".into(),
            case: "m/c".into(),
            platform: "p".into(),
            mode: AbMode {
                kind: AbModeKind::Job,
                reason: "test".into(),
            },
            seed: 1,
            sequential: Sequential::default(),
            within_job: None,
            arms: Default::default(),
            jobs: Vec::new(),
            pairs: 4,
            metrics: verdicts.iter().map(|v| metric(*v)).collect(),
            goldens: Vec::new(),
            golden_note: None,
            covariate: None,
            warnings: Vec::new(),
            finished: true,
            job_seconds: 0.0,
            gpus: 0,
            exit_code: None,
            precision: None,
            checks: None,
        }
    }

    #[test]
    fn exit_rule() {
        use AbVerdict::*;
        let cases = [
            (vec![Pass, Improvement], false, Exit::Pass),
            (vec![Pass, Inconclusive], false, Exit::Pass),
            (vec![Pass, Inconclusive], true, Exit::Regression),
            (vec![Regression, Pass], false, Exit::Regression),
            (vec![MissingMetric], false, Exit::Regression),
            (vec![Pass, NotSampled], false, Exit::Pass),
            (vec![Pass, NotSampled], true, Exit::Regression),
        ];
        for (verdicts, strict, want) in cases {
            let r = report(&verdicts);
            assert_eq!(r.exit(strict, false), want, "{verdicts:?} strict {strict}");
        }
        let mut r = report(&[Pass]);
        r.golden_note = Some("no golden".into());
        assert_eq!(r.exit(false, false), Exit::Pass);
        assert_eq!(
            r.exit(true, false),
            Exit::Pass,
            "a missing golden is a note"
        );
        r.jobs.push(AbJob {
            index: 1,
            run_id: "01-a".into(),
            arm: "a".into(),
            block: 1,
            pair: 1,
            warmup: false,
            results: String::new(),
            outcome: Some("failed (exit 1)".into()),
            wall_seconds: None,
            failure: None,
        });
        assert_eq!(r.exit(false, false), Exit::Failure);
        assert_eq!(r.verdict(), AbVerdict::Regression);
    }
}
