//! Stage "compare": the golden file Megatron's
//! `tests/functional_tests/python_test_utils/get_test_results_from_tensorboard_logs.py` writes
//! from a job's TensorBoard folder, byte for byte (`common.read_tb_logs_as_list`). Event files
//! without a scalar are dropped; a normal test reads the first remaining file, a convergence
//! test all of them (a step keeps the first file's value). Each `simple_value` is rounded to 5
//! decimals (within a file the last value of a step wins); a metric keeps step 1 and the
//! multiples of `step_size` up to `train_iters`, its `step_interval` is the gcd of the gaps
//! between its steps after step 1 (`step_size` when fewer than two), and only Megatron's
//! whitelisted metrics are written, in the order their tags first appear. Where Megatron's
//! `json.dumps(allow_nan=False)` would fail (a NaN or infinite value), this is an error.

use std::collections::BTreeMap;
use std::path::Path;

use crate::compare::error::CompareError;
use goldgate_core::golden::{self, GoldenFile, GoldenStyle, Series, Value};
use goldgate_core::tensorboard::Accumulated;
use goldgate_schema::metric_names::MEGATRON_TENSORBOARD_METRICS;

/// The script's options: `--train-iters`, `--step-size`, `--is-convergence-test`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MegatronGoldenOptions {
    pub train_iters: u64,
    pub step_size: u64,
    pub convergence: bool,
}

const START_IDX: u64 = 1;

/// The golden file Megatron's script writes for `files` (the folder's event files, oldest
/// first, each accumulated). `dir` names the folder in errors.
pub fn megatron_golden(
    dir: &Path,
    files: &[Accumulated],
    opts: MegatronGoldenOptions,
) -> Result<GoldenFile, CompareError> {
    let fail = |message: String| CompareError::TensorboardGolden {
        dir: dir.to_path_buf(),
        message,
    };
    if opts.step_size == 0 {
        return Err(fail("step_size must be positive, got 0".to_owned()));
    }
    let with_scalars: Vec<&Accumulated> = files.iter().filter(|f| !f.scalars.is_empty()).collect();
    let chosen: &[&Accumulated] = match (opts.convergence, with_scalars.first()) {
        (_, None) => return Err(fail("no event file with scalar data".to_owned())),
        (true, Some(_)) => &with_scalars,
        (false, Some(_)) => &with_scalars[..1],
    };
    let mut metrics = Vec::new();
    for (tag, values) in merged(chosen) {
        if !MEGATRON_TENSORBOARD_METRICS.contains(&tag.as_str()) {
            continue;
        }
        let Some(series) = on_grid(&values, opts) else {
            continue;
        };
        if let Some((step, v)) = values
            .iter()
            .find(|(s, v)| series.values.contains_key(&(**s as u64)) && !v.is_finite())
        {
            return Err(fail(format!(
                "{tag} is {v} at step {step}: Megatron's json.dumps(allow_nan=False) refuses it"
            )));
        }
        metrics.push((tag, series));
    }
    Ok(GoldenFile {
        metrics,
        extra: Vec::new(),
        unsupported: Vec::new(),
        style: GoldenStyle::Indented,
        trailing_newline: false,
        duplicates: Vec::new(),
    })
}

/// Tag → step → rounded value over the chosen files, tags in first-seen order.
fn merged(files: &[&Accumulated]) -> Vec<(String, BTreeMap<i64, f64>)> {
    let mut out: Vec<(String, BTreeMap<i64, f64>)> = Vec::new();
    for file in files {
        for series in &file.scalars {
            let rounded = series.points.iter().map(|(s, v)| (*s, golden::round5(*v)));
            match out.iter_mut().find(|(t, _)| *t == series.tag) {
                Some((_, values)) => {
                    for (step, v) in rounded {
                        values.entry(step).or_insert(v);
                    }
                }
                None => out.push((series.tag.clone(), rounded.collect())),
            }
        }
    }
    out
}

/// The values on Megatron's sampling grid, `None` when none is.
fn on_grid(values: &BTreeMap<i64, f64>, opts: MegatronGoldenOptions) -> Option<Series> {
    let kept: BTreeMap<u64, Value> = values
        .iter()
        .filter_map(|(s, v)| u64::try_from(*s).ok().map(|s| (s, *v)))
        .filter(|(s, _)| {
            (1..=opts.train_iters).contains(s)
                && (*s == START_IDX || (*s > START_IDX && s % opts.step_size == 0))
        })
        .map(|(s, v)| (s, Value::Float(v)))
        .collect();
    let first = *kept.keys().next()?;
    let last = *kept.keys().next_back()?;
    Some(Series {
        start_step: first,
        end_step: last,
        step_interval: step_interval(kept.keys().copied(), opts.step_size),
        values: kept,
        list_form: false,
    })
}

/// `_infer_step_interval`: the gcd of the gaps between steps other than the start step.
fn step_interval(steps: impl Iterator<Item = u64>, default: u64) -> u64 {
    let cadence: Vec<u64> = steps.filter(|s| *s != START_IDX).collect();
    if cadence.len() < 2 {
        return default;
    }
    cadence.windows(2).map(|w| w[1] - w[0]).fold(0, gcd)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::tensorboard::TagSeries;

    fn acc(series: &[(&str, &[(i64, f64)])]) -> Accumulated {
        Accumulated {
            scalars: series
                .iter()
                .map(|(tag, points)| TagSeries {
                    tag: (*tag).to_owned(),
                    points: points.to_vec(),
                })
                .collect(),
            tensors: Vec::new(),
        }
    }

    const OPTS: MegatronGoldenOptions = MegatronGoldenOptions {
        train_iters: 20,
        step_size: 5,
        convergence: false,
    };

    #[test]
    fn grid_rounding_order_and_whitelist() {
        let points: Vec<(i64, f64)> = (0..=25)
            .map(|s| (s, 10.0 - f64::from(s as i32) / 3.0))
            .collect();
        let file = acc(&[
            ("learning-rate", &points),
            ("num-zeros", &[(1, 7.0), (5, 8.0), (5, 9.0)]),
            ("lm loss", &points),
        ]);
        let text = golden::render_golden(
            &megatron_golden(Path::new("tb"), &[Accumulated::default(), file], OPTS).unwrap(),
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn intervals_follow_the_observed_cadence() {
        assert_eq!(step_interval([1, 10, 20, 30].into_iter(), 5), 10);
        assert_eq!(step_interval([1, 5].into_iter(), 5), 5);
        assert_eq!(step_interval([5, 15, 20].into_iter(), 5), 5);
    }

    #[test]
    fn convergence_reads_every_file_first_value_wins() {
        let a = acc(&[("lm loss", &[(1, 1.0), (5, 2.0)])]);
        let b = acc(&[
            ("lm loss", &[(5, 9.0), (10, 3.0)]),
            ("iteration-time", &[(10, 0.5)]),
        ]);
        let normal = megatron_golden(Path::new("tb"), &[a.clone(), b.clone()], OPTS).unwrap();
        assert_eq!(normal.metrics.len(), 1);
        assert_eq!(normal.metrics[0].1.end_step, 5);
        let all = MegatronGoldenOptions {
            convergence: true,
            ..OPTS
        };
        let conv = megatron_golden(Path::new("tb"), &[a, b], all).unwrap();
        let loss = conv.metric("lm loss").unwrap();
        assert_eq!(loss.values[&5], Value::Float(2.0));
        assert_eq!(loss.values[&10], Value::Float(3.0));
        assert!(conv.metric("iteration-time").is_some());
    }

    #[test]
    fn what_megatron_cannot_write_is_an_error() {
        let nan = acc(&[("lm loss", &[(1, f64::NAN)])]);
        let err = megatron_golden(Path::new("tb"), &[nan], OPTS).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tb: lm loss is NaN at step 1: Megatron's json.dumps(allow_nan=False) refuses it"
        );
        let err = megatron_golden(Path::new("tb"), &[Accumulated::default()], OPTS).unwrap_err();
        assert_eq!(err.to_string(), "tb: no event file with scalar data");
        // A NaN off the grid is never written.
        let off = acc(&[("lm loss", &[(1, 1.0), (2, f64::NAN)])]);
        assert!(megatron_golden(Path::new("tb"), &[off], OPTS).is_ok());
    }
}
