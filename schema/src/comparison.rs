//! The comparison (`goldgate compare --json`, and what every report renders): [`Verdict`] per
//! metric and per job, [`MetricResult`], [`JobComparison`], [`Comparison`] — and the one
//! mapping from a comparison to the documented exit code ([`Comparison::exit`]).
//!
//! A regression is data here, never an `Err`.

use std::path::PathBuf;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::exit::Exit;

/// Version of the serialized [`Comparison`]. Bump on incompatible changes.
///
/// 2: the verdict `not-sampled` (and its count): a metric the job's samplers could not read.
pub const COMPARISON_SCHEMA_VERSION: u32 = 2;

/// Versions this goldgate reads (a version 1 comparison has no `not-sampled`).
pub const READABLE_COMPARISON_VERSIONS: [u32; 2] = [1, 2];

/// The judgement of one metric, or of a job (the worst of its metrics).
///
/// Ordered from best to worst, so `max()` over metric verdicts gives the job verdict.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within tolerance.
    Pass,
    /// Beyond tolerance in the good direction (e.g. faster, less memory). Passes the gate
    /// unless `--fail-on-improvement`, which forces the golden file to be refreshed.
    Improvement,
    /// Repeats spread more than the metric's `max_cv` allows and their interval straddles the
    /// tolerance: no verdict can be trusted. Exit 0 with a warning; exit 1 under `--strict`.
    Unstable,
    /// The golden file has the metric, and the job's samplers tried and could not read it (a
    /// job that ended before its memory was first read): neither a regression nor a pass of
    /// that metric. Exit 0 with a warning; exit 1 under `--strict`.
    NotSampled,
    /// The golden file has the metric, the job did not record it. Fails the gate (exit 1).
    MissingMetric,
    /// No golden file exists for the job's case and platform. Exit 2 (configuration problem:
    /// run `goldgate bless`).
    MissingGolden,
    /// Beyond tolerance in the bad direction. Exit 1.
    Regression,
    /// A repeat of the job failed, crashed or timed out; nothing was compared. Exit 3.
    JobFailed,
}

impl Verdict {
    /// Every verdict, best first.
    pub const ALL: [Verdict; 8] = [
        Verdict::Pass,
        Verdict::Improvement,
        Verdict::Unstable,
        Verdict::NotSampled,
        Verdict::MissingMetric,
        Verdict::MissingGolden,
        Verdict::Regression,
        Verdict::JobFailed,
    ];

    /// The kebab-case label used in every report (`missing-golden`).
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Improvement => "improvement",
            Verdict::Unstable => "unstable",
            Verdict::NotSampled => "not-sampled",
            Verdict::MissingMetric => "missing-metric",
            Verdict::MissingGolden => "missing-golden",
            Verdict::Regression => "regression",
            Verdict::JobFailed => "job-failed",
        }
    }

    /// The exit code this verdict alone maps to, under the two gate flags.
    pub fn exit(self, strict: bool, fail_on_improvement: bool) -> Exit {
        match self {
            Verdict::Pass => Exit::Pass,
            Verdict::Improvement if fail_on_improvement => Exit::Regression,
            Verdict::Improvement => Exit::Pass,
            Verdict::Unstable | Verdict::NotSampled if strict => Exit::Regression,
            Verdict::Unstable | Verdict::NotSampled => Exit::Pass,
            Verdict::MissingMetric | Verdict::Regression => Exit::Regression,
            Verdict::MissingGolden => Exit::Usage,
            Verdict::JobFailed => Exit::Failure,
        }
    }
}

/// How a metric's numbers are formatted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Bytes (render as KiB/MiB/GiB).
    Bytes,
    /// Seconds (render as ms/s).
    Seconds,
    /// A count (num-zeros).
    Count,
    /// A plain number (losses).
    Plain,
}

impl Unit {
    /// The unit a metric name (or rule pattern) implies: `*-bytes` are bytes,
    /// `*-time`/`*-latency`/`*-seconds` and `*-seconds-per-*` are seconds, `num-*`, `*-calls`,
    /// `*-retries` and `*-ooms` are counts.
    pub fn of_metric(name: &str) -> Unit {
        if name.ends_with("-bytes") {
            Unit::Bytes
        } else if name.ends_with("-time")
            || name.ends_with("-latency")
            || name.ends_with("-seconds")
            || name.contains("-seconds-per-")
        {
            Unit::Seconds
        } else if name.starts_with("num-")
            || name.ends_with("-calls")
            || name.ends_with("-retries")
            || name.ends_with("-ooms")
        {
            Unit::Count
        } else {
            Unit::Plain
        }
    }
}

/// The judgement of one metric of one job (all its repeats together).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct MetricResult {
    /// Metric name as in the golden file (`lm loss`, `checkpoint-blocking-time`).
    pub metric: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The golden value compared: the median over the step window (iteration-time), the
    /// median of the counted saves (per-save metrics), the scalar (memory peaks), or for
    /// per-step metrics the golden value at the worst step (the last step when all pass).
    pub golden: Option<f64>,
    /// The measured value in the same sense, median over repeats.
    pub now: Option<f64>,
    /// `(now - golden) / |golden| * 100`; `None` when either side is missing or golden is 0.
    pub delta_pct: Option<f64>,
    /// 95 % confidence interval of `now` (seeded percentile bootstrap of the median over
    /// repeats), same unit; `None` with a single repeat or for per-step metrics.
    pub interval: Option<(f64, f64)>,
    /// Human description of the tolerance: `"rtol 5% + atol 0.05 s"`, `"exact + rtol 5%"`.
    pub tolerance: String,
    /// For formatting.
    pub unit: Unit,
    /// Repeats that contributed.
    pub repeats: usize,
    /// One line of explanation: `"3 of 100 steps beyond tolerance (allowed 1): 41, 42, 57"`,
    /// `"cv 31% > max_cv 20%"`, `"median of saves 2..3 (first 1 skipped)"`.
    pub detail: String,
    /// The band judged against (`golden ± (atol + rtol·|golden|)`), same unit; for band-rule
    /// metrics, `None` otherwise and in comparisons saved before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<(f64, f64)>,
    /// Why a pass passed when that is not obvious: a change beyond `rtol` that `atol` or the
    /// repeats' interval let through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_reason: Option<String>,
}

/// The judgement of one job: a case under one variant, all its repeats together.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct JobComparison {
    /// `<model>/<case>`.
    pub case: String,
    /// Variant name (`allocator=gc80,checkpoint=async`, or `default`).
    pub variant: String,
    /// Path-safe variant slug.
    pub variant_slug: String,
    /// Job ids of the repeats (`<case>@<variant>#<repeat>`).
    pub job_ids: Vec<String>,
    /// Outcome label of the worst repeat (`passed`, `failed (exit 1)`, `timed out after 60 s`).
    pub outcome: String,
    /// The log line explaining a failure, when a repeat failed and one matched.
    pub failure_line: Option<String>,
    /// The last lines of the failed repeat's log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// The failed repeat's log file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// Worst metric verdict; `JobFailed` when any repeat failed; `MissingGolden` without a golden.
    pub verdict: Verdict,
    /// The golden file compared against.
    pub golden_path: Option<PathBuf>,
    /// The case's `model_config.yaml`, when found (GitHub annotations point at it).
    pub config_path: Option<PathBuf>,
    /// One entry per compared metric, in golden-file order of names (sorted).
    pub metrics: Vec<MetricResult>,
    /// The `results.json` files of the repeats.
    pub records: Vec<PathBuf>,
    /// The memory-timeline SVG, when one was rendered.
    pub svg: Option<PathBuf>,
    /// Wall time of the repeats together, in seconds (JUnit's `time`); absent in comparisons
    /// saved before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
}

/// Jobs per verdict.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub struct Counts {
    pub pass: usize,
    pub improvement: usize,
    pub unstable: usize,
    /// Absent in version 1 comparisons.
    #[serde(default)]
    pub not_sampled: usize,
    pub missing_metric: usize,
    pub missing_golden: usize,
    pub regression: usize,
    pub job_failed: usize,
}

impl Counts {
    /// Counts the job verdicts.
    pub fn of(jobs: &[JobComparison]) -> Counts {
        let mut c = Counts::default();
        for j in jobs {
            *c.slot(j.verdict) += 1;
        }
        c
    }

    /// Jobs with this verdict.
    pub fn get(&self, v: Verdict) -> usize {
        let mut copy = *self;
        *copy.slot(v)
    }

    fn slot(&mut self, v: Verdict) -> &mut usize {
        match v {
            Verdict::Pass => &mut self.pass,
            Verdict::Improvement => &mut self.improvement,
            Verdict::Unstable => &mut self.unstable,
            Verdict::NotSampled => &mut self.not_sampled,
            Verdict::MissingMetric => &mut self.missing_metric,
            Verdict::MissingGolden => &mut self.missing_golden,
            Verdict::Regression => &mut self.regression,
            Verdict::JobFailed => &mut self.job_failed,
        }
    }

    /// All jobs.
    pub fn total(&self) -> usize {
        Verdict::ALL.iter().map(|v| self.get(*v)).sum()
    }
}

/// The result of `goldgate compare`: every job judged, ready to render.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Comparison {
    /// [`COMPARISON_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The golden platform compared against (`dgx_h100`, `dev_cpu`).
    pub platform: String,
    /// Jobs sorted by case, then variant name.
    pub jobs: Vec<JobComparison>,
    /// Jobs per verdict.
    pub counts: Counts,
    /// Things the user should know that are not verdicts (unstable metrics, env mismatches
    /// allowed by flag, metrics recorded without a golden value).
    pub warnings: Vec<String>,
    /// What the gate decided, once `compare` (or `run`) has gated: saved with the JSON so that a
    /// report rendered later from it (the PR comment) says what the check said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateDecision>,
}

/// The gate's flags and the exit code they gave.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct GateDecision {
    /// `--strict`: unstable metrics fail.
    pub strict: bool,
    /// `--fail-on-improvement`: improvements fail.
    pub fail_on_improvement: bool,
    /// The exit code (0-3).
    pub exit_code: u8,
}

impl Comparison {
    /// Builds a comparison, computing the counts.
    pub fn new(platform: String, jobs: Vec<JobComparison>, warnings: Vec<String>) -> Comparison {
        Comparison {
            schema_version: COMPARISON_SCHEMA_VERSION,
            platform,
            counts: Counts::of(&jobs),
            jobs,
            warnings,
            gate: None,
        }
    }

    /// The comparison with the gate's decision under these flags recorded in it.
    pub fn gated(mut self, strict: bool, fail_on_improvement: bool) -> Comparison {
        self.gate = Some(GateDecision {
            strict,
            fail_on_improvement,
            exit_code: self.exit(strict, fail_on_improvement).code(),
        });
        self
    }

    /// The exit code of the gate: 3 if a job failed, else 2 if a golden is missing, else 1 for a
    /// regression or missing metric (and, under the flags, unstable metrics or improvements),
    /// else 0. Metric verdicts are consulted too, so an unstable metric in a job that also
    /// improved still fails under `--strict`.
    pub fn exit(&self, strict: bool, fail_on_improvement: bool) -> Exit {
        self.jobs
            .iter()
            .flat_map(|j| std::iter::once(j.verdict).chain(j.metrics.iter().map(|m| m.verdict)))
            .map(|v| v.exit(strict, fail_on_improvement))
            .fold(Exit::Pass, Exit::worst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(verdict: Verdict, metric_verdicts: &[Verdict]) -> JobComparison {
        JobComparison {
            case: "demo/ckpt".into(),
            variant: "default".into(),
            variant_slug: "default".into(),
            job_ids: vec!["demo/ckpt@default#1".into()],
            outcome: "passed".into(),
            failure_line: None,
            log_tail: Vec::new(),
            log: None,
            verdict,
            golden_path: None,
            config_path: None,
            wall_seconds: None,
            metrics: metric_verdicts
                .iter()
                .map(|v| MetricResult {
                    metric: "lm loss".into(),
                    verdict: *v,
                    golden: Some(1.0),
                    now: Some(1.0),
                    delta_pct: Some(0.0),
                    interval: None,
                    tolerance: "exact".into(),
                    unit: Unit::Plain,
                    repeats: 1,
                    detail: String::new(),
                    band: None,
                    pass_reason: None,
                })
                .collect(),
            records: vec![],
            svg: None,
        }
    }

    #[test]
    fn verdicts_order_best_to_worst_and_serialize_kebab() {
        assert!(Verdict::ALL.windows(2).all(|w| w[0] < w[1]));
        for v in Verdict::ALL {
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(text, format!("\"{}\"", v.label()));
        }
    }

    #[test]
    fn exit_codes_per_verdict_and_flags() {
        use Verdict::*;
        let cases = [
            (vec![Pass], false, false, 0),
            (vec![Improvement], false, false, 0),
            (vec![Improvement], false, true, 1),
            (vec![Unstable], false, false, 0),
            (vec![Unstable], true, false, 1),
            (vec![MissingMetric], false, false, 1),
            (vec![Regression, Pass], false, false, 1),
            (vec![MissingGolden, Regression], false, false, 2),
            (vec![JobFailed, MissingGolden], false, false, 3),
        ];
        for (verdicts, strict, foi, code) in cases {
            let jobs = verdicts.iter().map(|v| job(*v, &[])).collect();
            let c = Comparison::new("dev_cpu".into(), jobs, vec![]);
            assert_eq!(c.exit(strict, foi).code(), code, "{verdicts:?}");
        }
    }

    #[test]
    fn metric_verdicts_count_under_strict() {
        let c = Comparison::new(
            "h200".into(),
            vec![job(Verdict::Improvement, &[Verdict::Unstable])],
            vec![],
        );
        assert_eq!(c.exit(false, false), Exit::Pass);
        assert_eq!(c.exit(true, false), Exit::Regression);
    }

    #[test]
    fn counts_per_verdict() {
        let jobs = vec![
            job(Verdict::Pass, &[]),
            job(Verdict::Pass, &[]),
            job(Verdict::JobFailed, &[]),
        ];
        let c = Counts::of(&jobs);
        assert_eq!((c.pass, c.job_failed, c.total()), (2, 1, 3));
        assert_eq!(c.get(Verdict::Regression), 0);
    }
}
