//! Stage "compare": `goldgate power` — from N unchanged jobs, what each rule can see: for every
//! judged-over-repeats metric, the false-alarm rate of each rule on unchanged jobs and the
//! smallest change it detects in at least 95 % of comparisons, for 1, 3 and 5 repeats per gate
//! run; and, for jobs with a planted slowdown, how often each rule caught them.
//!
//! **Method (resampling the real jobs, no noise model):** for `k` repeats, every way of taking
//! `k` of the N unchanged jobs as "now" (at most [`MAX_SPLITS`], drawn with a seeded generator
//! when there are more) is judged against a golden made of the other jobs, exactly as `bless`
//! and `compare` would (the same judging code). Any regression is a false alarm, since all jobs
//! ran the same code. The same splits with a delay added to every sample of the "now" jobs —
//! what `GOLDGATE_PLANT_SAVE_DELAY_S` does inside every save — give the detection rate of a
//! change of that size (a change of +10 % adds 10 % of the unchanged jobs' median). The golden
//! then holds N − k jobs, fewer than a golden blessed from all N: the figures are a little
//! conservative. Three rules are judged side by side: Megatron's (one run against a one-run
//! golden, rtol 5 %), the band rule of `goldgate.yaml` and the two-sample test with the rule's
//! `min_effect` and `alpha`.

use std::collections::BTreeMap;

use super::components::{self, Noise};
use crate::compare::golden::band::{self, Series};
use crate::compare::golden::samples::GoldenSamples;
use crate::compare::golden::two_sample;
use crate::compare::stats::summary::{self, SplitMix64};
use crate::compare::stats::t_test;
use goldgate_core::rules::{Rule, TestKind};
use goldgate_schema::RunRecord;
use goldgate_schema::{Unit, Verdict};

/// Comparisons judged per rule and repeat count at most.
const MAX_SPLITS: usize = 500;
/// Required detection rate and largest false-alarm rate for "detected".
pub const POWER: f64 = 0.95;
const FALSE_ALARMS: f64 = 0.01;
/// Planted changes tried when searching for the smallest detected one.
const GRID: [f64; 16] = [
    0.01, 0.02, 0.03, 0.05, 0.075, 0.10, 0.15, 0.20, 0.30, 0.40, 0.50, 0.75, 1.0, 1.5, 2.0, 3.0,
];

/// What to compute.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerOptions {
    /// Repeats per gate run to evaluate (1, 3, 5).
    pub repeats: Vec<usize>,
    /// Golden jobs per comparison; `None` = all jobs not judged "now".
    pub golden_jobs: Option<usize>,
    /// Planted sizes to report detection rates at (e.g. 0.05, 0.10, 0.20).
    pub sizes: Vec<f64>,
}

/// The three rules compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Which {
    /// Megatron's check: one run against a one-run golden, rtol 5 %.
    Megatron,
    /// The metric's band rule from `goldgate.yaml`.
    Band,
    /// The two-sample test with the rule's `min_effect` and `alpha`.
    TwoSample,
}

/// One rule at one repeat count.
#[derive(Clone, Debug, PartialEq)]
pub struct RulePower {
    pub which: Which,
    /// The tolerance as reports show it.
    pub tolerance: String,
    pub repeats: usize,
    pub golden_jobs: usize,
    pub comparisons: usize,
    pub false_alarms: usize,
    /// Detection rate at each of the options' sizes.
    pub detection: Vec<(f64, f64)>,
    /// The smallest planted change detected in ≥ 95 % of comparisons (`None`: none up to
    /// +300 %).
    pub smallest: Option<f64>,
}

/// Real jobs with a planted slowdown, judged against the unchanged ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Planted {
    pub label: String,
    /// The planted change relative to the unchanged jobs' median.
    pub size: f64,
    pub jobs: usize,
    /// The two-sample estimate of all planted against all unchanged jobs: (change, low, high).
    pub measured: Option<(f64, f64, f64)>,
    /// Per rule and repeat count: (which, repeats, comparisons, detected, synthetic rate).
    pub rows: Vec<(Which, usize, usize, usize, f64)>,
}

/// Everything about one metric of one case and variant.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricPower {
    pub case: String,
    pub variant: String,
    pub metric: String,
    pub unit: Unit,
    pub noise: Noise,
    pub rules: Vec<RulePower>,
    pub planted: Vec<Planted>,
}

/// The whole `goldgate power` answer.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerReport {
    pub metrics: Vec<MetricPower>,
    /// Warm-up jobs seen (left out of everything), with their value against the unchanged
    /// median of each per-save metric.
    pub warmups: Vec<String>,
    pub notes: Vec<String>,
}

/// The three rules derived from a metric's rule in `goldgate.yaml`.
struct Rules {
    megatron: Rule,
    band: Rule,
    two: Rule,
}

impl Rules {
    fn of(rule: &Rule) -> Rules {
        let band = rule.edited(|r| r.test = TestKind::Band);
        Rules {
            megatron: band.edited(|r| {
                r.rtol = 0.05;
                r.atol = 0.0;
                r.max_cv = None;
            }),
            two: rule.edited(|r| r.test = TestKind::TwoSample),
            band,
        }
    }

    fn get(&self, which: Which) -> &Rule {
        match which {
            Which::Megatron => &self.megatron,
            Which::Band => &self.band,
            Which::TwoSample => &self.two,
        }
    }

    fn tolerance(&self, which: Which) -> String {
        match which {
            Which::Megatron => "Megatron: 1 run, rtol 5%".into(),
            Which::Band => format!("band: {}", self.band.describe(false)),
            Which::TwoSample => self.two.describe_two_sample(),
        }
    }
}

/// Whether `now` (repeats) is a regression against `golden` (jobs) under `which`.
fn flagged(which: Which, rules: &Rules, metric: &str, golden: &[&Series], now: &[Series]) -> bool {
    let rule = rules.get(which);
    let center = median_series(golden);
    let repeats: Vec<Option<&Series>> = now.iter().map(Some).collect();
    let verdict = match which {
        Which::TwoSample => {
            let samples = GoldenSamples {
                jobs: Vec::new(),
                metrics: BTreeMap::from([(
                    metric.to_string(),
                    golden.iter().map(|s| (*s).clone()).collect(),
                )]),
            };
            two_sample::judge(metric, rule, &center, &samples, &repeats, false).verdict
        }
        Which::Megatron | Which::Band => {
            band::judge(metric, rule, &center, &repeats, false).verdict
        }
    };
    verdict == Verdict::Regression
}

/// Per step, the median over the jobs of their finite values (what `bless` writes).
pub(crate) fn median_series(jobs: &[&Series]) -> Series {
    let mut steps: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for s in jobs {
        for (step, v) in s.iter().filter(|(_, v)| v.is_finite()) {
            steps.entry(*step).or_default().push(*v);
        }
    }
    steps
        .into_iter()
        .map(|(s, v)| (s, summary::median(&v).unwrap_or(f64::NAN)))
        .collect()
}

/// Every finite value of a series raised by `add` (a delay planted in every save).
fn plant(series: &Series, add: f64) -> Series {
    series
        .iter()
        .map(|(s, v)| (*s, if v.is_finite() { v + add } else { *v }))
        .collect()
}

/// The index sets of "now" jobs: every `k` of `n`, or [`MAX_SPLITS`] of them drawn at random.
fn splits(n: usize, k: usize, rng: &mut SplitMix64) -> Vec<Vec<usize>> {
    let total = binomial(n, k);
    if total <= MAX_SPLITS as f64 {
        return combinations(n, k);
    }
    (0..MAX_SPLITS)
        .map(|_| {
            let mut pool: Vec<usize> = (0..n).collect();
            let mut pick: Vec<usize> = (0..k).map(|i| pool.swap_remove(rng.below(n - i))).collect();
            pick.sort_unstable();
            pick
        })
        .collect()
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current = Vec::with_capacity(k);
    fn walk(start: usize, n: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in start..n {
            cur.push(i);
            walk(i + 1, n, k, cur, out);
            cur.pop();
        }
    }
    walk(0, n, k, &mut current, &mut out);
    out
}

/// The comparisons of one rule at one repeat count: (golden job indices, now job indices).
fn comparisons(
    which: Which,
    n: usize,
    k: usize,
    golden_jobs: Option<usize>,
    rng: &mut SplitMix64,
) -> Vec<(Vec<usize>, Vec<usize>)> {
    if which == Which::Megatron {
        // One run against a one-run golden: every ordered pair.
        return (0..n)
            .flat_map(|g| {
                (0..n)
                    .filter(move |&j| j != g)
                    .map(move |j| (vec![g], vec![j]))
            })
            .collect();
    }
    splits(n, k, rng)
        .into_iter()
        .map(|now| {
            let mut rest: Vec<usize> = (0..n).filter(|i| !now.contains(i)).collect();
            if let Some(g) = golden_jobs.filter(|g| *g < rest.len()) {
                while rest.len() > g {
                    rest.swap_remove(rng.below(rest.len()));
                }
                rest.sort_unstable();
            }
            (rest, now)
        })
        .collect()
}

/// Share of `cases` flagged with `add` planted in every "now" job.
fn rate(
    which: Which,
    rules: &Rules,
    metric: &str,
    jobs: &[Series],
    cases: &[(Vec<usize>, Vec<usize>)],
    add: f64,
) -> f64 {
    let hits = cases
        .iter()
        .filter(|(golden, now)| {
            let g: Vec<&Series> = golden.iter().map(|i| &jobs[*i]).collect();
            let n: Vec<Series> = now.iter().map(|i| plant(&jobs[*i], add)).collect();
            flagged(which, rules, metric, &g, &n)
        })
        .count();
    hits as f64 / cases.len().max(1) as f64
}

/// One rule at one repeat count over the unchanged jobs.
fn rule_power(
    which: Which,
    rules: &Rules,
    metric: &str,
    jobs: &[Series],
    k: usize,
    center: f64,
    opts: &PowerOptions,
) -> Option<RulePower> {
    let n = jobs.len();
    let needs = if which == Which::TwoSample { 2 } else { 1 };
    if n < k + needs || (which == Which::Megatron && k != 1) {
        return None;
    }
    let mut rng = SplitMix64::new(summary::SEED ^ (k as u64) << 8 ^ which as u64);
    let cases = comparisons(which, n, k, opts.golden_jobs, &mut rng);
    let alarms = rate(which, rules, metric, jobs, &cases, 0.0);
    let at = |size: f64| rate(which, rules, metric, jobs, &cases, size * center);
    let detection = opts.sizes.iter().map(|s| (*s, at(*s))).collect();
    let smallest = (alarms <= FALSE_ALARMS)
        .then(|| GRID.iter().copied().find(|s| at(*s) >= POWER))
        .flatten();
    Some(RulePower {
        which,
        tolerance: rules.tolerance(which),
        repeats: k,
        golden_jobs: cases.first().map_or(0, |c| c.0.len()),
        comparisons: cases.len(),
        false_alarms: (alarms * cases.len() as f64).round() as usize,
        detection,
        smallest,
    })
}

/// Real planted jobs against all unchanged jobs (or `golden_jobs` of them).
fn planted(
    rules: &Rules,
    metric: &str,
    unchanged: &[Series],
    label: &str,
    planted: &[Series],
    rows: &[RulePower],
    center: f64,
) -> Planted {
    let size = parse_size(label, center).unwrap_or(f64::NAN);
    let mut out_rows = Vec::new();
    for row in rows {
        let cases: Vec<(Vec<usize>, Vec<usize>)> = match row.which {
            Which::Megatron => (0..unchanged.len())
                .flat_map(|g| (0..planted.len()).map(move |p| (vec![g], vec![p])))
                .collect(),
            _ if row.repeats > planted.len() => continue,
            _ => combinations(planted.len(), row.repeats)
                .into_iter()
                .map(|now| ((0..unchanged.len()).collect(), now))
                .collect(),
        };
        let detected = cases
            .iter()
            .filter(|(g, now)| {
                let g: Vec<&Series> = g.iter().map(|i| &unchanged[*i]).collect();
                let n: Vec<Series> = now.iter().map(|i| planted[*i].clone()).collect();
                flagged(row.which, rules, metric, &g, &n)
            })
            .count();
        let synthetic = rate_for(row, rules, metric, unchanged, size * center);
        out_rows.push((row.which, row.repeats, cases.len(), detected, synthetic));
    }
    Planted {
        label: label.to_string(),
        size,
        jobs: planted.len(),
        measured: measured(rules.get(Which::TwoSample), unchanged, planted),
        rows: out_rows,
    }
}

/// The synthetic detection rate of a planted size for a rule row (same splits as the row).
fn rate_for(row: &RulePower, rules: &Rules, metric: &str, jobs: &[Series], add: f64) -> f64 {
    let mut rng = SplitMix64::new(summary::SEED ^ (row.repeats as u64) << 8 ^ row.which as u64);
    let cases = comparisons(row.which, jobs.len(), row.repeats, None, &mut rng);
    rate(row.which, rules, metric, jobs, &cases, add)
}

/// The two-sample estimate (change, low, high) of planted against unchanged jobs.
fn measured(rule: &Rule, unchanged: &[Series], planted: &[Series]) -> Option<(f64, f64, f64)> {
    let values = |jobs: &[Series]| -> Vec<f64> {
        jobs.iter()
            .filter_map(|s| {
                let last = s.keys().next_back().copied().unwrap_or(0);
                band::reduce(rule, s, last).map(|(v, _)| v)
            })
            .collect()
    };
    let e = t_test::estimate(&values(unchanged), &values(planted), rule.alpha).ok()?;
    Some((e.change, e.low, e.high))
}

/// `+10%` → 0.10; `0.25s` → 0.25 s against `center`. `None` for anything else.
pub fn parse_size(label: &str, center: f64) -> Option<f64> {
    let t = label.trim().trim_start_matches('+');
    if let Some(p) = t.strip_suffix('%') {
        return p.trim().parse::<f64>().ok().map(|v| v / 100.0);
    }
    let s: f64 = t.strip_suffix('s')?.trim().parse().ok()?;
    (center > 0.0).then(|| s / center)
}

/// The power of one metric of one group of unchanged jobs.
pub(crate) fn metric_power(
    rule: &Rule,
    metric: &str,
    unchanged: &[&RunRecord],
    planted_sets: &[(String, Vec<&RunRecord>)],
    opts: &PowerOptions,
) -> Option<(Noise, Vec<RulePower>, Vec<Planted>)> {
    let noise = components::noise(rule, metric, unchanged)?;
    let series = |records: &[&RunRecord]| -> Vec<Series> {
        records
            .iter()
            .filter_map(|r| r.metrics.get(metric).map(|s| s.0.clone()))
            .collect()
    };
    let jobs = series(unchanged);
    let rules = Rules::of(rule);
    let mut rows = Vec::new();
    for which in [Which::Megatron, Which::Band, Which::TwoSample] {
        for k in &opts.repeats {
            rows.extend(rule_power(
                which,
                &rules,
                metric,
                &jobs,
                *k,
                noise.center,
                opts,
            ));
        }
    }
    let planted_rows = planted_sets
        .iter()
        .filter(|_| rule.is_per_save())
        .map(|(label, records)| {
            let p = series(records);
            planted(&rules, metric, &jobs, label, &p, &rows, noise.center)
        })
        .filter(|p| p.jobs > 0)
        .collect();
    Some((noise, rows, planted_rows))
}

/// `goldgate power`: every case and variant of `unchanged` (warm-up jobs included, to be
/// reported and left out), each of its judged-over-repeats metrics (or only `only`), against
/// the planted sets `(label, records)`.
pub fn power(
    unchanged: Vec<(std::path::PathBuf, RunRecord)>,
    planted: &[(String, Vec<(std::path::PathBuf, RunRecord)>)],
    rules: &goldgate_core::rules::RuleSet,
    only: &[String],
    opts: &PowerOptions,
) -> PowerReport {
    let mut report = PowerReport {
        metrics: Vec::new(),
        warmups: Vec::new(),
        notes: Vec::new(),
    };
    for ((case, variant), group) in crate::compare::golden::engine::group(unchanged) {
        let jobs: Vec<&RunRecord> = usable(&group, &mut report.notes);
        let names: std::collections::BTreeSet<&String> =
            jobs.iter().flat_map(|r| r.metrics.keys()).collect();
        for metric in names {
            let Some(rule) = rules.find(metric).filter(|r| r.is_distribution()) else {
                continue;
            };
            if !only.is_empty() && !only.contains(metric) {
                continue;
            }
            let sets = planted_for(planted, &case, &variant);
            let Some((noise, rows, planted)) = metric_power(rule, metric, &jobs, &sets, opts)
            else {
                continue;
            };
            warmup_lines(&group, rule, metric, noise.center, &mut report.warmups);
            report.metrics.push(MetricPower {
                case: case.clone(),
                variant: variant.clone(),
                metric: metric.clone(),
                unit: rule.unit,
                noise,
                rules: rows,
                planted,
            });
        }
    }
    report
}

/// The passed, measured jobs of a group; failed ones are noted.
fn usable<'a>(
    group: &'a [(std::path::PathBuf, RunRecord)],
    notes: &mut Vec<String>,
) -> Vec<&'a RunRecord> {
    let mut jobs = Vec::new();
    for (path, r) in group {
        if !r.outcome.passed() {
            notes.push(format!(
                "{} ({}): {}; left out",
                r.job_id,
                path.display(),
                r.outcome.label()
            ));
        } else if !r.warmup {
            jobs.push(r);
        }
    }
    jobs
}

fn planted_for<'a>(
    planted: &'a [(String, Vec<(std::path::PathBuf, RunRecord)>)],
    case: &str,
    variant: &str,
) -> Vec<(String, Vec<&'a RunRecord>)> {
    planted
        .iter()
        .map(|(label, records)| {
            let jobs = records
                .iter()
                .map(|(_, r)| r)
                .filter(|r| r.case == case && r.variant.name == variant)
                .filter(|r| r.outcome.passed() && !r.warmup)
                .collect();
            (label.clone(), jobs)
        })
        .collect()
}

/// One line per warm-up job of a per-save metric: its value against the unchanged median.
fn warmup_lines(
    group: &[(std::path::PathBuf, RunRecord)],
    rule: &Rule,
    metric: &str,
    center: f64,
    out: &mut Vec<String>,
) {
    if !rule.is_per_save() {
        return;
    }
    for (_, r) in group.iter().filter(|(_, r)| r.warmup && r.outcome.passed()) {
        let Some(s) = r.metrics.get(metric) else {
            continue;
        };
        let last = s.0.keys().next_back().copied().unwrap_or(0);
        if let Some((v, _)) = band::reduce(rule, &s.0, last) {
            out.push(format!(
                "{} `{metric}`: {:+.1}% against the unchanged jobs' median",
                r.job_id,
                (v / center - 1.0) * 100.0
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::record;
    use goldgate_core::rules::RuleSet;

    /// Unchanged jobs with saves after the first at `t` (±2 % within each job).
    fn jobs(times: &[f64]) -> Vec<(std::path::PathBuf, RunRecord)> {
        times
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let saves: Vec<(u64, f64)> = (1..=8u64)
                    .map(|k| {
                        (
                            2 * k,
                            if k == 1 {
                                9.0
                            } else {
                                t * (1.0 + 0.02 * ((k % 3) as f64 - 1.0))
                            },
                        )
                    })
                    .collect();
                record("m/c", i as u32 + 1, &[("checkpoint-blocking-time", &saves)])
            })
            .collect()
    }

    const CALM: [f64; 10] = [2.0, 2.04, 1.97, 2.02, 1.99, 2.01, 1.96, 2.03, 2.0, 1.98];

    fn opts() -> PowerOptions {
        PowerOptions {
            repeats: vec![1, 3],
            golden_jobs: None,
            sizes: vec![0.05, 0.10, 0.20],
        }
    }

    fn row(m: &MetricPower, which: Which, k: usize) -> &RulePower {
        m.rules
            .iter()
            .find(|r| r.which == which && r.repeats == k)
            .unwrap()
    }

    #[test]
    fn splits_enumerate_or_sample() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(splits(5, 2, &mut rng).len(), 10);
        assert_eq!(splits(30, 5, &mut rng).len(), MAX_SPLITS);
        assert!(
            splits(30, 5, &mut rng)
                .iter()
                .all(|s| s.len() == 5 && s.windows(2).all(|w| w[0] < w[1]))
        );
        let megatron = comparisons(Which::Megatron, 4, 1, None, &mut rng);
        assert_eq!(megatron.len(), 12);
        let g = comparisons(Which::TwoSample, 10, 3, Some(5), &mut rng);
        assert!(
            g.iter()
                .all(|(golden, now)| golden.len() == 5 && now.len() == 3)
        );
    }

    #[test]
    fn sizes_parse_as_percent_or_seconds() {
        assert_eq!(parse_size("+10%", 2.0), Some(0.10));
        assert_eq!(parse_size("0.5s", 2.0), Some(0.25));
        assert_eq!(parse_size("ten", 2.0), None);
    }

    /// Calm jobs (2 % apart): the two-sample test finds +10 % with 3 repeats, raises no false
    /// alarm, and real planted jobs are caught as often as the synthetic plant predicts.
    #[test]
    fn calm_jobs_give_small_detectable_changes_and_real_plants_agree() {
        let planted = vec![("+10%".to_string(), jobs(&[2.2, 2.24, 2.19]))];
        let report = power(jobs(&CALM), &planted, &RuleSet::megatron(), &[], &opts());
        let m = &report.metrics[0];
        assert_eq!(m.metric, "checkpoint-blocking-time");
        assert_eq!((m.noise.jobs, m.noise.samples), (10, (7, 7)));
        let two = row(m, Which::TwoSample, 3);
        assert_eq!(
            (two.comparisons, two.false_alarms, two.golden_jobs),
            (120, 0, 7)
        );
        assert!(two.smallest.is_some_and(|s| s <= 0.10), "{two:?}");
        let p = &m.planted[0];
        assert_eq!((p.size, p.jobs), (0.10, 3));
        let (change, low, _) = p.measured.unwrap();
        assert!(change > 0.08 && low > 0.0, "{p:?}");
        let real = p
            .rows
            .iter()
            .find(|r| r.0 == Which::TwoSample && r.1 == 3)
            .unwrap();
        assert_eq!((real.2, real.3), (1, 1));
        // Megatron's 5 % on one run: every ordered pair of the 10 jobs.
        let meg = row(m, Which::Megatron, 1);
        assert_eq!(meg.comparisons, 90);
    }

    /// Noisy jobs (a 30 % spread): nothing small is detectable, and Megatron's 5 % raises
    /// false alarms.
    #[test]
    fn noisy_jobs_make_megatrons_rule_cry_wolf() {
        let noisy = [2.0, 2.6, 1.6, 2.3, 1.8, 2.9, 1.7, 2.2, 2.5, 1.9];
        let report = power(jobs(&noisy), &[], &RuleSet::megatron(), &[], &opts());
        let m = &report.metrics[0];
        let meg = row(m, Which::Megatron, 1);
        assert!(meg.false_alarms > 20, "{meg:?}");
        assert_eq!(meg.smallest, None, "false alarms above 1 % detect nothing");
        let two = row(m, Which::TwoSample, 3);
        assert!(two.smallest.is_none_or(|s| s >= 0.3), "{two:?}");
        assert!(
            (two.false_alarms as f64) <= 0.03 * two.comparisons as f64,
            "{two:?}"
        );
    }
}
