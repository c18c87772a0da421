//! Stage "history": what one recorded job becomes in the store — pure functions from a
//! [`RunRecord`] to rows. A job's summary value of a metric is the median of its finite
//! values, the first one left out when there are three or more (the first save or logged
//! step is a warm-up); a metric with one value (peak memory) is that value.

use goldgate_schema::{RunRecord, StepValues};

/// Who ran it: what the record itself does not say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestContext {
    /// The commit under test; `None` takes the record's `fingerprint.workload_commit`, else
    /// `checkout`.
    pub commit: Option<String>,
    /// The commit checked out where goldgate runs (`git rev-parse HEAD`), when it is a git
    /// checkout: the commit of a run nothing else names (else `unknown`).
    pub checkout: Option<String>,
    /// The branch the run belongs to (`main`, a PR's head branch).
    pub branch: String,
    /// When the ingest happens (RFC 3339).
    pub now: String,
}

/// What one ingest added (a rerun of the same folder adds nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngestCount {
    pub runs: u64,
    pub jobs: u64,
    pub skipped_jobs: u64,
    /// Jobs of `goldgate ab` left out: an arm of a comparison is no run of a branch (a
    /// planted B arm stored as `main` would be taken for main's history).
    pub ab_jobs: u64,
    pub metrics: u64,
    pub samples: u64,
}

impl IngestCount {
    pub fn add(&mut self, other: IngestCount) {
        self.runs += other.runs;
        self.jobs += other.jobs;
        self.skipped_jobs += other.skipped_jobs;
        self.ab_jobs += other.ab_jobs;
        self.metrics += other.metrics;
        self.samples += other.samples;
    }
}

/// A run's row.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    pub run_id: String,
    pub started_at: String,
    pub commit: String,
    pub branch: String,
    pub platform: String,
    pub goldgate_version: String,
}

/// A job's row, its metrics' summaries and its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRow {
    pub job_id: String,
    pub case: String,
    pub variant: String,
    pub repeat: i64,
    pub platform: String,
    pub outcome: String,
    pub passed: bool,
    pub started_at: String,
    pub wall_seconds: f64,
    pub gpu_fingerprint: String,
    pub host: String,
    pub results_path: String,
    /// `(metric, summary, points)`.
    pub metrics: Vec<(String, Option<f64>, i64)>,
    /// `(metric, step, value)`; `None` is a NaN.
    pub samples: Vec<(String, i64, Option<f64>)>,
}

/// The run row of the records of one run (the earliest start, the first record's platform).
pub fn run_row(records: &[&RunRecord], ctx: &IngestContext) -> Option<RunRow> {
    let first = records
        .iter()
        .min_by(|a, b| a.started_at.cmp(&b.started_at))?;
    let commit = ctx
        .commit
        .clone()
        .or_else(|| {
            records
                .iter()
                .find_map(|r| r.fingerprint.workload_commit.clone())
        })
        .or_else(|| ctx.checkout.clone())
        .unwrap_or_else(|| "unknown".to_owned());
    Some(RunRow {
        run_id: first.run_id.clone(),
        started_at: first.started_at.clone(),
        commit,
        branch: ctx.branch.clone(),
        platform: first.platform.clone(),
        goldgate_version: first.fingerprint.goldgate_version.clone(),
    })
}

/// One job's rows; `results_path` is where its `results.json` was read.
pub fn job_row(record: &RunRecord, results_path: &str) -> JobRow {
    let metrics = record
        .metrics
        .iter()
        .map(|(name, values)| (name.clone(), summary(values), values.0.len() as i64))
        .collect();
    let samples = record
        .metrics
        .iter()
        .flat_map(|(name, values)| {
            values.0.iter().map(move |(step, v)| {
                let step = i64::try_from(*step).unwrap_or(i64::MAX);
                (name.clone(), step, v.is_finite().then_some(*v))
            })
        })
        .collect();
    JobRow {
        job_id: record.job_id.clone(),
        case: record.case.clone(),
        variant: record.variant.name.clone(),
        repeat: i64::from(record.repeat),
        platform: record.platform.clone(),
        outcome: record.outcome.label(),
        passed: record.outcome.passed(),
        started_at: record.started_at.clone(),
        wall_seconds: record.wall_seconds,
        gpu_fingerprint: gpu_fingerprint(record),
        host: record.fingerprint.host.clone(),
        results_path: results_path.to_owned(),
        metrics,
        samples,
    }
}

/// `NVIDIA H200 x1, driver 580.159.04, CUDA 13.0`, or `no GPU`.
pub fn gpu_fingerprint(record: &RunRecord) -> String {
    let f = &record.fingerprint;
    let Some(model) = &f.gpu_model else {
        return "no GPU".to_owned();
    };
    let mut text = format!("{model} x{}", f.gpu_count.unwrap_or(0));
    if let Some(d) = &f.driver_version {
        text.push_str(&format!(", driver {d}"));
    }
    if let Some(c) = &f.cuda_version {
        text.push_str(&format!(", CUDA {c}"));
    }
    text
}

/// The job's summary of one metric (see the module doc); `None` when no value is finite.
pub fn summary(values: &StepValues) -> Option<f64> {
    let finite: Vec<f64> = values
        .0
        .values()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let kept = if finite.len() >= 3 {
        &finite[1..]
    } else {
        &finite[..]
    };
    median(kept)
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_schema::VariantRecord;

    fn steps(values: &[f64]) -> StepValues {
        StepValues(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u64 + 1, *v))
                .collect(),
        )
    }

    #[test]
    fn the_summary_leaves_out_the_first_of_three_or_more_and_every_nan() {
        assert_eq!(summary(&steps(&[9.0, 1.0, 3.0, 2.0])), Some(2.0));
        assert_eq!(summary(&steps(&[9.0, 1.0])), Some(5.0));
        assert_eq!(summary(&steps(&[4.0])), Some(4.0));
        assert_eq!(summary(&steps(&[f64::NAN, 7.0])), Some(7.0));
        assert_eq!(summary(&steps(&[f64::NAN])), None);
    }

    #[test]
    fn a_job_row_keeps_every_sample_and_a_nan_as_null() {
        let variant = VariantRecord {
            name: "default".into(),
            slug: "default".into(),
            choices: Default::default(),
        };
        let mut r = RunRecord::passed("m/c", variant, 2, "h200");
        r.metrics
            .insert("lm loss".into(), steps(&[3.0, f64::NAN, 2.0]));
        let row = job_row(&r, "run/m/c/default/2/results.json");
        assert_eq!(row.repeat, 2);
        assert!(row.passed);
        assert_eq!(row.metrics, vec![("lm loss".into(), Some(2.5), 3)]);
        assert_eq!(row.samples[1], ("lm loss".into(), 2, None));
        assert_eq!(row.gpu_fingerprint, "no GPU");
    }
}
