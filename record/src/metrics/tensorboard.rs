//! Stage "metrics": a run's TensorBoard scalars merged into its log metrics (pure). Megatron's
//! golden metrics (`MEGATRON_TENSORBOARD_METRICS`) take TensorBoard's values, as Megatron's own
//! goldens do; any other metric keeps the log's values, TensorBoard filling the steps the log
//! did not print (memory with `--log-memory-to-tensorboard` every step where the log printed it
//! once, timers). Tags keyed by consumed samples or
//! tokens (`… vs samples`, `… vs tokens`) are not per-step series and are left out. Where both
//! sources have a metric and disagree beyond what the log's printed digits explain (relative
//! 1e-3, absolute 1e-4), the record says so and keeps the other source's values beside.

use std::collections::BTreeMap;
use std::path::Path;

use super::downsample::downsample;
use goldgate_core::tensorboard::JobScalars;
use goldgate_schema::metric_names::MEGATRON_TENSORBOARD_METRICS;
use goldgate_schema::{SourceDisagreement, StepValues, TensorboardRecord};

const RELATIVE: f64 = 1e-3;
const ABSOLUTE: f64 = 1e-4;

/// A TensorBoard folder that could not be read: the record says why, the metrics stay the log's.
pub(crate) fn unreadable(dir: &Path, job_dir: &Path, error: String) -> TensorboardRecord {
    TensorboardRecord {
        dir: shown(dir, job_dir),
        error: Some(error),
        ..TensorboardRecord::default()
    }
}

fn shown(dir: &Path, job_dir: &Path) -> String {
    dir.strip_prefix(job_dir)
        .unwrap_or(dir)
        .display()
        .to_string()
}

/// Merges `tb` into `metrics`, keeping only steps `keep` accepts (a resumed run's steps after
/// the one it resumed from).
pub(crate) fn merge(
    metrics: &mut BTreeMap<String, StepValues>,
    tb: &JobScalars,
    job_dir: &Path,
    keep: impl Fn(u64) -> bool,
) -> TensorboardRecord {
    let mut record = TensorboardRecord {
        dir: shown(&tb.dir, job_dir),
        files: tb
            .files
            .iter()
            .map(|f| {
                f.file_name()
                    .unwrap_or(f.as_os_str())
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        ..TensorboardRecord::default()
    };
    for (tag, values) in &tb.series {
        if tag.ends_with(" vs samples") || tag.ends_with(" vs tokens") {
            continue;
        }
        let values = downsample(
            values
                .iter()
                .map(|(s, v)| (*s, *v))
                .filter(|(s, _)| keep(*s)),
        );
        if values.is_empty() {
            continue;
        }
        let golden = MEGATRON_TENSORBOARD_METRICS.contains(&tag.as_str());
        let log = metrics.get(tag).map(|s| &s.0);
        if let Some(d) = log.and_then(|log| disagreement(tag, log, &values, golden)) {
            record.disagreements.push(d);
        }
        if golden {
            metrics.insert(tag.clone(), StepValues(values));
            record.metrics.push(tag.clone());
            continue;
        }
        // The log's values stay; TensorBoard fills the steps the log did not print.
        let series = &mut metrics.entry(tag.clone()).or_default().0;
        let before = series.len();
        for (step, v) in values {
            series.entry(step).or_insert(v);
        }
        if series.len() > before {
            record.metrics.push(tag.clone());
        }
    }
    record
}

fn differ(a: f64, b: f64) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => false,
        (false, false) => (a - b).abs() > ABSOLUTE + RELATIVE * a.abs().max(b.abs()),
        _ => true,
    }
}

fn disagreement(
    metric: &str,
    log: &BTreeMap<u64, f64>,
    tb: &BTreeMap<u64, f64>,
    tb_kept: bool,
) -> Option<SourceDisagreement> {
    let common: Vec<(u64, f64, f64)> = log
        .iter()
        .filter_map(|(s, a)| tb.get(s).map(|b| (*s, *a, *b)))
        .collect();
    let differing: Vec<&(u64, f64, f64)> =
        common.iter().filter(|(_, a, b)| differ(*a, *b)).collect();
    let first = differing.first()?;
    let max = differing
        .iter()
        .map(|(_, a, b)| (a - b).abs() / a.abs().max(b.abs()))
        .fold(0.0, f64::max);
    Some(SourceDisagreement {
        metric: metric.to_owned(),
        kept: if tb_kept { "tensorboard" } else { "log" }.to_owned(),
        steps_compared: common.len() as u64,
        steps_differing: differing.len() as u64,
        first_step: first.0,
        max_relative_difference: if max.is_finite() { max } else { f64::MAX },
        other: StepValues(if tb_kept { log.clone() } else { tb.clone() }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tb(series: &[(&str, &[(u64, f64)])]) -> JobScalars {
        JobScalars {
            dir: PathBuf::from("/job/tensorboard"),
            files: vec![PathBuf::from("/job/tensorboard/events.out.tfevents.1")],
            series: series
                .iter()
                .map(|(t, v)| ((*t).to_owned(), v.iter().copied().collect()))
                .collect(),
        }
    }

    #[test]
    fn tensorboard_wins_for_megatrons_metrics_and_adds_its_own() {
        let mut metrics: BTreeMap<String, StepValues> = [
            ("lm loss", vec![(1, 10.0), (2, 9.0)]),
            ("grad-norm", vec![(1, 2.0)]),
            ("mem-allocated-bytes", vec![(1, 4_718_592_000.0)]),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), StepValues(v.into_iter().collect())))
        .collect();
        let scalars = tb(&[
            ("lm loss", &[(1, 10.000_001), (2, 9.5)]),
            ("lm loss vs samples", &[(32, 10.0)]),
            ("grad-norm", &[(1, 2.5)]),
            ("mem-allocated-bytes", &[(1, 4_718_592_512.0)]),
            ("mem-reserved-bytes", &[(1, 6e9), (2, 6e9)]),
        ]);
        let record = merge(&mut metrics, &scalars, Path::new("/job"), |_| true);
        assert_eq!(metrics["lm loss"].0[&2], 9.5);
        assert_eq!(metrics["grad-norm"].0[&1], 2.0);
        assert_eq!(metrics["mem-allocated-bytes"].0[&1], 4_718_592_512.0);
        assert!(metrics.contains_key("mem-reserved-bytes"));
        assert!(!metrics.contains_key("lm loss vs samples"));
        insta::assert_json_snapshot!(record);
    }

    #[test]
    fn resumed_steps_only_and_unreadable_folders() {
        let mut metrics = BTreeMap::new();
        let scalars = tb(&[("lm loss", &[(9, 1.0), (10, 1.0), (11, 2.0)])]);
        merge(&mut metrics, &scalars, Path::new("/job"), |s| s > 10);
        assert_eq!(
            metrics["lm loss"].0.keys().copied().collect::<Vec<_>>(),
            [11]
        );
        let r = unreadable(Path::new("/job/tb"), Path::new("/job"), "damaged".into());
        assert_eq!(
            (r.dir.as_str(), r.error.as_deref()),
            ("tb", Some("damaged"))
        );
    }
}
