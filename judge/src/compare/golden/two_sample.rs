//! Stage "compare": judges one metric of one job with the two-sample test (`test: two-sample`)
//! — the golden's per-job samples against the repeats now — into a [`MetricResult`].
//!
//! Each job, golden or now, is reduced by the rule exactly as the band rule reduces a repeat
//! (the median of its saves after the skipped warm-up ones, the window's statistic, the
//! scalar), and [`t_test`](crate::compare::stats::t_test) tests the two sets of job values. When the
//! golden file keeps no per-job samples (written before they existed) or there are too few
//! jobs in all, the metric is judged by the band and the detail says why.

use super::band::{self, Series, reduce};
use super::samples::GoldenSamples;
use crate::compare::stats::t_test::{self, Estimate, Scale};
use goldgate_core::rules::Rule;
use goldgate_schema::MetricResult;
#[cfg(test)]
use goldgate_schema::Verdict;

/// Judges `metric` under a two-sample rule. `golden` is Megatron's series of the golden file
/// (the band's fallback), `samples` the file's per-job samples.
pub(crate) fn judge(
    metric: &str,
    rule: &Rule,
    golden: &Series,
    samples: &GoldenSamples,
    repeats: &[Option<&Series>],
    nondeterministic: bool,
) -> MetricResult {
    let band = || band::judge(metric, rule, golden, repeats, nondeterministic);
    let Some(jobs) = samples.metrics.get(metric).filter(|j| !j.is_empty()) else {
        return fallback(
            band(),
            "the golden file keeps no per-job samples (bless it again to keep them)",
        );
    };
    if repeats.iter().any(Option::is_none) {
        return band();
    }
    let last = golden.keys().next_back().copied().unwrap_or(0);
    let summarize = |series: &[&Series]| -> Option<(Vec<f64>, String)> {
        let mut how = String::new();
        let mut values = Vec::with_capacity(series.len());
        for s in series {
            let (v, h) = reduce(rule, s, last)?;
            values.push(v);
            how = h;
        }
        Some((values, how))
    };
    let golden_jobs: Vec<&Series> = jobs.iter().collect();
    let now_jobs: Vec<&Series> = repeats.iter().flatten().copied().collect();
    let (Some((g, _)), Some((n, how))) = (summarize(&golden_jobs), summarize(&now_jobs)) else {
        return band();
    };
    match t_test::estimate(&g, &n, rule.alpha) {
        Ok(e) => result(metric, rule, &e, &g, &n, &how),
        Err(why) => fallback(band(), &why.describe()),
    }
}

/// The band's result, with why the two-sample test was not used in front of its detail.
fn fallback(mut band: MetricResult, why: &str) -> MetricResult {
    band.detail = format!("band rule: {why}; {}", band.detail);
    band
}

fn result(
    metric: &str,
    rule: &Rule,
    e: &Estimate,
    golden: &[f64],
    now: &[f64],
    how: &str,
) -> MetricResult {
    // On the linear scale the rule's atol counts too, relative like the change.
    let min_effect = match e.scale {
        Scale::Log => rule.min_effect,
        Scale::Linear => rule.min_effect + rule.atol / t_test::linear_base(e.golden_center),
    };
    let verdict = t_test::decide(e, rule.direction, min_effect, rule.max_cv);
    let (up, down) = t_test::thresholds(e.scale, min_effect);
    let base = e.golden_center;
    let in_unit = |rel: f64| match e.scale {
        Scale::Log => base * (1.0 + rel),
        Scale::Linear => base + rel * base.abs(),
    };
    let mut detail = format!(
        "change {} ({:.0}% CI {} to {}) vs {} / {}; t-test on per-job values ({how}): {} golden jobs, {} now, df {}, job spread {:.1}%",
        pct(e.change),
        e.level * 100.0,
        pct(e.low),
        pct(e.high),
        pct(up),
        pct(down),
        e.golden_jobs,
        e.now_jobs,
        e.df,
        e.spread * 100.0,
    );
    for (side, values) in [("golden job", golden), ("repeat", now)] {
        for i in t_test::outliers(values) {
            detail.push_str(&format!(
                "; outlier: {side} {} ({} from the others' median)",
                i + 1,
                pct(values[i] / median_without(values, i) - 1.0)
            ));
        }
    }
    MetricResult {
        metric: metric.to_string(),
        verdict,
        golden: Some(base),
        now: Some(e.now_center),
        delta_pct: Some(e.change * 100.0),
        interval: Some((in_unit(e.low), in_unit(e.high))),
        tolerance: rule.describe_two_sample(),
        unit: rule.unit,
        repeats: now.len(),
        detail,
        band: None,
        pass_reason: None,
    }
}

fn median_without(values: &[f64], skip: usize) -> f64 {
    let others: Vec<f64> = (0..values.len())
        .filter(|&i| i != skip)
        .map(|i| values[i])
        .collect();
    crate::compare::stats::summary::median(&others).unwrap_or(f64::NAN)
}

fn pct(rel: f64) -> String {
    format!("{:+.1}%", rel * 100.0)
}

/// Whether a verdict came from the test (not the band's fallback): for tests.
#[cfg(test)]
fn used_the_test(r: &MetricResult) -> bool {
    r.tolerance.starts_with("two-sample") && r.verdict != Verdict::MissingMetric
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::rules::{RuleSet, TestKind};

    fn rule() -> Rule {
        RuleSet::megatron()
            .find("checkpoint-blocking-time")
            .unwrap()
            .edited(|r| {
                r.test = TestKind::TwoSample;
                r.min_effect = 0.02;
            })
    }

    /// A job: a slow first save, then `saves` saves at `t`, with a small wobble.
    fn job(t: f64, wobble: f64) -> Series {
        let mut s = Series::from([(2, 13.0)]);
        for k in 0..10u64 {
            let w = if k % 2 == 0 { wobble } else { -wobble };
            s.insert(4 + 2 * k, t * (1.0 + w));
        }
        s
    }

    fn samples(ts: &[f64]) -> GoldenSamples {
        GoldenSamples {
            jobs: (1..=ts.len()).map(|i| format!("j#{i}")).collect(),
            metrics: [(
                "checkpoint-blocking-time".to_string(),
                ts.iter().map(|t| job(*t, 0.05)).collect(),
            )]
            .into(),
        }
    }

    fn judge_now(golden_ts: &[f64], now_ts: &[f64]) -> MetricResult {
        let golden = job(2.0, 0.0);
        let now: Vec<Series> = now_ts.iter().map(|t| job(*t, 0.05)).collect();
        let reps: Vec<Option<&Series>> = now.iter().map(Some).collect();
        judge(
            "checkpoint-blocking-time",
            &rule(),
            &golden,
            &samples(golden_ts),
            &reps,
            false,
        )
    }

    const GOLDEN: [f64; 10] = [2.0, 2.04, 1.97, 2.02, 1.99, 2.01, 1.96, 2.03, 2.0, 1.98];

    #[test]
    fn ten_percent_slower_with_calm_jobs_is_a_regression_with_its_interval() {
        let r = judge_now(&GOLDEN, &[2.2, 2.23, 2.18]);
        assert_eq!(r.verdict, Verdict::Regression, "{}", r.detail);
        assert!(used_the_test(&r));
        let d = r.delta_pct.unwrap();
        assert!((9.0..11.0).contains(&d), "{d}");
        let (lo, hi) = r.interval.unwrap();
        assert!(lo > 2.0 * 1.02 && hi > 2.2, "{lo} {hi}");
        assert!(
            r.detail.starts_with("change +10.")
                && r.detail.contains("10 golden jobs, 3 now, df 11"),
            "{}",
            r.detail
        );
        assert!(r.detail.contains("first 1 skipped"), "{}", r.detail);
    }

    #[test]
    fn unchanged_jobs_pass_and_a_one_percent_change_is_below_the_minimum_effect() {
        let r = judge_now(&GOLDEN, &[2.01, 1.99, 2.0]);
        assert_eq!(r.verdict, Verdict::Pass, "{}", r.detail);
        let r = judge_now(&GOLDEN, &[2.02, 2.02, 2.02]);
        assert_eq!(r.verdict, Verdict::Pass, "{}", r.detail);
    }

    #[test]
    fn a_cold_golden_job_is_reported_as_an_outlier() {
        let mut golden = GOLDEN;
        golden[0] = 2.83;
        let r = judge_now(&golden, &[2.0, 2.01, 1.99]);
        assert!(
            r.detail.contains("outlier: golden job 1 (+41."),
            "{}",
            r.detail
        );
    }

    /// A 0 B golden (no `/dev/shm` use) and a job that used 1 MiB: within `atol`, a pass; the
    /// linear scale must not make every byte a regression.
    #[test]
    fn an_all_zero_golden_is_judged_with_atol() {
        let rule = RuleSet::megatron()
            .find("shm-peak-bytes")
            .unwrap()
            .edited(|r| r.test = TestKind::TwoSample);
        let zero = Series::from([(33, 0.0)]);
        let samples = GoldenSamples {
            jobs: vec![],
            metrics: [("shm-peak-bytes".to_string(), vec![zero.clone(); 5])].into(),
        };
        let used = |b: f64| Series::from([(33, b)]);
        let judge_with = |b: f64| {
            judge(
                "shm-peak-bytes",
                &rule,
                &zero,
                &samples,
                &[Some(&used(b))],
                false,
            )
            .verdict
        };
        assert_eq!(judge_with(1048576.0), Verdict::Pass);
        assert_eq!(judge_with(1e9), Verdict::Regression);
    }

    #[test]
    fn without_samples_or_jobs_the_band_decides_and_says_why() {
        let golden = job(2.0, 0.0);
        let now = job(2.1, 0.0);
        let r = judge(
            "checkpoint-blocking-time",
            &rule(),
            &golden,
            &GoldenSamples::default(),
            &[Some(&now)],
            false,
        );
        assert!(!used_the_test(&r));
        assert!(
            r.detail
                .starts_with("band rule: the golden file keeps no per-job samples"),
            "{}",
            r.detail
        );
        let one = judge_now(&[2.0], &[2.1]);
        assert!(
            one.detail
                .contains("needs at least 3 jobs in all (1 golden, 1 now)"),
            "{}",
            one.detail
        );
    }
}
