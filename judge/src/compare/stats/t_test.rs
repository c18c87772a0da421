//! Stage "compare": the two-sample test (`test: two-sample`) — the golden's jobs against the
//! jobs judged now, with a known false-alarm rate and a minimum effect as the tolerance.
//!
//! **The unit is the job.** Save times (and iteration times) of one job share that job's
//! state — page cache, writeback, the node's other I/O, where its files landed — so the noise
//! *between* jobs does not shrink by pooling the saves *within* a job: the H200 pilot of issue
//! 17 had jobs whose medians differed by 8.8 % while each job's saves spread 11 %. A test that
//! counted 10 saves of 3 jobs as 30 independent samples would call a difference between
//! unchanged jobs significant far more often than its nominal rate (the simulation tests below
//! measure how often). So each job is reduced to one summary — the rule's statistic over its
//! samples, e.g. the median of its saves after the warm-up ones, which averages the within-job
//! noise away and ignores one stalled save — and the test compares the two sets of summaries.
//!
//! **The test** is Student's two-sample t on the logarithm of the summaries (a multiplicative
//! model: a regression makes every save some percent slower), with the variance pooled over
//! golden and now jobs. For normally distributed job summaries this is the exact test of the
//! balanced one-way random-effects model (jobs random, saves within jobs), so its false-alarm
//! rate is `alpha` whatever the intra-class correlation. It works from one job now against
//! two or more golden jobs, where no rank test can reach 1 % (Mann–Whitney's smallest p-value
//! for 3 against 3 is 1/20, for 1 against 10 is 1/11), and a bootstrap over three jobs
//! underestimates the spread (it sees (n-1)/n of it and only ten distinct resamples).
//! Values that are not all positive (a `/dev/shm` peak of 0 B) are compared on the linear
//! scale, relative to the golden mean, where the tolerance is `atol + min_effect * |golden
//! mean|` as in the band (else any byte above an all-zero golden would count).
//!
//! **The decision** uses the two-sided `1 - 2 alpha` interval of the change (98 % for
//! `alpha` 1 %), whose one-sided halves are the `alpha` tests: a regression when the whole
//! interval lies beyond `+min_effect` (slower by more than the tolerance, significantly), an
//! improvement when it lies beyond `-min_effect`; `unstable` when it straddles the tolerance and
//! the jobs spread more than `max_cv`; otherwise a pass.

use std::cell::RefCell;
use std::collections::HashMap;

use statrs::distribution::{ContinuousCDF, StudentsT};

use goldgate_core::rules::Direction;
use goldgate_schema::Verdict;

/// The scale the test works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Logarithms of the job summaries: changes are ratios.
    Log,
    /// The summaries themselves (some are 0 or negative): changes relative to the golden mean.
    Linear,
}

/// The estimated change between the golden's jobs and the jobs now.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Estimate {
    pub scale: Scale,
    /// Golden jobs and jobs now that entered the test.
    pub golden_jobs: usize,
    pub now_jobs: usize,
    /// The centre of each side in the metric's unit (geometric mean on the log scale).
    pub golden_center: f64,
    pub now_center: f64,
    /// Relative change now against golden (`0.12` = 12 % more), and its interval.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Confidence level of `low..high` (`1 - 2 alpha`).
    pub level: f64,
    /// Degrees of freedom of the t distribution.
    pub df: usize,
    /// Pooled spread of the job summaries, relative (a coefficient of variation).
    pub spread: f64,
}

/// Why the test cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Fewer than three jobs in all, or none on one side: no spread can be estimated.
    TooFewJobs { golden: usize, now: usize },
    /// A summary is not finite.
    NotFinite,
}

impl Unusable {
    /// One line for a detail text.
    pub(crate) fn describe(&self) -> String {
        match self {
            Unusable::TooFewJobs { golden, now } => format!(
                "the two-sample test needs at least 3 jobs in all ({golden} golden, {now} now)"
            ),
            Unusable::NotFinite => "a job summary is not finite".into(),
        }
    }
}

/// The t-test on per-job summaries at false-alarm rate `alpha` (one-sided, per direction).
pub(crate) fn estimate(golden: &[f64], now: &[f64], alpha: f64) -> Result<Estimate, Unusable> {
    let (g, n) = (golden.len(), now.len());
    if g == 0 || n == 0 || g + n < 3 {
        return Err(Unusable::TooFewJobs { golden: g, now: n });
    }
    if golden.iter().chain(now).any(|v| !v.is_finite()) {
        return Err(Unusable::NotFinite);
    }
    let scale = if golden.iter().chain(now).all(|v| *v > 0.0) {
        Scale::Log
    } else {
        Scale::Linear
    };
    let to = |v: &f64| match scale {
        Scale::Log => v.ln(),
        Scale::Linear => *v,
    };
    let xs: Vec<f64> = golden.iter().map(to).collect();
    let zs: Vec<f64> = now.iter().map(to).collect();
    let (mx, mz) = (mean(&xs), mean(&zs));
    let df = g + n - 2;
    let pooled = ((sum_sq(&xs, mx) + sum_sq(&zs, mz)) / df as f64).sqrt();
    let se = pooled * (1.0 / g as f64 + 1.0 / n as f64).sqrt();
    let half = t_quantile(1.0 - alpha, df) * se;
    let d = mz - mx;
    let est = match scale {
        Scale::Log => Estimate {
            golden_center: mx.exp(),
            now_center: mz.exp(),
            change: d.exp_m1(),
            low: (d - half).exp_m1(),
            high: (d + half).exp_m1(),
            spread: pooled,
            ..blank(scale, g, n, alpha, df)
        },
        Scale::Linear => {
            let base = linear_base(mx);
            Estimate {
                golden_center: mx,
                now_center: mz,
                change: d / base,
                low: (d - half) / base,
                high: (d + half) / base,
                spread: pooled / base,
                ..blank(scale, g, n, alpha, df)
            }
        }
    };
    Ok(est)
}

/// What linear-scale changes are relative to: the golden mean, or 1 (the metric's unit) when it
/// is 0 (a `/dev/shm` peak of 0 B on every golden job).
pub(crate) fn linear_base(golden_mean: f64) -> f64 {
    if golden_mean.abs() > 0.0 {
        golden_mean.abs()
    } else {
        1.0
    }
}

fn blank(scale: Scale, golden_jobs: usize, now_jobs: usize, alpha: f64, df: usize) -> Estimate {
    Estimate {
        scale,
        golden_jobs,
        now_jobs,
        golden_center: f64::NAN,
        now_center: f64::NAN,
        change: f64::NAN,
        low: f64::NAN,
        high: f64::NAN,
        level: 1.0 - 2.0 * alpha,
        df,
        spread: f64::NAN,
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`df` ≥ 1). Remembered per
/// thread: `goldgate power` and the simulations ask for the same few quantiles many thousand
/// times, and each costs an inverse of the incomplete beta function.
pub(crate) fn t_quantile(p: f64, df: usize) -> f64 {
    thread_local! {
        static KNOWN: RefCell<HashMap<(u64, usize), f64>> = RefCell::new(HashMap::new());
    }
    KNOWN.with(|known| {
        *known
            .borrow_mut()
            .entry((p.to_bits(), df))
            .or_insert_with(|| match StudentsT::new(0.0, 1.0, df as f64) {
                Ok(t) => t.inverse_cdf(p),
                // Only for df = 0, which `estimate` never asks for: no finite bound exists.
                Err(_) => f64::INFINITY,
            })
    })
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn sum_sq(v: &[f64], m: f64) -> f64 {
    v.iter().map(|x| (x - m).powi(2)).sum()
}

/// The relative thresholds a change must pass: `(up, down)`, e.g. `(+0.05, -0.0476)` for a
/// 5 % minimum effect on the log scale (a ratio of 1.05 either way).
pub(crate) fn thresholds(scale: Scale, min_effect: f64) -> (f64, f64) {
    match scale {
        Scale::Log => (min_effect, 1.0 / (1.0 + min_effect) - 1.0),
        Scale::Linear => (min_effect, -min_effect),
    }
}

/// The verdict of an estimate under a rule's direction, minimum effect and `max_cv`.
pub(crate) fn decide(
    e: &Estimate,
    direction: Direction,
    min_effect: f64,
    max_cv: Option<f64>,
) -> Verdict {
    let (up, down) = thresholds(e.scale, min_effect);
    let slower = e.low > up;
    let faster = e.high < down;
    let verdict = match (direction, slower, faster) {
        (_, false, false) => Verdict::Pass,
        (Direction::Both, _, _) => Verdict::Regression,
        (Direction::LowerIsBetter, true, _) | (Direction::HigherIsBetter, _, true) => {
            Verdict::Regression
        }
        _ => Verdict::Improvement,
    };
    let straddles = (e.low <= up && e.high > up) || (e.low < down && e.high >= down);
    let noisy = max_cv.is_some_and(|max| e.spread > max);
    if verdict == Verdict::Pass && straddles && noisy {
        Verdict::Unstable
    } else {
        verdict
    }
}

/// Jobs whose summary lies outside the others' 99 % prediction interval (Bonferroni over the
/// jobs, t-based, on the log scale when all are positive): a cold first job, a job that shared
/// the node with a backup. Needs four jobs or more; returns indices.
pub(crate) fn outliers(values: &[f64]) -> Vec<usize> {
    let n = values.len();
    if n < 4 || values.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let log = values.iter().all(|v| *v > 0.0);
    let xs: Vec<f64> = values
        .iter()
        .map(|v| if log { v.ln() } else { *v })
        .collect();
    // Two-sided 1 % over all n jobs.
    let t = t_quantile(1.0 - 0.005 / n as f64, n - 2);
    (0..n)
        .filter(|&i| {
            let others: Vec<f64> = (0..n).filter(|&j| j != i).map(|j| xs[j]).collect();
            let m = mean(&others);
            let s = (sum_sq(&others, m) / (others.len() - 1) as f64).sqrt();
            let bound = t * s * (1.0 + 1.0 / others.len() as f64).sqrt();
            (xs[i] - m).abs() > bound && (xs[i] - m).abs() > 1e-12 * m.abs().max(1.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    // Tests of the two-sample test, among them the simulations that measure its error rates on
    // synthetic jobs with a between-job and a within-job noise component (issue 17). Run them with
    // `cargo test -p goldgate-judge --lib t_test -- --nocapture` to see the measured rates.

    use super::*;
    use crate::compare::stats::summary::{self, SplitMix64};

    /// Normal draws from the crate's seeded generator (Box–Muller), for synthetic jobs.
    struct Normal(SplitMix64);

    impl Normal {
        fn new(seed: u64) -> Normal {
            Normal(SplitMix64::new(seed))
        }

        fn uniform(&mut self) -> f64 {
            ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn next(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }

        /// Student's t with `k` degrees of freedom, scaled to unit variance (heavy tails).
        fn heavy(&mut self, k: usize) -> f64 {
            let chi: f64 = (0..k).map(|_| self.next().powi(2)).sum();
            let t = self.next() / (chi / k as f64).sqrt();
            t / (k as f64 / (k as f64 - 2.0)).sqrt()
        }
    }

    /// How the synthetic jobs vary: log-normal saves, `between` and `within` as relative spreads.
    #[derive(Clone, Copy)]
    struct Noise {
        between: f64,
        within: f64,
        saves: usize,
        /// Draw the job effects from a t distribution with this many degrees of freedom.
        heavy: Option<usize>,
    }

    /// The pilot of issue 17 on the H200: jobs differ by ~9 %, saves within a job by ~11 %.
    const PILOT: Noise = Noise {
        between: 0.09,
        within: 0.11,
        saves: 10,
        heavy: None,
    };

    /// One synthetic job: its saves after the warm-up, every one `factor` times slower.
    fn job(rng: &mut Normal, noise: Noise, factor: f64) -> Vec<f64> {
        let b = match noise.heavy {
            Some(k) => rng.heavy(k),
            None => rng.next(),
        } * noise.between;
        (0..noise.saves)
            .map(|_| 2.0 * factor * (b + noise.within * rng.next()).exp())
            .collect()
    }

    /// Per-job summaries as the gate takes them: the median of each job's saves.
    fn summaries(jobs: &[Vec<f64>]) -> Vec<f64> {
        jobs.iter()
            .map(|j| summary::median(j).unwrap_or(f64::NAN))
            .collect()
    }

    /// Share of `trials` comparisons (golden `g` jobs, `n` jobs now `factor` times slower) that
    /// the two-sample test calls a regression.
    fn regression_rate(
        noise: Noise,
        g: usize,
        n: usize,
        factor: f64,
        trials: usize,
        seed: u64,
    ) -> f64 {
        let mut rng = Normal::new(seed);
        let mut hits = 0;
        for _ in 0..trials {
            let golden: Vec<Vec<f64>> = (0..g).map(|_| job(&mut rng, noise, 1.0)).collect();
            let now: Vec<Vec<f64>> = (0..n).map(|_| job(&mut rng, noise, factor)).collect();
            let e = estimate(&summaries(&golden), &summaries(&now), 0.01).unwrap();
            if decide(&e, Direction::LowerIsBetter, 0.0, None) == Verdict::Regression {
                hits += 1;
            }
        }
        hits as f64 / trials as f64
    }

    /// Upper bound on a false-alarm rate measured over `trials`: the nominal 1 % plus 2.5 standard
    /// errors of a binomial proportion at 1 % (so the assertion fails for a real excess, not for
    /// Monte Carlo noise).
    fn allowed(trials: usize) -> f64 {
        0.01 + 2.5 * (0.01 * 0.99 / trials as f64).sqrt()
    }

    #[test]
    #[allow(clippy::approx_constant)] // t(0.99, 11) is 2.718, close to e by chance
    fn t_quantiles_match_the_tables() {
        for (p, df, want) in [
            (0.99, 11, 2.718),
            (0.99, 9, 2.821),
            (0.975, 2, 4.303),
            (0.99, 1, 31.821),
        ] {
            let got = t_quantile(p, df);
            assert!(
                (got - want).abs() < 1e-3,
                "t({p}, {df}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn identical_spreads_give_the_exact_ratio() {
        let e = estimate(&[2.0, 2.0, 2.0], &[2.2, 2.2], 0.01).unwrap();
        assert!((e.change - 0.1).abs() < 1e-12 && (e.low - 0.1).abs() < 1e-12);
        assert_eq!((e.df, e.scale, e.level), (3, Scale::Log, 0.98));
        assert_eq!(
            decide(&e, Direction::LowerIsBetter, 0.05, None),
            Verdict::Regression
        );
        assert_eq!(
            decide(&e, Direction::LowerIsBetter, 0.15, None),
            Verdict::Pass
        );
        assert_eq!(
            decide(&e, Direction::HigherIsBetter, 0.05, None),
            Verdict::Improvement
        );
    }

    #[test]
    fn known_values_give_the_textbook_interval() {
        // ln values: golden 0, 0.1, -0.1 (mean 0, ss 0.02), now 0.3, 0.5 (mean 0.4, ss 0.02):
        // pooled s = sqrt(0.04 / 3), se = s * sqrt(1/3 + 1/2), t(0.99, 3) = 4.541.
        let golden = [1.0, 0.1f64.exp(), (-0.1f64).exp()];
        let now = [0.3f64.exp(), 0.5f64.exp()];
        let e = estimate(&golden, &now, 0.01).unwrap();
        let half = 4.5407 * (0.04f64 / 3.0).sqrt() * (1.0f64 / 3.0 + 0.5).sqrt();
        assert!((e.low - (0.4 - half).exp_m1()).abs() < 1e-3, "{e:?}");
        assert!((e.high - (0.4 + half).exp_m1()).abs() < 1e-3, "{e:?}");
        assert!((e.change - 0.4f64.exp_m1()).abs() < 1e-12);
    }

    #[test]
    fn zeros_are_compared_on_the_linear_scale() {
        let e = estimate(&[0.0, 0.0, 0.0], &[0.0], 0.01).unwrap();
        assert_eq!(e.scale, Scale::Linear);
        assert_eq!(
            decide(&e, Direction::LowerIsBetter, 0.02, None),
            Verdict::Pass
        );
        let e = estimate(&[0.0, 1.0, 2.0], &[10.0, 11.0], 0.01).unwrap();
        assert_eq!(e.scale, Scale::Linear);
        assert!((e.change - 9.5).abs() < 1e-12);
    }

    #[test]
    fn too_few_jobs_are_refused() {
        assert_eq!(
            estimate(&[1.0], &[1.0], 0.01),
            Err(Unusable::TooFewJobs { golden: 1, now: 1 })
        );
        assert!(estimate(&[], &[1.0, 2.0, 3.0], 0.01).is_err());
        assert_eq!(
            estimate(&[1.0, f64::NAN], &[1.0], 0.01),
            Err(Unusable::NotFinite)
        );
    }

    #[test]
    fn a_noisy_straddling_interval_is_unstable_a_calm_one_passes() {
        let noisy = estimate(&[1.0, 1.5, 0.7], &[1.1, 1.6, 0.8], 0.01).unwrap();
        assert_eq!(
            decide(&noisy, Direction::LowerIsBetter, 0.05, Some(0.25)),
            Verdict::Unstable
        );
        assert_eq!(
            decide(&noisy, Direction::LowerIsBetter, 0.05, None),
            Verdict::Pass
        );
    }

    #[test]
    fn a_cold_job_is_an_outlier_unchanged_ones_are_not() {
        let jobs = [2.83, 1.98, 2.01, 1.95, 2.03, 1.99, 2.05, 1.97];
        assert_eq!(outliers(&jobs), vec![0]);
        assert!(outliers(&jobs[1..]).is_empty());
        assert!(
            outliers(&[2.83, 1.98, 2.0]).is_empty(),
            "three jobs say nothing"
        );
    }

    /// The heart of the design: with the pilot's noise (jobs 9 % apart, saves 11 % within a job),
    /// the test on per-job medians keeps false alarms at its nominal 1 % — for 1, 3 and 5 jobs now
    /// against 10 golden jobs, 3 against 3, and with heavy-tailed job effects (t, 5 df).
    #[test]
    #[allow(clippy::print_stderr)]
    fn false_alarms_stay_at_the_nominal_rate_with_job_level_noise() {
        let trials = 20_000;
        let heavy = Noise {
            heavy: Some(5),
            ..PILOT
        };
        let within_only = Noise {
            between: 0.0,
            ..PILOT
        };
        let between_only = Noise {
            within: 0.0,
            ..PILOT
        };
        for (name, noise, g, n) in [
            ("pilot noise, 10 golden vs 1", PILOT, 10, 1),
            ("pilot noise, 10 golden vs 3", PILOT, 10, 3),
            ("pilot noise, 10 golden vs 5", PILOT, 10, 5),
            ("pilot noise, 3 golden vs 3", PILOT, 3, 3),
            ("heavy-tailed jobs, 10 golden vs 3", heavy, 10, 3),
            (
                "saves noisy, jobs alike (ICC 0), 10 vs 3",
                within_only,
                10,
                3,
            ),
            (
                "jobs apart, saves alike (ICC 1), 10 vs 3",
                between_only,
                10,
                3,
            ),
        ] {
            let rate = regression_rate(noise, g, n, 1.0, trials, 17 + g as u64 * 31 + n as u64);
            eprintln!("false alarms, {name}: {:.2} % of {trials}", rate * 100.0);
            assert!(rate <= allowed(trials), "{name}: {rate}");
        }
    }

    /// Why the unit is the job: the same data tested as if every save were independent (a t-test on
    /// all saves pooled) raises false alarms on unchanged code far above 1 %.
    #[test]
    #[allow(clippy::print_stderr)]
    fn pooling_saves_as_independent_samples_breaks_the_error_rate() {
        let mut rng = Normal::new(5);
        let rate = false_alarms(1000, "saves pooled as independent", || {
            let golden: Vec<f64> = (0..10).flat_map(|_| job(&mut rng, PILOT, 1.0)).collect();
            let now: Vec<f64> = (0..3).flat_map(|_| job(&mut rng, PILOT, 1.0)).collect();
            let e = estimate(&golden, &now, 0.01).unwrap();
            decide(&e, Direction::LowerIsBetter, 0.0, None) == Verdict::Regression
        });
        assert!(rate > 0.10, "{rate}");
    }

    /// Why not a bootstrap: a two-level bootstrap (jobs, then saves within them) of the difference
    /// of medians, 98 % percentile interval, over 3 jobs now sees too little of the between-job
    /// spread and raises false alarms well above 1 %.
    #[test]
    #[allow(clippy::print_stderr)]
    fn a_cluster_bootstrap_over_three_jobs_is_too_liberal() {
        let mut rng = Normal::new(11);
        let mut pick = SplitMix64::new(12);
        let resamples = 200;
        let rate = false_alarms(300, "two-level bootstrap, 10 vs 3 jobs", || {
            let golden: Vec<Vec<f64>> = (0..10).map(|_| job(&mut rng, PILOT, 1.0)).collect();
            let now: Vec<Vec<f64>> = (0..3).map(|_| job(&mut rng, PILOT, 1.0)).collect();
            let mut diffs: Vec<f64> = (0..resamples)
                .map(|_| {
                    let a = summary::median(&resample(&golden, &mut pick)).unwrap_or(f64::NAN);
                    let b = summary::median(&resample(&now, &mut pick)).unwrap_or(f64::NAN);
                    b.ln() - a.ln()
                })
                .collect();
            diffs.sort_by(f64::total_cmp);
            diffs[resamples / 100] > 0.0
        });
        assert!(rate > 0.03, "{rate}");
    }

    /// The share of `trials` in which `alarm` raises one, printed with `what`.
    #[allow(clippy::print_stderr)]
    fn false_alarms(trials: u32, what: &str, mut alarm: impl FnMut() -> bool) -> f64 {
        let hits = (0..trials).filter(|_| alarm()).count();
        let rate = hits as f64 / f64::from(trials);
        eprintln!("false alarms, {what}: {:.1} % of {trials}", rate * 100.0);
        rate
    }

    /// Jobs with replacement, then each drawn job's saves with replacement, pooled.
    fn resample(jobs: &[Vec<f64>], rng: &mut SplitMix64) -> Vec<f64> {
        let mut out = Vec::new();
        for _ in 0..jobs.len() {
            let j = &jobs[rng.below(jobs.len())];
            out.extend((0..j.len()).map(|_| j[rng.below(j.len())]));
        }
        out
    }

    /// What the test can see: at the pilot's noise +10 % is mostly missed with 3 jobs now (issue
    /// 17's estimate: a sound test needs ~20 % or more there), while with jobs 2 % apart and saves
    /// 5 % apart it is found in at least 95 % of 3-job comparisons.
    #[test]
    #[allow(clippy::print_stderr)]
    fn power_depends_on_the_between_job_noise() {
        let trials = 2000;
        let pilot = regression_rate(PILOT, 10, 3, 1.10, trials, 3);
        let controlled = Noise {
            between: 0.02,
            within: 0.05,
            saves: 10,
            heavy: None,
        };
        let calm = regression_rate(controlled, 10, 3, 1.10, trials, 4);
        let big = regression_rate(PILOT, 10, 3, 1.5, trials, 5);
        eprintln!(
            "detected +10 %, 10 golden vs 3: {:.1} % at the pilot's noise, {:.1} % with jobs 2 % apart; +50 % at the pilot's noise: {:.1} %",
            pilot * 100.0,
            calm * 100.0,
            big * 100.0
        );
        assert!(pilot < 0.5, "{pilot}");
        assert!(calm >= 0.95, "{calm}");
        assert!(big >= 0.95, "{big}");
    }
}
