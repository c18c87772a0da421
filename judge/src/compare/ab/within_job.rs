//! Stage "compare": `goldgate ab --within-job`'s statistics — both arms inside every job,
//! switched by the probe save by save, judged pair by pair of adjacent saves.
//!
//! **The design.** A job's saves after the first `skip` (one-time set-up) form adjacent pairs
//! `(skip+2k, skip+2k+1)`. For each pair a seeded coin picks the order, `ab` or `ba`
//! ([`schedule`]); the probe puts a save's arm in force before that save's window opens, and it
//! stays until the next save. So a **unit** is one save plus the steps after it, and both the
//! save's window (`checkpoint-window-time`: the probe's window around
//! `save_checkpoint_and_time`) and the mean step time up to the next save (`iteration-time`)
//! are judged, each as `d_k = ln B_k − ln A_k` over the pairs of every job so far. A level the
//! job carries, a drift through it and the end-of-job profile are shared by both saves of a
//! pair; the coin turns what is left (which save of a pair comes first) into noise with mean 0.
//!
//! **The test is exact for the design.** Under "B changes nothing" each `d_k` is, by the coin,
//! equally likely `+x` or `−x`: the signs are fair coins whatever the saves' own distribution.
//! So Wilcoxon's signed-rank statistic has its exact null distribution (computed, not
//! approximated: [`signed_rank_null`]), and inverting it gives the Hodges–Lehmann estimate (the
//! median of the Walsh averages `(d_i + d_j)/2`) with an exact interval under a shift. Each look
//! (after every job) spends, in each direction, `alpha / (metrics × max_jobs)` (Bonferroni over
//! the timing metrics and the looks), so the chance that any look of an A/A run calls either
//! metric a regression is at most `alpha` whatever the stopping rule.
//!
//! **Decision** (lower is better): `regression` when the interval lies wholly above 0 (the
//! one-sided test says B is slower); `improvement` when wholly below 0; `pass` when it lies
//! wholly below `+min_effect` (no slowdown that large); otherwise undecided, and
//! `inconclusive` once `max_jobs` ran. Counters per save (`empty_cache` calls, `fsync` calls)
//! are compared arm against arm with no statistics: B's median against A's.

use serde::{Deserialize, Serialize};

use super::metric::{AbMetric, AbTest, AbVerdict};
use crate::compare::stats::summary;
use goldgate_schema::RunRecord;

/// The save-window metric: the probe's window around each save (s).
pub const WINDOW_METRIC: &str = "checkpoint-window-time";
/// The step-time metric: the mean of the steps after a save, up to the next (the log's
/// `iteration-time`).
pub const STEP_METRIC: &str = "iteration-time";

/// A setting the probe switches while the job runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Switch {
    /// Sleeps this many seconds inside the save window (a planted regression).
    SaveDelay(f64),
    /// `remove`: `save_checkpoint_and_time`'s own `torch.cuda.empty_cache()` skipped;
    /// `add`: one more call in the window.
    EmptyCache(EmptyCache),
    /// The allocator's `garbage_collection_threshold`, set with
    /// `torch.cuda.memory._set_allocator_settings` before the save.
    GcThreshold(f64),
}

/// The `empty-cache` switch's two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmptyCache {
    Remove,
    Add,
}

/// Settings that are fixed when the process starts, with what to use instead.
const FIXED_AT_START: [(&str, &str); 4] = [
    (
        "expandable-segments",
        "expandable_segments is read when the allocator starts",
    ),
    ("variant", "a variant changes the command line"),
    ("build", "a build is loaded when the process starts"),
    (
        "checkout",
        "code in a checkout is imported when the process starts",
    ),
];

impl Switch {
    /// `save-delay=0.04`, `empty-cache=remove`, `gc-threshold=0.8`; a clear message otherwise.
    pub fn parse(text: &str) -> Result<Switch, String> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| format!("switch `{text}` is not NAME=VALUE"))?;
        let number = |what: &str| {
            value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{key} takes {what}, not `{value}`"))
        };
        match key {
            "save-delay" => {
                let s = number("seconds")?;
                if s < 0.0 {
                    return Err(format!(
                        "save-delay takes seconds of 0 or more, not `{value}`"
                    ));
                }
                Ok(Switch::SaveDelay(s))
            }
            "empty-cache" => match value {
                "remove" => Ok(Switch::EmptyCache(EmptyCache::Remove)),
                "add" => Ok(Switch::EmptyCache(EmptyCache::Add)),
                _ => Err(format!("empty-cache takes remove or add, not `{value}`")),
            },
            "gc-threshold" => {
                let t = number("a share between 0 and 1")?;
                if !(t > 0.0 && t < 1.0) {
                    return Err(format!(
                        "gc-threshold takes a share between 0 and 1 (PyTorch's range), not `{value}`"
                    ));
                }
                Ok(Switch::GcThreshold(t))
            }
            _ => {
                let fixed = FIXED_AT_START.iter().find(|(k, _)| *k == key);
                Err(match fixed {
                    Some((_, why)) => format!(
                        "`{key}` cannot be switched while the job runs ({why}): compare it with job-level `goldgate ab` (--a-env/--b-env, --a-variant/--b-variant, --a-dir/--b-dir)"
                    ),
                    None => format!(
                        "unknown switch `{key}`: the probe switches save-delay, empty-cache and gc-threshold while a job runs; anything else is fixed at process start and belongs to job-level `goldgate ab`"
                    ),
                })
            }
        }
    }

    /// The switch's name.
    pub fn name(&self) -> &'static str {
        match self {
            Switch::SaveDelay(_) => "save-delay",
            Switch::EmptyCache(_) => "empty-cache",
            Switch::GcThreshold(_) => "gc-threshold",
        }
    }

    /// As the probe reads it (`GOLDGATE_INJOB_A`/`_B` hold these, comma-separated).
    pub fn render(&self) -> String {
        match self {
            Switch::SaveDelay(s) => format!("save-delay={s}"),
            Switch::EmptyCache(EmptyCache::Remove) => "empty-cache=remove".into(),
            Switch::EmptyCache(EmptyCache::Add) => "empty-cache=add".into(),
            Switch::GcThreshold(t) => format!("gc-threshold={t}"),
        }
    }
}

/// Both arms' switches, checked together: one switch a name per arm, and `gc-threshold` on
/// both arms or neither (PyTorch cannot unset it while the process runs, so an arm without it
/// would inherit the other's).
pub fn check_arms(a: &[Switch], b: &[Switch]) -> Result<(), String> {
    for (arm, switches) in [("A", a), ("B", b)] {
        for (i, s) in switches.iter().enumerate() {
            if switches[..i].iter().any(|o| o.name() == s.name()) {
                return Err(format!("arm {arm} names `{}` twice", s.name()));
            }
        }
    }
    let gc = |v: &[Switch]| v.iter().any(|s| matches!(s, Switch::GcThreshold(_)));
    if gc(a) != gc(b) {
        return Err(
            "gc-threshold cannot be unset while a job runs: give both arms a value (e.g. --a-switch gc-threshold=0.99 --b-switch gc-threshold=0.8)".into(),
        );
    }
    Ok(())
}

/// The arm of every save of job `job` (0-based) under `seed`: `skip` saves outside the design
/// (`-`), then `pairs` pairs, each `ab` or `ba` by a seeded coin.
pub fn schedule(seed: u64, job: u32, skip: usize, pairs: usize) -> String {
    let mut rng =
        summary::SplitMix64::new(seed ^ u64::from(job).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut out = "-".repeat(skip);
    for _ in 0..pairs {
        out.push_str(if rng.next_u64() & 1 == 1 { "ba" } else { "ab" });
    }
    out
}

/// One unit of a job: a save and the steps after it, under one arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InJobUnit {
    pub iteration: u64,
    /// `a` or `b`.
    pub arm: char,
    /// The probe's window (s).
    pub window: f64,
    /// The mean step time after the save, up to the next save (the metric's unit).
    pub steps: Option<f64>,
    pub empty_cache_calls: Option<u64>,
    pub fsync_calls: Option<u64>,
}

/// Why a job's records cannot be judged within the job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InJobError {
    #[error(
        "job {job}: the probe recorded no arm for any save (does the entry save through Megatron's save_checkpoint_and_time, with goldgate's probe on?)"
    )]
    NoArms { job: String },
    #[error("job {job}: save at iteration {iteration}: {message}")]
    SwitchFailed {
        job: String,
        iteration: u64,
        message: String,
    },
    #[error(
        "job {job}: saves {first} and {second} form a pair but ran under arms {arms}: the schedule and the saves disagree"
    )]
    BadPair {
        job: String,
        first: u64,
        second: u64,
        arms: String,
    },
}

/// A job's units in save order, paired: `(first, second)` of each design pair, both recorded.
pub fn job_pairs(job: &str, record: &RunRecord) -> Result<Vec<(InJobUnit, InJobUnit)>, InJobError> {
    let steps = record.metrics.get(STEP_METRIC).map(|s| &s.0);
    let saves = &record.checkpoints;
    let mut units: Vec<Option<InJobUnit>> = Vec::new();
    let mut skip = 0;
    for (i, c) in saves.iter().enumerate() {
        let Some(p) = &c.probe else {
            units.push(None);
            continue;
        };
        if let Some(message) = &p.switch_error {
            return Err(InJobError::SwitchFailed {
                job: job.to_owned(),
                iteration: c.iteration,
                message: message.clone(),
            });
        }
        let arm = p.arm.as_deref().and_then(|a| a.chars().next());
        if arm.is_none() && units.iter().all(Option::is_none) {
            skip = i + 1;
        }
        let next = saves.get(i + 1).map_or(u64::MAX, |n| n.iteration);
        let after: Vec<f64> = steps
            .map(|s| s.range(c.iteration + 1..=next).map(|(_, v)| *v).collect())
            .unwrap_or_default();
        units.push(arm.map(|arm| InJobUnit {
            iteration: c.iteration,
            arm,
            window: p.seconds,
            steps: (!after.is_empty()).then(|| after.iter().sum::<f64>() / after.len() as f64),
            empty_cache_calls: p.parts.empty_cache_calls,
            fsync_calls: p.parts.fsync_calls,
        }));
    }
    if units.iter().all(Option::is_none) {
        return Err(InJobError::NoArms {
            job: job.to_owned(),
        });
    }
    let mut pairs = Vec::new();
    for chunk in units[skip..].chunks(2) {
        let [Some(x), Some(y)] = chunk else { continue };
        if x.arm == y.arm {
            return Err(InJobError::BadPair {
                job: job.to_owned(),
                first: x.iteration,
                second: y.iteration,
                arms: format!("{}{}", x.arm, y.arm),
            });
        }
        pairs.push((x.clone(), y.clone()));
    }
    Ok(pairs)
}

/// The sequential test's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct InJobTest {
    /// False-alarm rate of the whole run, each direction (all metrics and looks together).
    pub alpha: f64,
    /// `pass` needs the interval wholly below `+min_effect`.
    pub min_effect: f64,
    /// Jobs at most; a look after each.
    pub max_jobs: u32,
    /// The timing metrics judged (the alpha is split over them).
    pub metrics: u32,
}

impl InJobTest {
    /// What one look spends in each direction.
    pub fn alpha_per_look(&self) -> f64 {
        self.alpha / f64::from(self.max_jobs.max(1) * self.metrics.max(1))
    }

    /// The two-sided level of each look's interval.
    pub fn level(&self) -> f64 {
        1.0 - 2.0 * self.alpha_per_look()
    }
}

/// `P(W⁺ ≤ w)` for `w = 0..=n(n+1)/2`: the exact null distribution of Wilcoxon's signed-rank
/// statistic for `n` pairs without ties (each rank's sign a fair coin).
pub fn signed_rank_null(n: usize) -> Vec<f64> {
    let top = n * (n + 1) / 2;
    let mut p = vec![0.0; top + 1];
    p[0] = 1.0;
    for rank in 1..=n {
        let reach = rank * (rank + 1) / 2;
        for w in (0..=reach).rev() {
            let with = if w >= rank { p[w - rank] } else { 0.0 };
            p[w] = 0.5 * (p[w] + with);
        }
    }
    let mut acc = 0.0;
    for v in &mut p {
        acc += *v;
        *v = acc;
    }
    p
}

/// The Hodges–Lehmann estimate of the shift of `d` and its exact interval, each end at
/// one-sided level `tail`: `(estimate, low, high)`; the ends are infinite when `d` has too
/// few values for the level (`2⁻ⁿ > tail`).
pub fn hodges_lehmann(d: &[f64], tail: f64) -> Option<(f64, f64, f64)> {
    let n = d.len();
    if n == 0 || d.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let estimate = if m % 2 == 1 {
        walsh[m / 2]
    } else {
        (walsh[m / 2 - 1] + walsh[m / 2]) / 2.0
    };
    // k: the most order statistics cut from each end, P(W⁺ ≤ k − 1) ≤ tail.
    let cdf = signed_rank_null(n);
    let k = cdf.iter().take_while(|&&p| p <= tail).count();
    if k == 0 {
        return Some((estimate, f64::NEG_INFINITY, f64::INFINITY));
    }
    Some((estimate, walsh[k - 1], walsh[m - k]))
}

/// The verdict of one look (module doc: the rule).
pub fn decide(low: f64, high: f64, min_effect: f64) -> AbVerdict {
    if low > 0.0 {
        AbVerdict::Regression
    } else if high < 0.0 {
        AbVerdict::Improvement
    } else if high < min_effect {
        AbVerdict::Pass
    } else {
        AbVerdict::Undecided
    }
}

/// The pairs of every job so far, judged: the window and step metrics by the signed-rank
/// test, the counters arm against arm.
pub fn judge(jobs: &[Vec<(InJobUnit, InJobUnit)>], test: &InJobTest) -> Vec<AbMetric> {
    let all: Vec<&(InJobUnit, InJobUnit)> = jobs.iter().flatten().collect();
    let arms = |p: &(InJobUnit, InJobUnit)| -> (InJobUnit, InJobUnit) {
        match p.0.arm {
            'a' => (p.0.clone(), p.1.clone()),
            _ => (p.1.clone(), p.0.clone()),
        }
    };
    let ordered: Vec<(InJobUnit, InJobUnit)> = all.iter().map(|p| arms(p)).collect();
    let timed = |name: &str, f: fn(&InJobUnit) -> Option<f64>| {
        let values: Vec<(f64, f64)> = ordered
            .iter()
            .filter_map(|(a, b)| Some((f(a)?, f(b)?)))
            .filter(|(a, b)| *a > 0.0 && *b > 0.0)
            .collect();
        timed_metric(name, &values, jobs.len(), test)
    };
    let mut out = vec![
        timed(WINDOW_METRIC, |u| Some(u.window)),
        timed(STEP_METRIC, |u| u.steps),
    ];
    let counted = |name: &str, f: fn(&InJobUnit) -> Option<u64>| {
        let a: Vec<f64> = ordered
            .iter()
            .filter_map(|(a, _)| f(a))
            .map(|v| v as f64)
            .collect();
        let b: Vec<f64> = ordered
            .iter()
            .filter_map(|(_, b)| f(b))
            .map(|v| v as f64)
            .collect();
        counter_metric(name, &a, &b)
    };
    out.extend(counted("checkpoint-empty-cache-calls", |u| {
        u.empty_cache_calls
    }));
    out.extend(counted("checkpoint-fsync-calls", |u| u.fsync_calls));
    out
}

fn timed_metric(name: &str, pairs: &[(f64, f64)], jobs: usize, test: &InJobTest) -> AbMetric {
    let mut m = AbMetric {
        pairs: pairs.len(),
        ..AbMetric::open(name, AbTest::SignedRank)
    };
    let d: Vec<f64> = pairs.iter().map(|(a, b)| b.ln() - a.ln()).collect();
    let tail = test.alpha_per_look();
    let Some((est, lo, hi)) = hodges_lehmann(&d, tail) else {
        m.detail = "no save pair with both arms recorded yet".into();
        return m;
    };
    let geo = |f: fn(&(f64, f64)) -> f64| {
        (pairs.iter().map(|p| f(p).ln()).sum::<f64>() / pairs.len() as f64).exp()
    };
    m.a = Some(geo(|p| p.0));
    m.b = Some(geo(|p| p.1));
    m.change = Some(est.exp_m1());
    m.interval = Some((lo.exp_m1(), hi.exp_m1()));
    m.level = Some(test.level());
    m.verdict = decide(lo.exp_m1(), hi.exp_m1(), test.min_effect);
    m.detail = format!(
        "Wilcoxon signed-rank on ln B − ln A of {} save pair(s) in {jobs} job(s), order of each pair by a seeded coin; Hodges–Lehmann estimate; alpha {} each way over {} metric(s) × {} look(s); pass below +{} %",
        pairs.len(),
        test.alpha,
        test.metrics,
        test.max_jobs,
        test.min_effect * 100.0
    );
    m
}

/// A counter per save: B's median against A's, no statistics (a count that moves is the
/// switch taking effect, or its side effect).
fn counter_metric(name: &str, a: &[f64], b: &[f64]) -> Option<AbMetric> {
    let (x, y) = (summary::median(a)?, summary::median(b)?);
    let verdict = match y.partial_cmp(&x) {
        Some(std::cmp::Ordering::Greater) => AbVerdict::Regression,
        Some(std::cmp::Ordering::Less) => AbVerdict::Improvement,
        _ => AbVerdict::Pass,
    };
    Some(AbMetric {
        verdict,
        a: Some(x),
        b: Some(y),
        change: (x != 0.0).then(|| y / x - 1.0),
        pairs: a.len().min(b.len()),
        detail: "per save, B's median against A's: a count must not grow".into(),
        ..AbMetric::open(name, AbTest::Rule)
    })
}

pub mod checks;

#[cfg(test)]
mod tests;
