//! Stage "compare": where the noise of unchanged jobs comes from — how far jobs differ from one
//! another against how far samples differ within a job (one-way random-effects variance
//! components on the log scale), which jobs stand out, and what the jobs' fingerprints say
//! about them (the `--settle` mode, the page cache and the node's I/O while they ran).
//!
//! `goldgate power` prints this beside the power of each rule: the between-job part is what no
//! number of samples per job removes, so it decides the smallest change a gate can see, and the
//! fingerprint figures say which part of it a setting such as `--settle sync` could control.

use crate::compare::golden::band::{Series, samples};
use crate::compare::stats::summary;
use crate::compare::stats::t_test;
use goldgate_core::rules::Rule;
use goldgate_schema::RunRecord;

/// The noise of one metric over unchanged jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct Noise {
    pub jobs: usize,
    /// Fewest and most samples a job gave (saves after the warm-up ones, window steps).
    pub samples: (usize, usize),
    /// Median of the per-job values, in the metric's unit.
    pub center: f64,
    /// Spread of the per-job values (standard deviation of their logarithms ≈ a coefficient of
    /// variation): what a test on per-job values sees.
    pub job_spread: Option<f64>,
    /// Variance components of the log samples: between jobs and within a job (per sample).
    pub between: Option<f64>,
    pub within: Option<f64>,
    /// Intra-class correlation: the share of a sample's variance that is the job's.
    pub icc: Option<f64>,
    /// Jobs outside the others' 99 % prediction interval: (job index, change from the others'
    /// median).
    pub outliers: Vec<(usize, f64)>,
    /// Per `--settle` mode: jobs and the spread of their values.
    pub by_settle: Vec<(String, usize, Option<f64>)>,
    /// Rank correlation of the per-job values with fingerprint figures: (figure, jobs, rho).
    pub covariates: Vec<(&'static str, usize, f64)>,
}

/// The per-job value and samples of `metric` for each record (in order); `None` for a record
/// without a finite value.
pub(crate) fn job_samples(
    rule: &Rule,
    metric: &str,
    records: &[&RunRecord],
) -> Vec<Option<Vec<f64>>> {
    records
        .iter()
        .map(|r| {
            let series: &Series = &r.metrics.get(metric)?.0;
            let last = series.keys().next_back().copied().unwrap_or(0);
            samples(rule, series, last).map(|(v, _)| v)
        })
        .collect()
}

/// The noise of `metric` over `records` (unchanged jobs of one case and variant).
pub(crate) fn noise(rule: &Rule, metric: &str, records: &[&RunRecord]) -> Option<Noise> {
    let per_job = job_samples(rule, metric, records);
    let kept: Vec<(&RunRecord, Vec<f64>)> = records
        .iter()
        .zip(per_job)
        .filter_map(|(r, s)| Some((*r, s?)))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let values: Vec<f64> = kept
        .iter()
        .filter_map(|(_, s)| summary::median(s))
        .collect();
    let sizes = kept.iter().map(|(_, s)| s.len());
    let (between, within) =
        components(&kept.iter().map(|(_, s)| s.as_slice()).collect::<Vec<_>>()).unzip();
    Some(Noise {
        jobs: kept.len(),
        samples: (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0)),
        center: summary::median(&values).unwrap_or(f64::NAN),
        job_spread: log_sd(&values),
        between,
        within,
        icc: between.zip(within).and_then(|(b, w)| {
            let total = b * b + w * w;
            (total > 0.0).then(|| b * b / total)
        }),
        outliers: t_test::outliers(&values)
            .into_iter()
            .map(|i| (i, relative_to_others(&values, i)))
            .collect(),
        by_settle: by_settle(&kept, &values),
        covariates: covariates(&kept, &values),
    })
}

/// Standard deviation of the logarithms (positive values), else of the values relative to
/// their mean; `None` for fewer than two.
fn log_sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let log = values.iter().all(|v| *v > 0.0);
    let xs: Vec<f64> = values
        .iter()
        .map(|v| if log { v.ln() } else { *v })
        .collect();
    let m = t_test::mean(&xs);
    let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt();
    Some(if log {
        sd
    } else {
        sd / m.abs().max(f64::MIN_POSITIVE)
    })
}

/// Between-job and within-job standard deviations of log samples (one-way ANOVA estimates;
/// the between part is 0 when the jobs differ less than their samples predict). `None` with
/// fewer than two jobs, no job of two samples or a value that is not positive.
fn components(jobs: &[&[f64]]) -> Option<(f64, f64)> {
    let n: usize = jobs.iter().map(|j| j.len()).sum();
    let k = jobs.len();
    if k < 2 || n <= k || jobs.iter().flat_map(|j| j.iter()).any(|v| *v <= 0.0) {
        return None;
    }
    let logs: Vec<Vec<f64>> = jobs
        .iter()
        .map(|j| j.iter().map(|v| v.ln()).collect())
        .collect();
    let grand = logs.iter().flatten().sum::<f64>() / n as f64;
    let means: Vec<f64> = logs.iter().map(|j| t_test::mean(j)).collect();
    let ssw: f64 = logs
        .iter()
        .zip(&means)
        .map(|(j, m)| j.iter().map(|x| (x - m).powi(2)).sum::<f64>())
        .sum();
    let ssb: f64 = logs
        .iter()
        .zip(&means)
        .map(|(j, m)| j.len() as f64 * (m - grand).powi(2))
        .sum();
    let (msb, msw) = (ssb / (k - 1) as f64, ssw / (n - k) as f64);
    let sizes_sq: f64 = logs.iter().map(|j| (j.len() * j.len()) as f64).sum();
    let m0 = (n as f64 - sizes_sq / n as f64) / (k - 1) as f64;
    let between = ((msb - msw) / m0).max(0.0);
    Some((between.sqrt(), msw.sqrt()))
}

fn relative_to_others(values: &[f64], i: usize) -> f64 {
    let others: Vec<f64> = (0..values.len())
        .filter(|&j| j != i)
        .map(|j| values[j])
        .collect();
    values[i] / summary::median(&others).unwrap_or(f64::NAN) - 1.0
}

fn by_settle(kept: &[(&RunRecord, Vec<f64>)], values: &[f64]) -> Vec<(String, usize, Option<f64>)> {
    let mut modes: Vec<String> = kept.iter().map(|(r, _)| settle_of(r)).collect();
    modes.sort();
    modes.dedup();
    if modes.len() < 2 {
        return Vec::new();
    }
    modes
        .into_iter()
        .map(|mode| {
            let vs: Vec<f64> = kept
                .iter()
                .zip(values)
                .filter(|((r, _), _)| settle_of(r) == mode)
                .map(|(_, v)| *v)
                .collect();
            (mode, vs.len(), log_sd(&vs))
        })
        .collect()
}

fn settle_of(r: &RunRecord) -> String {
    r.fingerprint
        .io
        .as_ref()
        .map_or_else(|| "unknown".to_string(), |io| io.settle.clone())
}

/// A fingerprint figure of a job, when recorded.
type Figure = fn(&RunRecord) -> Option<f64>;

/// The fingerprint figures a job's value is correlated with.
const FIGURES: [(&str, Figure); 5] = [
    ("dirty pages at start", |r| io(r, |i| i.dirty_start_bytes)),
    ("dirty pages, peak", |r| io(r, |i| i.dirty_peak_bytes)),
    ("writeback, peak", |r| io(r, |i| i.writeback_peak_bytes)),
    ("I/O pressure stall", |r| io(r, |i| i.io_pressure_some_us)),
    ("disk busy time", |r| io(r, |i| i.disk_busy_ms)),
];

fn io(r: &RunRecord, f: fn(&goldgate_schema::NodeIo) -> Option<u64>) -> Option<f64> {
    r.fingerprint.io.as_ref().and_then(f).map(|v| v as f64)
}

fn covariates(kept: &[(&RunRecord, Vec<f64>)], values: &[f64]) -> Vec<(&'static str, usize, f64)> {
    FIGURES
        .iter()
        .filter_map(|(name, figure)| {
            let pairs: Vec<(f64, f64)> = kept
                .iter()
                .zip(values)
                .filter_map(|((r, _), v)| Some((figure(r)?, *v)))
                .collect();
            let rho = spearman(&pairs)?;
            Some((*name, pairs.len(), rho))
        })
        .collect()
}

/// Spearman's rank correlation (ties share their mean rank); `None` for fewer than four pairs
/// or a constant side.
fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 4 {
        return None;
    }
    let xs = ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let ys = ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let (mx, my) = (t_test::mean(&xs), t_test::mean(&ys));
    let cov: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let vx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let vy: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}

fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|a, b| v[*a].total_cmp(&v[*b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in &order[i..=j] {
            out[*k] = rank;
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_split_between_and_within_jobs() {
        // Two jobs of identical spread around different centres: ln 2 apart.
        let a = [1.0, 1.1, 0.9, 1.0];
        let b = [2.0, 2.2, 1.8, 2.0];
        let (between, within) = components(&[&a, &b]).unwrap();
        assert!(between > 0.45 && between < 0.5, "{between}");
        assert!(within > 0.05 && within < 0.1, "{within}");
        // Jobs alike: no between-job part.
        let (between, _) = components(&[&a, &a]).unwrap();
        assert_eq!(between, 0.0);
        assert!(components(&[&a]).is_none());
    }

    #[test]
    fn spearman_sees_monotone_relations_and_ties() {
        let up: Vec<(f64, f64)> = (0..6).map(|i| (i as f64, (i * i) as f64)).collect();
        assert!((spearman(&up).unwrap() - 1.0).abs() < 1e-12);
        let down: Vec<(f64, f64)> = (0..6).map(|i| (i as f64, -(i as f64))).collect();
        assert!((spearman(&down).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        assert!(spearman(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0), (1.0, 4.0)]).is_none());
    }

    #[test]
    fn log_sd_is_a_relative_spread() {
        let sd = log_sd(&[1.0, 1.1, 0.9]).unwrap();
        assert!((sd - 0.1).abs() < 0.01, "{sd}");
        assert_eq!(log_sd(&[1.0]), None);
        assert!(log_sd(&[0.0, 1.0, 2.0]).unwrap() > 0.9);
    }
}
