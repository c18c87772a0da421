//! Stage "history": change points in a series by E-divisive means, the way Apache Otava finds
//! them (Fleming et al., "Hunter", ICPE 2023; Matteson & James 2014), written from the
//! algorithm, not from Otava's code:
//!
//! 1. **Split.** Windows of `window` points, each starting half a window after the last (or at
//!    the last change point found in it). In a window, E-divisive means picks the split
//!    `(τ, κ)` that maximizes the divergence `Q̂` between `z[s..τ)` and `z[τ..κ)` over every
//!    interval between the points found so far, and keeps `τ` while a two-sided Student's
//!    t-test of the two sides has `p ≤` the first-pass threshold (10 × `max_pvalue` below
//!    0.05, 2 × below 0.5). The union over windows is the *weak* change points.
//! 2. **Merge.** Each weak point is tested again between its neighbours over the whole
//!    series; the one with the largest p-value above `max_pvalue` (else, the one with the
//!    smallest relative change when that is at most `min_magnitude`) is dropped and the
//!    points at its position and the next are tested again, until every point left is both
//!    significant and large enough: the *strong* change points.
//!
//! The t-test is Otava's: population standard deviations (ddof 0) pooled as in the
//! equal-variance test with `n₁ + n₂ − 2` degrees of freedom; two points in all give p = 1.
//! Ties go where Otava's do (the first `τ`, then the first `κ`; the first of equal p-values).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// How to search: Otava's defaults are `window 50, max_pvalue 0.001, min_magnitude 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    pub window: usize,
    pub max_pvalue: f64,
    /// Smallest relative change kept (0.05 = 5 %).
    pub min_magnitude: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            window: 50,
            max_pvalue: 0.001,
            min_magnitude: 0.0,
        }
    }
}

/// The smallest relative change of a change point of an exact counter or a byte count by
/// default: 1 %. Those values are deterministic, so any move is significant to the t-test,
/// and they move by a few units for reasons nobody gates on (a run id 18 characters shorter in
/// an output path: `checkpoint-written-bytes` 67,109,735 → 67,109,717).
pub const EXACT_MIN_MAGNITUDE: f64 = 0.01;

impl Options {
    /// Otava's defaults, with [`EXACT_MIN_MAGNITUDE`] for exact counters and byte metrics:
    /// how the site, `show`, `changes` and the trend line search a stored series.
    pub fn for_metric(metric: &str) -> Options {
        use goldgate_schema::Unit;
        use goldgate_schema::metric_names::{BYTE_COUNTERS, EXACT_COUNTERS};
        let exact = EXACT_COUNTERS.contains(&metric)
            || BYTE_COUNTERS.contains(&metric)
            || matches!(Unit::of_metric(metric), Unit::Bytes | Unit::Count);
        Options {
            min_magnitude: if exact { EXACT_MIN_MAGNITUDE } else { 0.0 },
            ..Options::default()
        }
    }
}

/// The two sides of a change point and how different they are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub mean_before: f64,
    pub mean_after: f64,
    pub std_before: f64,
    pub std_after: f64,
    pub pvalue: f64,
}

impl Stats {
    /// `after / before − 1` (0 when `before` is 0).
    pub fn forward_change(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    /// The larger of the relative changes either way.
    pub fn magnitude(&self) -> f64 {
        let back = if self.mean_after == 0.0 {
            0.0
        } else {
            self.mean_before / self.mean_after - 1.0
        };
        self.forward_change().abs().max(back.abs())
    }
}

/// A change point: the series differs from `index` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The divergence E-divisive maximized when it found the point.
    pub qhat: f64,
    pub stats: Stats,
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detection {
    /// The strong change points, by index.
    pub points: Vec<ChangePoint>,
    /// The weak ones the split step found (a superset), by index.
    pub weak: Vec<ChangePoint>,
}

impl Detection {
    pub fn indices(&self) -> Vec<usize> {
        self.points.iter().map(|c| c.index).collect()
    }
}

/// The change points of `series`; NaNs are filled from the previous value (leading ones from
/// the next), as Otava fills missing values.
pub fn detect(series: &[f64], opts: &Options) -> Detection {
    let z = fill_missing(series);
    let window = opts.window.max(2);
    let weak = split(&z, window, first_pass(opts.max_pvalue));
    let points = merge(weak.clone(), &z, opts.max_pvalue, opts.min_magnitude);
    Detection { points, weak }
}

fn first_pass(p: f64) -> f64 {
    if p < 0.05 {
        p * 10.0
    } else if p < 0.5 {
        p * 2.0
    } else {
        p
    }
}

fn fill_missing(series: &[f64]) -> Vec<f64> {
    let mut z = series.to_vec();
    let mut prev: Option<f64> = None;
    for v in z.iter_mut() {
        match prev {
            Some(p) if v.is_nan() => *v = p,
            _ => {}
        }
        prev = Some(*v).filter(|x| !x.is_nan());
    }
    let mut next: Option<f64> = None;
    for v in z.iter_mut().rev() {
        match next {
            Some(n) if v.is_nan() => *v = n,
            _ => {}
        }
        next = Some(*v).filter(|x| !x.is_nan());
    }
    z
}

/// The split step over the whole series: the weak change points, tested over the series.
fn split(z: &[f64], window: usize, pvalue: f64) -> Vec<ChangePoint> {
    let step = window / 2;
    let mut found: Vec<ChangePoint> = Vec::new();
    let mut start = 0;
    while start < z.len() {
        let end = (start + window).min(z.len());
        let local = divisive(&z[start..end], pvalue);
        let last = local.last().map_or(0, |c| c.index + start);
        for mut c in local {
            c.index += start;
            if !found.iter().any(|f| f.index == c.index) {
                found.push(c);
            }
        }
        start = last.max(start + step.max(1));
    }
    found.sort_by_key(|c| c.index);
    let bounds = boundaries(&found, z.len());
    found
        .iter()
        .enumerate()
        .map(|(i, c)| retest(c, z, bounds[i], bounds[i + 2]))
        .collect()
}

/// `0, c₁, …, c_k, n`: the interval edges of change points sorted by index.
fn boundaries(points: &[ChangePoint], n: usize) -> Vec<usize> {
    std::iter::once(0)
        .chain(points.iter().map(|c| c.index))
        .chain(std::iter::once(n))
        .collect()
}

fn retest(c: &ChangePoint, z: &[f64], lo: usize, hi: usize) -> ChangePoint {
    ChangePoint {
        stats: ttest(&z[lo..c.index], &z[c.index..hi]),
        ..*c
    }
}

/// E-divisive means on one window: keep the best split of any interval while it is
/// significant. Indices are relative to `z`.
fn divisive(z: &[f64], pvalue: f64) -> Vec<ChangePoint> {
    let mut points: Vec<ChangePoint> = Vec::new();
    loop {
        let edges = boundaries(&points, z.len());
        let mut best: Option<(usize, usize, f64)> = None; // (interval, τ, q̂)
        for (k, w) in edges.windows(2).enumerate() {
            if w[1] - w[0] < 2 {
                continue;
            }
            let (tau, q) = best_split(&z[w[0]..w[1]]);
            if best.is_none_or(|b| q > b.2) {
                best = Some((k, w[0] + tau, q));
            }
        }
        let Some((k, index, qhat)) = best else { break };
        let stats = ttest(&z[edges[k]..index], &z[index..edges[k + 1]]);
        // A NaN p-value is not significant.
        let significant = stats.pvalue.is_finite() && stats.pvalue <= pvalue;
        if !significant {
            break;
        }
        points.push(ChangePoint { index, qhat, stats });
        points.sort_by_key(|c| c.index);
    }
    points
}

/// The `τ` (relative to `z`, `1 ≤ τ < len`) and `Q̂` of the best split of `z`: the maximum over
/// `0 < τ < κ ≤ len` of
/// `Q̂ = 2/(n+m)·ΣΣ|xᵢ−yⱼ| − 2m/((n+m)(n−1))·Σ|xᵢ−xₖ| − 2n/((n+m)(m−1))·Σ|yⱼ−yₖ|`
/// for `x = z[0..τ)` (n points) and `y = z[τ..κ)` (m points), the terms of a one-point side
/// being 0. O(len²) time and memory: `col[t][j] = Σ_{i<t} |zᵢ − zⱼ|`.
fn best_split(z: &[f64]) -> (usize, f64) {
    let len = z.len();
    // col[t * len + j] = Σ_{i < t} |z_i - z_j|, for t in 0..=len.
    let mut col = vec![0.0; (len + 1) * len];
    for t in 0..len {
        let (done, rest) = col.split_at_mut((t + 1) * len);
        let prev = &done[t * len..];
        for j in 0..len {
            rest[j] = prev[j] + (z[t] - z[j]).abs();
        }
    }
    let at = |t: usize, j: usize| col[t * len + j];
    let mut best = (1, f64::NEG_INFINITY);
    let mut within_x = 0.0;
    for tau in 1..len {
        within_x += at(tau - 1, tau - 1);
        let n = tau as f64;
        let mut cross = 0.0;
        let mut within_y = 0.0;
        for kappa in tau + 1..=len {
            let last = kappa - 1;
            cross += at(tau, last);
            within_y += at(last, last) - at(tau, last);
            let m = (kappa - tau) as f64;
            let total = n + m;
            let mut q = 2.0 / total * cross;
            if tau > 1 {
                q -= 2.0 * m / (total * (n - 1.0)) * within_x;
            }
            if kappa - tau > 1 {
                q -= 2.0 * n / (total * (m - 1.0)) * within_y;
            }
            if q > best.1 {
                best = (tau, q);
            }
        }
    }
    best
}

/// Otava's t-test of two sides (see the module doc).
pub fn ttest(left: &[f64], right: &[f64]) -> Stats {
    let (m1, s1) = mean_std(left);
    let (m2, s2) = mean_std(right);
    let (n1, n2) = (left.len() as f64, right.len() as f64);
    let pvalue = if left.len() + right.len() > 2 {
        let df = n1 + n2 - 2.0;
        let pooled = ((n1 - 1.0) * s1 * s1 + (n2 - 1.0) * s2 * s2) / df;
        let t = (m1 - m2) / (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
        two_sided(t, df)
    } else {
        1.0
    };
    Stats {
        mean_before: m1,
        mean_after: m2,
        std_before: s1,
        std_after: s2,
        pvalue,
    }
}

fn two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => 2.0 * dist.sf(t.abs()),
        Err(_) => f64::NAN,
    }
}

/// The mean and the population standard deviation (0 for fewer than two values).
fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The merge step (see the module doc).
fn merge(
    mut points: Vec<ChangePoint>,
    z: &[f64],
    max_p: f64,
    min_magnitude: f64,
) -> Vec<ChangePoint> {
    while !points.is_empty() {
        let mut weakest = first_max_by(&points, |c| c.stats.pvalue);
        if points[weakest].stats.pvalue < max_p {
            weakest = first_min_by(&points, |c| c.stats.magnitude());
            if points[weakest].stats.magnitude() > min_magnitude {
                return points;
            }
        }
        points.remove(weakest);
        // As Otava does: the points now at the removed one's position and the next.
        let bounds = boundaries(&points, z.len());
        for i in [weakest, weakest + 1] {
            if i < points.len() {
                points[i] = retest(&points[i], z, bounds[i], bounds[i + 2]);
            }
        }
    }
    points
}

/// The first element whose key no later one exceeds (Python's `max`; NaN never exceeds).
fn first_max_by(points: &[ChangePoint], key: impl Fn(&ChangePoint) -> f64) -> usize {
    let mut best = 0;
    for i in 1..points.len() {
        if key(&points[i]) > key(&points[best]) {
            best = i;
        }
    }
    best
}

/// The first element no later one is below (Python's `min`).
fn first_min_by(points: &[ChangePoint], key: impl Fn(&ChangePoint) -> f64) -> usize {
    let mut best = 0;
    for i in 1..points.len() {
        if key(&points[i]) < key(&points[best]) {
            best = i;
        }
    }
    best
}

/// The change points of a stored series (indices into `points`, by run medians), with
/// Otava's defaults.
pub fn of_points(points: &[super::series::Point], metric: &str) -> Vec<usize> {
    let medians: Vec<f64> = points.iter().map(super::series::Point::median).collect();
    detect(&medians, &Options::for_metric(metric)).indices()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A noisy series with steps planted at `at`, deterministic (a linear congruential
    /// generator, uniform noise of ±`noise`).
    pub(crate) fn planted(n: usize, at: &[(usize, f64)], noise: f64, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                let level: f64 = 100.0
                    + at.iter()
                        .filter(|(k, _)| i >= *k)
                        .map(|(_, d)| d)
                        .sum::<f64>();
                level + (u * 2.0 - 1.0) * noise
            })
            .collect()
    }

    // The expected indices are what Apache Otava 0.8.0's `compute_change_points` (window 50,
    // max_pvalue 0.001) returns for the same series, generated by the same generator in
    // Python: uniform noise makes it find two small extra points in each, and so must this.

    #[test]
    fn a_planted_step_is_found_at_its_index_as_otava_finds_it() {
        let z = planted(120, &[(60, 10.0)], 1.0, 7);
        let d = detect(&z, &Options::default());
        assert_eq!(d.indices(), vec![60, 82, 96]);
        let c = d.points[0];
        assert!((c.stats.forward_change() - 0.1).abs() < 0.02, "{c:?}");
    }

    #[test]
    fn several_steps_up_and_down_are_all_found_as_otava_finds_them() {
        let z = planted(400, &[(100, 8.0), (220, -15.0), (300, 5.0)], 1.0, 3);
        assert_eq!(
            detect(&z, &Options::default()).indices(),
            vec![100, 145, 152, 220, 300]
        );
    }

    #[test]
    fn noise_alone_and_a_constant_series_have_no_change_point() {
        assert!(
            detect(&planted(300, &[], 1.0, 11), &Options::default())
                .points
                .is_empty()
        );
        assert!(detect(&[5.0; 80], &Options::default()).points.is_empty());
        assert!(detect(&[], &Options::default()).points.is_empty());
        assert!(detect(&[1.0], &Options::default()).points.is_empty());
    }

    #[test]
    fn min_magnitude_drops_small_changes() {
        let z = planted(200, &[(100, 3.0)], 0.2, 5);
        assert_eq!(detect(&z, &Options::default()).indices(), vec![100]);
        let big_only = Options {
            min_magnitude: 0.05,
            ..Options::default()
        };
        assert!(detect(&z, &big_only).points.is_empty());
    }

    #[test]
    fn the_ttest_matches_scipy_on_population_deviations() {
        // scipy.stats.ttest_ind_from_stats(2, np.std([1,2,3]), 3, 5, np.std([4,5,6]), 3)
        // with np.std (ddof 0) = 0.8165: t = -4.5, p = 0.0108226 (what scipy printed).
        let s = ttest(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((s.pvalue - 0.010822550).abs() < 1e-8, "{s:?}");
        assert_eq!(ttest(&[1.0], &[2.0]).pvalue, 1.0);
        assert_eq!(ttest(&[1.0, 1.0], &[2.0, 2.0]).pvalue, 0.0);
        assert!(ttest(&[1.0, 1.0], &[1.0, 1.0]).pvalue.is_nan());
    }

    #[test]
    fn missing_values_are_filled_from_their_neighbours() {
        let z = fill_missing(&[f64::NAN, 2.0, f64::NAN, 4.0, f64::NAN]);
        assert_eq!(z, vec![2.0, 2.0, 2.0, 4.0, 4.0]);
    }

    /// Otava's own test series (`judge/tests/fixtures/otava/otava_series.json`, every case with
    /// the change points apache-otava 0.8.0 returned for it, recorded by
    /// `benches/otava_compare.py`): for every window, p-value and magnitude its tests use, this
    /// finds the points Otava finds.
    #[test]
    fn every_otava_test_case_finds_otavas_change_points() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/otava/otava_series.json"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let cases = doc["cases"].as_array().unwrap();
        assert!(cases.len() >= 12);
        let numbers = |v: &serde_json::Value| -> Vec<f64> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let mut failures = Vec::new();
        for case in cases {
            let name = case["series"].as_str().unwrap();
            let series = numbers(&doc["series"][name]);
            let opts = Options {
                window: case["window"].as_u64().unwrap() as usize,
                max_pvalue: case["max_pvalue"].as_f64().unwrap(),
                min_magnitude: case["min_magnitude"].as_f64().unwrap(),
            };
            let otava: Vec<usize> = numbers(&case["otava_0_8_0"])
                .into_iter()
                .map(|i| i as usize)
                .collect();
            let ours = detect(&series, &opts).indices();
            if ours != otava {
                failures.push(format!(
                    "{name} {opts:?}:\n  otava    {otava:?}\n  goldgate {ours:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
