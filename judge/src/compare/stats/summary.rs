//! Stage "compare": the statistics behind a verdict — medians, the coefficient of variation,
//! a seeded percentile bootstrap of the median, and the tolerance band `atol + rtol*|g|`.
//!
//! The bootstrap uses its own small PRNG (SplitMix64) with a fixed seed, so the same numbers
//! always give the same interval and the gate is reproducible run to run.

use goldgate_core::rules::{Rule, Statistic};

/// Resamples drawn by [`bootstrap_median_ci`]: enough that the 2.5 % / 97.5 % percentiles move
/// by less than one order statistic between seeds for the small n (2-20) the gate sees.
pub(crate) const RESAMPLES: usize = 2000;

/// The fixed seed ("goldgate" in ASCII).
pub(crate) const SEED: u64 = 0x676f_6c64_6761_7465;

/// Relative + absolute tolerance: `|a - g| <= atol + rtol * |g|` (Megatron's and numpy's rule).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tolerance {
    pub(crate) rtol: f64,
    pub(crate) atol: f64,
}

impl Tolerance {
    /// A rule's band: its `rtol` and `atol`.
    pub(crate) fn of(rule: &Rule) -> Tolerance {
        Tolerance {
            rtol: rule.rtol,
            atol: rule.atol,
        }
    }

    /// Half-width of the band around `golden`.
    pub(crate) fn slack(self, golden: f64) -> f64 {
        self.atol + self.rtol * golden.abs()
    }

    /// `(low, high)` edges of the band around `golden`.
    pub(crate) fn band(self, golden: f64) -> (f64, f64) {
        let s = self.slack(golden);
        (golden - s, golden + s)
    }

    /// Whether `actual` is within tolerance of `golden`. A non-finite value on either side
    /// counts as infinity (Megatron's reading of a `"nan"` string), so two non-finite values
    /// agree and one alone never does.
    pub(crate) fn within(self, actual: f64, golden: f64) -> bool {
        match (actual.is_finite(), golden.is_finite()) {
            (true, true) => (actual - golden).abs() <= self.slack(golden),
            (false, false) => true,
            _ => false,
        }
    }
}

/// Applies a window's statistic; `None` for no values.
pub(crate) fn collapse(statistic: Statistic, values: &[f64]) -> Option<f64> {
    let fold = |f: fn(f64, f64) -> f64| values.iter().copied().reduce(f);
    match statistic {
        Statistic::Median => median(values),
        Statistic::Mean if values.is_empty() => None,
        Statistic::Mean => Some(values.iter().sum::<f64>() / values.len() as f64),
        Statistic::Min => fold(f64::min),
        Statistic::Max => fold(f64::max),
    }
}

/// Median of the values (NaN-free input expected; callers filter). `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

/// Median of sorted values.
pub(crate) fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Coefficient of variation: sample standard deviation over |mean|. `None` for fewer than two
/// values or a zero mean.
pub(crate) fn cv(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if mean == 0.0 {
        return None;
    }
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(var.sqrt() / mean.abs())
}

/// SplitMix64: tiny, fast, and good enough to pick resample indices.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform index in `0..n` (n > 0); the modulo bias is below 2^-50 for the n used here.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Percentile-bootstrap confidence interval of the median at `level` (e.g. 0.95), with
/// [`RESAMPLES`] resamples from a generator seeded with `seed`. `None` for fewer than two
/// values. With n values the resampled medians can only take a handful of values (order
/// statistics and midpoints), so for small n the interval is coarse: with n = 2 it is the
/// range of the two values.
pub(crate) fn bootstrap_median_ci(values: &[f64], level: f64, seed: u64) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut sample = vec![0.0; n];
    let mut medians = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for slot in sample.iter_mut() {
            *slot = values[rng.below(n)];
        }
        sample.sort_by(f64::total_cmp);
        medians.extend(median_sorted(&sample));
    }
    let alpha = (1.0 - level) / 2.0;
    let last = medians.len() - 1;
    let lo = (alpha * last as f64).floor() as usize;
    let hi = (((1.0 - alpha) * last as f64).ceil() as usize).min(last);
    // Two order statistics: selection, not a full sort.
    let (_, &mut high, _) = medians.select_nth_unstable_by(hi, f64::total_cmp);
    let (_, &mut low, _) =
        medians[..hi].select_nth_unstable_by(lo.min(hi.saturating_sub(1)), f64::total_cmp);
    Some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn window_statistics() {
        let v = [3.0, 1.0, 2.0, 10.0];
        assert_eq!(collapse(Statistic::Median, &v), Some(2.5));
        assert_eq!(collapse(Statistic::Mean, &v), Some(4.0));
        assert_eq!(collapse(Statistic::Min, &v), Some(1.0));
        assert_eq!(collapse(Statistic::Max, &v), Some(10.0));
        assert_eq!(collapse(Statistic::Mean, &[]), None);
    }

    #[test]
    fn median_and_cv_on_known_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let c = cv(&[1.0, 2.0, 3.0]).unwrap();
        assert!((c - 0.5).abs() < 1e-12, "{c}");
        assert_eq!(cv(&[1.0]), None);
    }

    #[test]
    fn tolerance_treats_non_finite_as_infinity() {
        let t = Tolerance {
            rtol: 0.05,
            atol: 0.0,
        };
        assert!(t.within(f64::NAN, f64::NAN));
        assert!(t.within(f64::INFINITY, f64::NAN));
        assert!(!t.within(1.0, f64::NAN));
        assert!(!t.within(f64::NAN, 1.0));
        assert!(t.within(1.049, 1.0));
        assert!(!t.within(1.06, 1.0));
    }

    #[test]
    fn bootstrap_is_deterministic_and_n2_gives_the_range() {
        let v = [0.21, 0.19, 0.2, 0.35, 0.2];
        assert_eq!(
            bootstrap_median_ci(&v, 0.95, SEED),
            bootstrap_median_ci(&v, 0.95, SEED)
        );
        assert_eq!(
            bootstrap_median_ci(&[1.0, 3.0], 0.95, SEED),
            Some((1.0, 3.0))
        );
        assert_eq!(bootstrap_median_ci(&[1.0], 0.95, SEED), None);
    }

    #[test]
    fn one_slow_outlier_barely_moves_the_interval() {
        let calm = [4.0, 4.1, 3.9, 4.05, 3.95, 4.0, 4.02];
        let mut noisy = calm;
        noisy[3] = 18.0;
        let (_, hi_calm) = bootstrap_median_ci(&calm, 0.95, SEED).unwrap();
        let (_, hi_noisy) = bootstrap_median_ci(&noisy, 0.95, SEED).unwrap();
        assert!(hi_noisy <= 4.1 && hi_calm <= 4.1, "{hi_calm} {hi_noisy}");
    }

    /// The README's claim: up to 5 repeats the 95 % interval is the whole range (a regression
    /// then needs every repeat beyond the band); from 6 on it excludes the extremes.
    #[test]
    fn small_n_intervals_span_the_range() {
        for n in 2..=5 {
            let v: Vec<f64> = (1..=n).map(f64::from).collect();
            let ci = bootstrap_median_ci(&v, 0.95, SEED);
            assert_eq!(ci, Some((1.0, f64::from(n))), "n = {n}");
        }
        for n in 6..=12 {
            let v: Vec<f64> = (1..=n).map(f64::from).collect();
            let (lo, hi) = bootstrap_median_ci(&v, 0.95, SEED).unwrap();
            assert!(lo > 1.0 && hi < f64::from(n), "n = {n}: {lo} {hi}");
        }
    }

    fn values() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(0.001f64..1e6, 2..12)
    }

    proptest! {
        #[test]
        fn ci_contains_the_median_and_lies_within_the_data(v in values()) {
            let (lo, hi) = bootstrap_median_ci(&v, 0.95, SEED).unwrap();
            let m = median(&v).unwrap();
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
            prop_assert!(min <= lo && hi <= max);
        }

        #[test]
        fn widening_tolerance_never_loses_a_pass(
            a in -1e6f64..1e6, g in -1e6f64..1e6,
            rtol in 0.0f64..1.0, atol in 0.0f64..10.0, more in 0.0f64..1.0,
        ) {
            let narrow = Tolerance { rtol, atol };
            let wide = Tolerance { rtol: rtol + more, atol: atol + more };
            prop_assert!(!narrow.within(a, g) || wide.within(a, g));
        }

        #[test]
        fn relative_checks_are_scale_invariant(
            a in 0.001f64..1e3, g in 0.001f64..1e3, rtol in 0.0f64..0.5, k in prop::sample::select(vec![0.001f64, 0.5, 2.0, 1024.0, 1e6]),
        ) {
            let t = Tolerance { rtol, atol: 0.0 };
            // Exact decisions can flip only at the boundary through rounding; stay off it.
            let margin = ((a - g).abs() - t.slack(g)).abs() / g.abs();
            prop_assume!(margin > 1e-9);
            prop_assert_eq!(t.within(a, g), t.within(a * k, g * k));
        }

        #[test]
        fn scaling_scales_the_interval(v in values(), k in 0.5f64..4.0) {
            let (lo, hi) = bootstrap_median_ci(&v, 0.95, SEED).unwrap();
            let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
            let (slo, shi) = bootstrap_median_ci(&scaled, 0.95, SEED).unwrap();
            prop_assert!((slo - lo * k).abs() <= 1e-9 * shi.abs().max(1.0));
            prop_assert!((shi - hi * k).abs() <= 1e-9 * shi.abs().max(1.0));
        }
    }
}
