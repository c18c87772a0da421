//! Stage "metrics": long per-step series are thinned before they go into `results.json`. A
//! 1 GB log of iteration lines (3 million steps) would otherwise make a 480 MB record that
//! takes gigabytes to read back. What the gate reads survives: every step up to
//! [`DENSE_STEPS`] (Megatron's step windows, 5–20 and 30–45, and its dense goldens of up to
//! 2,000 steps), then the steps that are multiples of a stride from 1, 5, 10, 50, 100, ... —
//! the smallest that keeps a series within [`MAX_POINTS`] — and always the first and last.
//! Megatron's long goldens record every 5th step up to 100,000 steps and every 100th up to a
//! million, both kept whole by this rule; a golden blessed from a thinned record has the same
//! steps as the next run of the same length.

use std::collections::BTreeMap;

/// Steps kept without thinning at the start of a series.
const DENSE_STEPS: u64 = 2_000;
/// Most values a thinned series keeps (the first and last step may add one each).
pub const MAX_POINTS: usize = 25_000;

/// The series, thinned when it holds more than [`MAX_POINTS`] values.
pub(crate) fn downsample(points: impl IntoIterator<Item = (u64, f64)>) -> BTreeMap<u64, f64> {
    let points: Vec<(u64, f64)> = points.into_iter().collect();
    if points.len() <= MAX_POINTS {
        return points.into_iter().collect();
    }
    let stride = stride_for(&points);
    let (first, last) = (points[0].0, points[points.len() - 1].0);
    points
        .into_iter()
        .filter(|(step, _)| kept(*step, stride) || *step == first || *step == last)
        .collect()
}

/// Whether the thinning with `stride` keeps `step` (first and last steps aside).
fn kept(step: u64, stride: u64) -> bool {
    step <= DENSE_STEPS || step.is_multiple_of(stride)
}

/// The smallest stride of 1, 5, 10, 50, 100, ... (each divides the next) that keeps at most
/// [`MAX_POINTS`] values.
fn stride_for(points: &[(u64, f64)]) -> u64 {
    let (mut stride, mut times_five) = (1u64, true);
    loop {
        let count = points.iter().filter(|(s, _)| kept(*s, stride)).count();
        if count <= MAX_POINTS || stride > u64::MAX / 5 {
            return stride;
        }
        stride *= if times_five { 5 } else { 2 };
        times_five = !times_five;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(range: std::ops::RangeInclusive<u64>) -> Vec<(u64, f64)> {
        range.map(|s| (s, s as f64)).collect()
    }

    #[test]
    fn short_series_are_kept_whole() {
        let s = steps(1..=25_000);
        assert_eq!(downsample(s.clone()).len(), 25_000);
    }

    #[test]
    fn strides_run_one_five_ten_fifty() {
        assert_eq!(stride_for(&steps(1..=25_000)), 1);
        assert_eq!(stride_for(&steps(1..=100_000)), 5);
        assert_eq!(stride_for(&steps(1..=200_000)), 10);
        assert_eq!(stride_for(&steps(1..=1_000_000)), 50);
        assert_eq!(stride_for(&steps(1..=3_300_000)), 500);
    }

    #[test]
    fn megatrons_long_goldens_steps_and_windows_survive() {
        // Megatron's 100,000-step goldens: step 1 and every 5th; its million-step ones: step 1
        // and every 100th.
        let thinned = downsample(steps(1..=100_000));
        assert!(thinned.len() <= MAX_POINTS + 2, "{}", thinned.len());
        assert!((5..=100_000).step_by(5).all(|s| thinned.contains_key(&s)));
        let thinned = downsample(steps(1..=1_000_000));
        assert!(
            (100..=1_000_000)
                .step_by(100)
                .all(|s| thinned.contains_key(&s))
        );
        for window in [5..=20, 30..=45, 1..=2_000] {
            assert!(
                window.clone().all(|s| thinned.contains_key(&s)),
                "{window:?}"
            );
        }
        assert_eq!(thinned.keys().next_back(), Some(&1_000_000));
        assert_eq!(thinned[&1], 1.0);
    }

    #[test]
    fn the_last_step_is_kept_whatever_the_stride() {
        let thinned = downsample(steps(1..=300_007));
        assert_eq!(thinned.keys().next_back(), Some(&300_007));
        assert_eq!(thinned[&300_007], 300_007.0);
    }

    #[test]
    fn sparse_logging_needs_no_thinning_until_it_is_long() {
        // `--log-interval 100` over a million steps prints 10,000 lines: kept whole.
        let sparse: Vec<(u64, f64)> = (1..=10_000).map(|i| (i * 100, 1.0)).collect();
        assert_eq!(downsample(sparse).len(), 10_000);
    }
}
