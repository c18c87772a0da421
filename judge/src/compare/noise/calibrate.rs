//! Stage "compare": `calibrate` — measures each metric's spread over repeats of the same job,
//! the false-alarm rate of the current rules on them, and the relative tolerance each metric
//! needs for at most 1 % false alarms.
//!
//! False alarms of the current rules: leave-one-out — each repeat is judged, as a single run,
//! against the per-step median of the other repeats (a stand-in golden); any verdict beyond
//! tolerance (regression or improvement) is a false alarm, since all repeats ran the same code.
//!
//! Suggested tolerance: a seeded bootstrap of the gate itself. Draw a "golden" and a "now" run
//! from the repeats (each the median of `gate_repeats` draws with replacement, as bless and
//! compare take medians), take the relative gap beyond the rule's `atol`, and use the 99th
//! percentile over the draws, times a safety factor of 1.25 because a few repeats under-sample
//! the tails. Per-step metrics use the per-step leave-one-out gaps instead (their 99th
//! percentile, same factor).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::compare::golden::band::{self, Series, reduce};
use crate::compare::golden::engine::{Group, group};
use crate::compare::stats::summary::{self, SplitMix64};
use goldgate_core::rules::{Rule, RuleSet};
use goldgate_schema::RunRecord;
use goldgate_schema::{Unit, Verdict};

/// Target false-alarm rate.
const ALARM_RATE: f64 = 0.01;
/// Multiplier on the measured quantile (few repeats under-sample the tails).
const SAFETY: f64 = 1.25;
/// Smallest tolerance suggested (0.1 %): below it, rounding in the log lines decides.
const MIN_RTOL: f64 = 0.001;
const DRAWS: usize = 2000;

/// One metric of one job over its repeats.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricCalibration {
    pub case: String,
    pub variant: String,
    pub metric: String,
    pub unit: Unit,
    pub repeats: usize,
    /// Per-repeat values (the value the rule judges) — median, min, max, coefficient of variation.
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub cv: Option<f64>,
    /// The current rule's tolerance, as reports show it.
    pub current: String,
    pub current_rtol: f64,
    /// Leave-one-out false alarms of the current rule, out of `repeats`.
    pub false_alarms: usize,
    /// Relative tolerance needed for at most 1 % false alarms.
    pub suggested_rtol: f64,
    /// Repeats (1-based) outside the others' 99 % prediction interval, with their change from
    /// the others' median: reported, and left out of the suggestion (one cold job must not set
    /// a tolerance; `--warmup` keeps it out of the runs).
    pub outliers: Vec<(usize, f64)>,
}

/// Everything `calibrate` found.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Repeats the gate runs (`--repeats`): the suggestion is for this many.
    pub gate_repeats: usize,
    pub metrics: Vec<MetricCalibration>,
    /// Jobs skipped and why.
    pub notes: Vec<String>,
}

/// Calibrates every job with at least two passed repeats.
pub fn calibrate(
    records: Vec<(PathBuf, RunRecord)>,
    rules: &RuleSet,
    gate_repeats: usize,
) -> Calibration {
    let mut out = Calibration {
        gate_repeats: gate_repeats.max(1),
        metrics: Vec::new(),
        notes: Vec::new(),
    };
    for ((case, variant), g) in group(records) {
        let passed: Group = g.into_iter().filter(|(_, r)| r.outcome.passed()).collect();
        if passed.len() < 2 {
            out.notes.push(format!(
                "{case} ({variant}): {} passed repeat(s); calibration needs at least 2",
                passed.len()
            ));
            continue;
        }
        let names: Vec<&String> = passed[0].1.metrics.keys().collect();
        for metric in names {
            let series: Option<Vec<&Series>> = passed
                .iter()
                .map(|(_, r)| r.metrics.get(metric).map(|s| &s.0))
                .collect();
            match (rules.find(metric), series) {
                (Some(rule), Some(series)) => {
                    let nondet = passed.iter().any(|(_, r)| r.nondeterministic);
                    if let Some(m) = one(
                        &case,
                        &variant,
                        metric,
                        rule,
                        &series,
                        nondet,
                        out.gate_repeats,
                    ) {
                        out.metrics.push(m);
                    }
                }
                (None, _) => out.notes.push(format!("{case}: no rule for `{metric}`")),
                (_, None) => out.notes.push(format!(
                    "{case} ({variant}): `{metric}` missing in some repeats"
                )),
            }
        }
    }
    out
}

fn one(
    case: &str,
    variant: &str,
    metric: &str,
    rule: &Rule,
    series: &[&Series],
    nondet: bool,
    gate_repeats: usize,
) -> Option<MetricCalibration> {
    let values: Vec<f64> = series
        .iter()
        .filter_map(|s| reduce(rule, s, s.keys().next_back().copied().unwrap_or(0)))
        .map(|(v, _)| v)
        .collect();
    if values.len() != series.len() {
        return None;
    }
    let false_alarms = (0..series.len())
        .filter(|&i| {
            let golden = step_median_except(series, i);
            let v = band::judge(metric, rule, &golden, &[Some(series[i])], nondet).verdict;
            matches!(v, Verdict::Regression | Verdict::Improvement)
        })
        .count();
    let outliers = crate::compare::stats::t_test::outliers(&values);
    let kept: Vec<f64> = (0..values.len())
        .filter(|i| !outliers.contains(i))
        .map(|i| values[i])
        .collect();
    let needed = if rule.is_distribution() {
        bootstrap_needed(&kept, rule.atol, gate_repeats)
    } else {
        per_step_needed(series)
    };
    Some(MetricCalibration {
        case: case.into(),
        variant: variant.into(),
        metric: metric.into(),
        unit: rule.unit,
        repeats: series.len(),
        median: summary::median(&values).unwrap_or(f64::NAN),
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cv: summary::cv(&values),
        current: rule.describe(rule.exact && !nondet),
        current_rtol: rule.rtol,
        false_alarms,
        outliers: outliers
            .iter()
            .map(|&i| {
                (
                    i + 1,
                    values[i] / summary::median(&kept).unwrap_or(f64::NAN) - 1.0,
                )
            })
            .collect(),
        suggested_rtol: round_up((needed * SAFETY).max(MIN_RTOL)),
    })
}

/// Per-step median of every series but `skip`.
fn step_median_except(series: &[&Series], skip: usize) -> Series {
    let mut steps: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (i, s) in series.iter().enumerate().filter(|(i, _)| *i != skip) {
        let _ = i;
        for (step, v) in s.iter() {
            steps.entry(*step).or_default().push(*v);
        }
    }
    steps
        .into_iter()
        .map(|(s, v)| {
            let finite: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
            (s, summary::median(&finite).unwrap_or(f64::NAN))
        })
        .collect()
}

/// The 99th percentile of `|now - golden| - atol` relative to golden over bootstrap draws of
/// the gate (median of `k` repeats each side).
fn bootstrap_needed(values: &[f64], atol: f64, k: usize) -> f64 {
    let mut rng = SplitMix64::new(summary::SEED);
    let draw = |rng: &mut SplitMix64| {
        let picks: Vec<f64> = (0..k).map(|_| values[rng.below(values.len())]).collect();
        summary::median(&picks).unwrap_or(f64::NAN)
    };
    let mut gaps: Vec<f64> = (0..DRAWS)
        .map(|_| {
            let (g, n) = (draw(&mut rng), draw(&mut rng));
            ((n - g).abs() - atol).max(0.0) / g.abs().max(f64::MIN_POSITIVE)
        })
        .collect();
    quantile(&mut gaps, 1.0 - ALARM_RATE)
}

/// The 99th percentile of per-step leave-one-out relative gaps.
fn per_step_needed(series: &[&Series]) -> f64 {
    let mut gaps = Vec::new();
    for i in 0..series.len() {
        let golden = step_median_except(series, i);
        for (step, g) in &golden {
            if let Some(a) = series[i]
                .get(step)
                .filter(|a| a.is_finite() && g.is_finite())
            {
                gaps.push((a - g).abs() / g.abs().max(f64::MIN_POSITIVE));
            }
        }
    }
    quantile(&mut gaps, 1.0 - ALARM_RATE)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).ceil() as usize;
    v[i.min(v.len() - 1)]
}

/// Rounds up to 3 decimals (0.1 % steps), so the written rule covers the measurement.
fn round_up(x: f64) -> f64 {
    (x * 1000.0).ceil() / 1000.0
}

/// Per metric name: the largest suggestion over all jobs (a rule must hold for every job).
pub fn suggestions(c: &Calibration) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for m in &c.metrics {
        let slot = out.entry(m.metric.clone()).or_insert(0.0);
        *slot = slot.max(m.suggested_rtol);
    }
    out
}

/// The terminal report: one line per job and metric, columns sized to their content (variant
/// names such as `allocator=gc80,checkpoint=async` are long), numbers right-aligned.
pub fn render(c: &Calibration) -> String {
    use tabled::settings::object::Columns;
    use tabled::settings::{Alignment, Modify, Style};
    let mut b = tabled::builder::Builder::default();
    b.push_record([
        "case", "variant", "metric", "n", "median", "min", "max", "cv", "current", "alarms",
        "suggest",
    ]);
    for m in &c.metrics {
        b.push_record([
            m.case.clone(),
            m.variant.clone(),
            m.metric.clone(),
            m.repeats.to_string(),
            fmt(m.median, m.unit),
            fmt(m.min, m.unit),
            fmt(m.max, m.unit),
            m.cv.map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
            m.current.clone(),
            format!("{}/{}", m.false_alarms, m.repeats),
            format!("{:.1}%", m.suggested_rtol * 100.0),
        ]);
    }
    let mut table = b.build();
    table
        .with(Style::blank())
        .with(Modify::new(Columns::new(3..8)).with(Alignment::right()))
        .with(Modify::new(Columns::new(9..11)).with(Alignment::right()));
    let mut out = String::new();
    // `Style::blank` pads each cell by one space on both sides and every line to the table's
    // width: drop the margin and the trailing blanks.
    for line in table.to_string().lines() {
        let line = line.strip_prefix(' ').unwrap_or(line);
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "suggested rtol: ≤ {:.0}% false alarms with {} repeat(s) per gate run (bootstrap, ×{SAFETY} safety); alarms: leave-one-out under the current rules",
        ALARM_RATE * 100.0,
        c.gate_repeats
    );
    for m in &c.metrics {
        for (repeat, change) in &m.outliers {
            let _ = writeln!(
                out,
                "note: {} ({}) `{}`: repeat {repeat} is an outlier ({:+.1}% from the others' median), left out of the suggestion",
                m.case,
                m.variant,
                m.metric,
                change * 100.0
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn fmt(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes => format!("{:.3} GiB", v / (1024.0 * 1024.0 * 1024.0)),
        Unit::Seconds if v.abs() < 1.0 => format!("{:.1} ms", v * 1000.0),
        Unit::Seconds => format!("{v:.3} s"),
        Unit::Count | Unit::Plain => format!("{}", goldgate_core::golden::round5(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::record;

    /// Repeats of one job whose save times (after the first) are `times`.
    fn saves(times: &[f64]) -> Vec<(PathBuf, RunRecord)> {
        times
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let s = [(10, 4.0), (20, *t), (30, *t)];
                let loss: Vec<(u64, f64)> = (1..=30).map(|k| (k, 10.0 - k as f64 * 0.1)).collect();
                record(
                    "m/c",
                    i as u32 + 1,
                    &[("checkpoint-blocking-time", &s), ("lm loss", &loss)],
                )
            })
            .collect()
    }

    fn metric<'a>(c: &'a Calibration, name: &str) -> &'a MetricCalibration {
        c.metrics.iter().find(|m| m.metric == name).unwrap()
    }

    #[test]
    fn spread_alarms_and_suggestion() {
        let rules = RuleSet::megatron();
        let c = calibrate(saves(&[1.0, 1.0, 1.3, 1.0, 0.7]), &rules, 1);
        let m = metric(&c, "checkpoint-blocking-time");
        assert_eq!((m.median, m.min, m.max, m.repeats), (1.0, 0.7, 1.3, 5));
        // rtol 10% + atol 0.05 s: 1.3 and 0.7 are beyond the band around the others' median.
        assert_eq!(m.false_alarms, 2);
        // Five repeats cannot resolve a 1 % tail: the widest pair (0.7 as golden, 1.3 now)
        // decides, plus the safety factor.
        let widest = (0.6 - 0.05) / 0.7;
        let s = m.suggested_rtol;
        assert!(s >= widest && s <= widest * SAFETY + 0.001, "{s}");
        let loss = metric(&c, "lm loss");
        assert_eq!((loss.false_alarms, loss.suggested_rtol), (0, MIN_RTOL));
    }

    #[test]
    fn the_suggested_rule_raises_no_leave_one_out_alarm() {
        let rules = RuleSet::megatron();
        let times = [2.0, 2.1, 1.9, 2.3, 2.05, 1.8];
        let c = calibrate(saves(&times), &rules, 1);
        let suggested = metric(&c, "checkpoint-blocking-time").suggested_rtol;
        let raised = goldgate_core::rules::RuleOverride {
            rtol: Some(goldgate_core::rules::Tolerance(suggested)),
            ..Default::default()
        };
        let rules = RuleSet::from_config(
            &goldgate_core::rules::Rules::default()
                .with_file_rules(vec![("checkpoint-blocking-time".into(), raised)]),
        );
        let again = calibrate(saves(&times), &rules, 1);
        assert_eq!(metric(&again, "checkpoint-blocking-time").false_alarms, 0);
    }

    #[test]
    fn more_repeats_per_gate_need_less_tolerance_and_noise_needs_more() {
        let rules = RuleSet::megatron();
        let times = [2.0, 2.4, 1.7, 2.2, 1.9, 2.6, 1.6];
        let one = calibrate(saves(&times), &rules, 1);
        let five = calibrate(saves(&times), &rules, 5);
        let a = metric(&one, "checkpoint-blocking-time").suggested_rtol;
        let b = metric(&five, "checkpoint-blocking-time").suggested_rtol;
        assert!(b < a, "{a} {b}");
        let calm = calibrate(saves(&[2.0, 2.05, 1.95, 2.02, 1.98, 2.04, 1.97]), &rules, 1);
        assert!(metric(&calm, "checkpoint-blocking-time").suggested_rtol < a);
    }

    /// A cold first repeat is reported and does not set the tolerance.
    #[test]
    fn an_outlier_repeat_is_named_and_left_out_of_the_suggestion() {
        let rules = RuleSet::megatron();
        let calm = [1.98, 2.0, 2.02, 1.99, 2.01, 2.0, 1.97, 2.03];
        let mut cold = vec![2.83];
        cold.extend_from_slice(&calm);
        let with = calibrate(saves(&cold), &rules, 1);
        let without = calibrate(saves(&calm), &rules, 1);
        let m = metric(&with, "checkpoint-blocking-time");
        assert_eq!(m.outliers.len(), 1);
        assert_eq!(m.outliers[0].0, 1);
        assert_eq!(
            m.suggested_rtol,
            metric(&without, "checkpoint-blocking-time").suggested_rtol
        );
        assert!(render(&with).contains("repeat 1 is an outlier (+41.5% from the others' median)"));
    }

    #[test]
    fn single_repeats_are_noted_not_calibrated() {
        let c = calibrate(saves(&[1.0]), &RuleSet::megatron(), 1);
        assert!(c.metrics.is_empty());
        assert_eq!(
            c.notes,
            ["m/c (default): 1 passed repeat(s); calibration needs at least 2"]
        );
    }

    #[test]
    fn report_snapshot() {
        let c = calibrate(saves(&[1.0, 1.0, 1.3, 1.0, 0.7]), &RuleSet::megatron(), 3);
        insta::assert_snapshot!(render(&c));
    }
}
