//! Stage "compare": `goldgate ab`'s statistics — baseline (A) and candidate (B) jobs of one case
//! on one machine, run in ABBA/BAAB blocks, judged pair by pair until the answer is known.
//!
//! **Pairs, so drift cancels.** Each job is reduced to the rule's one value (the median of its
//! saves after the skipped first one, the iteration-time window's median, ...). The `k`-th A
//! job and the `k`-th B job of the order form pair `k`; its difference is `d_k = ln B_k − ln A_k`.
//! A block ABBA holds pairs (A,B) and (B,A): a level that drifts linearly through the block adds
//! `+δ` to one pair and `−δ` to the other, so the mean over a block is free of it, and a level
//! that moves *between* blocks (the H200's 15 % in half an hour) is in both arms of a pair and
//! cancels in every `d_k`. The estimate of the change is `exp(mean d) − 1`.
//!
//! **The interval.** The per-pair spread is estimated from the pairs and never taken below a
//! stated floor: one job's spread `spread` (a coefficient of variation, measured for the platform
//! and set in `goldgate.yaml`'s `ab:` block) gives a pair-difference floor `spread·√2`. The floor
//! counts as `spread_df` degrees of freedom pooled with the pairs' own, so a spread larger than
//! the floor shows as more pairs arrive: `σ² = max(floor², (ν₀ floor² + (n−1) s²)/(ν₀+n−1))`,
//! with Student's t at `ν₀+n−1` degrees of freedom. One pair then has an interval (of the floor),
//! which is what lets a +30..50 % change stop after one or two pairs.
//!
//! **Repeated looks.** The interval is looked at after every pair up to `max_pairs`; each look
//! spends `alpha / max_pairs` (Bonferroni over the looks), so the chance that any look of an
//! unchanged A/A sequence calls a regression stays at most `alpha` whatever the stopping rule.
//!
//! **Decision** (lower is better): `regression` when the whole interval lies above
//! `+min_effect`; `improvement` when it lies below `−min_effect` (as a ratio: `1/(1+m) − 1`);
//! `pass` when it lies below `+min_effect` (no regression that large); otherwise the sequence
//! goes on, and at `max_pairs` the metric is `inconclusive`.
//!
//! **Other metrics** (loss, num-zeros, memory, the probe's counters): a rule that is exact or
//! tight needs no statistics; B's value is judged against A's under the metric's own rule
//! ([`judge_exact`]), and against the goldens by the ordinary comparison.
//!
//! **One arm only.** A metric that only one arm's jobs recorded is `missing-metric`, a
//! regression, unless every job of the other arm says its samplers tried and could not read it
//! (`memory.not_sampled`, a job that ended before its memory was first read): then it is
//! `not-sampled`, judged neither way.

use serde::Serialize;

use super::metric::{AbMetric, AbTest, AbVerdict};
use crate::compare::golden::band::{self, Series};
use crate::compare::stats::summary::{self, Tolerance};
use crate::compare::stats::t_test::t_quantile;
use goldgate_core::config::Sequential;
use goldgate_core::rules::{Direction, Rule, RuleSet};
use goldgate_schema::RunRecord;

/// One A job and one B job: their summaries in the metric's unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Pair {
    /// 1-based block (ABBA or BAAB) the pair ran in.
    pub block: u32,
    pub a: f64,
    pub b: f64,
}

/// The change of B against A after some pairs, with its interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbEstimate {
    pub pairs: usize,
    /// Geometric means of the arms' job summaries.
    pub a: f64,
    pub b: f64,
    /// `B/A − 1` and its interval at `level`.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
    /// The per-job spread the interval used, and the one the pairs showed (two pairs or more).
    pub spread_used: f64,
    pub spread_seen: Option<f64>,
    pub df: u32,
}

/// Why a metric has no estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unusable {
    NoPairs,
    /// A summary is 0, negative or not finite (no ratio exists).
    NotPositive,
}

/// The estimate after `pairs`.
pub fn estimate(pairs: &[Pair], seq: &Sequential) -> Result<AbEstimate, Unusable> {
    if pairs.is_empty() {
        return Err(Unusable::NoPairs);
    }
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if pairs.iter().any(|p| !ok(p.a) || !ok(p.b)) {
        return Err(Unusable::NotPositive);
    }
    let n = pairs.len();
    let d: Vec<f64> = pairs.iter().map(|p| p.b.ln() - p.a.ln()).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let floor = seq.spread * std::f64::consts::SQRT_2;
    let nu0 = f64::from(seq.spread_df);
    let seen = (n >= 2).then(|| {
        let ss: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
        ss / (n - 1) as f64
    });
    let pooled = (nu0 * floor * floor + seen.unwrap_or(0.0) * (n - 1) as f64)
        / (nu0 + (n - 1) as f64).max(1.0);
    let sd = pooled.sqrt().max(floor);
    let df = seq.spread_df + n as u32 - 1;
    let q = if df == 0 {
        f64::INFINITY
    } else {
        t_quantile(1.0 - seq.alpha_per_look(), df as usize)
    };
    let half = q * sd / (n as f64).sqrt();
    let geo = |f: fn(&Pair) -> f64| (pairs.iter().map(|p| f(p).ln()).sum::<f64>() / n as f64).exp();
    Ok(AbEstimate {
        pairs: n,
        a: geo(|p| p.a),
        b: geo(|p| p.b),
        change: mean.exp_m1(),
        low: (mean - half).exp_m1(),
        high: (mean + half).exp_m1(),
        level: seq.level(),
        spread_used: sd / std::f64::consts::SQRT_2,
        spread_seen: seen.map(|v| v.sqrt() / std::f64::consts::SQRT_2),
        df,
    })
}

/// The verdict of one look at an estimate.
pub fn decide(e: &AbEstimate, direction: Direction, min_effect: f64) -> AbVerdict {
    let up = min_effect;
    let down = 1.0 / (1.0 + min_effect) - 1.0;
    let (worse, better, fine) = match direction {
        Direction::LowerIsBetter => (e.low > up, e.high < down, e.high < up),
        Direction::HigherIsBetter => (e.high < down, e.low > up, e.low > down),
        Direction::Both => (
            e.low > up || e.high < down,
            false,
            e.low > down && e.high < up,
        ),
    };
    if worse {
        AbVerdict::Regression
    } else if better {
        AbVerdict::Improvement
    } else if fine {
        AbVerdict::Pass
    } else {
        AbVerdict::Undecided
    }
}

/// One job's one value for `metric` under its rule (`None` when the job lacks it).
pub fn job_summary(rule: &Rule, record: &RunRecord, metric: &str) -> Option<f64> {
    let series: &Series = &record.metrics.get(metric)?.0;
    let last = series.keys().next_back().copied().unwrap_or(0);
    band::reduce(rule, series, last).map(|(v, _)| v)
}

/// The sequential metric `metric` after the pairs so far (`a` and `b` are the arms' jobs in
/// order, pair `k` = the `k`-th of each; `blocks[k]` its block).
pub fn judge_sequential(
    metric: &str,
    rule: &Rule,
    arms: (&[&RunRecord], &[&RunRecord]),
    blocks: &[u32],
    seq: &Sequential,
) -> Option<AbMetric> {
    let (a, b) = arms;
    let sa: Vec<Option<f64>> = a.iter().map(|r| job_summary(rule, r, metric)).collect();
    let sb: Vec<Option<f64>> = b.iter().map(|r| job_summary(rule, r, metric)).collect();
    let has = |v: &[Option<f64>]| v.iter().any(Option::is_some);
    let mut out = AbMetric::open(metric, AbTest::Sequential);
    match (has(&sa), has(&sb)) {
        (false, false) => return None,
        (true, true) => {}
        (in_a, _) => {
            one_arm_only(&mut out, in_a, if in_a { b } else { a });
            return Some(out);
        }
    }
    let pairs: Vec<Pair> = sa
        .iter()
        .zip(&sb)
        .zip(blocks)
        .filter_map(|((x, y), block)| {
            Some(Pair {
                block: *block,
                a: (*x)?,
                b: (*y)?,
            })
        })
        .collect();
    match estimate(&pairs, seq) {
        Ok(e) => {
            out.verdict = if (e.pairs as u32) < seq.min_pairs {
                AbVerdict::Undecided
            } else {
                decide(&e, rule.direction, seq.min_effect)
            };
            out.detail = describe(&e, seq);
            (out.a, out.b, out.change) = (Some(e.a), Some(e.b), Some(e.change));
            (out.interval, out.level, out.pairs) = (Some((e.low, e.high)), Some(e.level), e.pairs);
        }
        Err(Unusable::NoPairs) => out.detail = "no pair with a value in both jobs yet".into(),
        Err(Unusable::NotPositive) => {
            out.verdict = AbVerdict::Inconclusive;
            out.detail = "a job's value is 0 or not finite: no ratio".into();
        }
    }
    Some(out)
}

fn describe(e: &AbEstimate, seq: &Sequential) -> String {
    let seen = e
        .spread_seen
        .map_or("n/a".to_owned(), |s| format!("{:.1} %", s * 100.0));
    format!(
        "per-job spread used {:.1} % (floor {:.1} %, seen {seen}), t df {}, alpha {} over {} looks, min effect {} %",
        e.spread_used * 100.0,
        seq.spread * 100.0,
        e.df,
        seq.alpha,
        seq.max_pairs,
        seq.min_effect * 100.0
    )
}

/// A metric that is not timed: B's median job value against A's under the metric's own rule
/// (exact when the rule is exact and both arms are deterministic, else its tolerance band).
pub fn judge_exact(
    metric: &str,
    rule: &Rule,
    a: &[&RunRecord],
    b: &[&RunRecord],
) -> Option<AbMetric> {
    let values = |jobs: &[&RunRecord]| -> Vec<f64> {
        jobs.iter()
            .filter_map(|r| job_summary(rule, r, metric))
            .collect()
    };
    let (va, vb) = (values(a), values(b));
    let (ma, mb) = (summary::median(&va), summary::median(&vb));
    let deterministic = a.iter().chain(b).all(|r| !r.nondeterministic);
    let exact = rule.exact && deterministic;
    let mut out = AbMetric {
        verdict: AbVerdict::Pass,
        a: ma,
        b: mb,
        pairs: va.len().min(vb.len()),
        ..AbMetric::open(metric, AbTest::Rule)
    };
    let (x, y) = match (ma, mb) {
        (None, None) => return None,
        (Some(x), Some(y)) => (x, y),
        (got_a, _) => {
            let in_a = got_a.is_some();
            one_arm_only(&mut out, in_a, if in_a { b } else { a });
            return Some(out);
        }
    };
    out.change = (x != 0.0).then(|| y / x - 1.0);
    let tolerance = Tolerance {
        rtol: if exact { 0.0 } else { rule.rtol },
        atol: if exact { 0.0 } else { rule.atol },
    };
    out.detail = if exact {
        "exact: B must equal A".to_owned()
    } else {
        format!("B against A: {}", rule.describe(false))
    };
    if !tolerance.within(y, x) {
        let worse = match rule.direction {
            Direction::LowerIsBetter => y > x,
            Direction::HigherIsBetter => y < x,
            Direction::Both => true,
        };
        out.verdict = if worse {
            AbVerdict::Regression
        } else {
            AbVerdict::Improvement
        };
    }
    Some(out)
}

/// A metric that only one arm's jobs recorded (`in_a`: arm A's): `not-sampled` when every job
/// of the other arm (`lacking`) says its samplers tried and could not read it, as a job that
/// ended before its memory was first read does; else `missing-metric`, a regression.
fn one_arm_only(out: &mut AbMetric, in_a: bool, lacking: &[&RunRecord]) {
    let (has, lacks) = if in_a { ("A", "B") } else { ("B", "A") };
    match not_sampled_in(&out.metric, lacking) {
        Some(why) => {
            out.verdict = AbVerdict::NotSampled;
            out.detail = format!("not sampled in arm {lacks}'s jobs, so not judged ({why})");
        }
        None => {
            out.verdict = AbVerdict::MissingMetric;
            out.detail = format!("only arm {has} recorded it");
        }
    }
}

/// Why none of `jobs` recorded `metric`, when each of them says (`memory.not_sampled`): the
/// reasons, each once. `None` when a job recorded the metric or does not say why it lacks it.
fn not_sampled_in(metric: &str, jobs: &[&RunRecord]) -> Option<String> {
    let mut reasons: Vec<&str> = Vec::new();
    for r in jobs {
        if r.metrics.contains_key(metric) {
            return None;
        }
        let reason = r.memory.not_sampled.get(metric)?;
        if !reasons.contains(&reason.as_str()) {
            reasons.push(reason);
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// Every metric of the case judged after the pairs so far: the timing metrics of `seq_metrics`
/// sequentially, the others under their rules.
pub fn judge_all(
    metrics: &[String],
    seq_metrics: &[String],
    rules: &RuleSet,
    arms: (&[&RunRecord], &[&RunRecord]),
    blocks: &[u32],
    seq: &Sequential,
) -> Vec<AbMetric> {
    metrics
        .iter()
        .filter_map(|m| {
            let rule = rules.find(m)?;
            if seq_metrics.iter().any(|s| s == m) {
                judge_sequential(m, rule, arms, blocks, seq)
            } else {
                judge_exact(m, rule, arms.0, arms.1)
            }
        })
        .collect()
}

/// The order of `blocks` blocks of two pairs, each ABBA or BAAB by a seeded coin: `true` = B.
pub fn block_order(blocks: u32, seed: u64) -> Vec<bool> {
    let mut rng = summary::SplitMix64::new(seed);
    let mut order = Vec::new();
    for _ in 0..blocks {
        let b_first = rng.next_u64() & 1 == 1;
        order.extend([b_first, !b_first, !b_first, b_first]);
    }
    order
}

#[cfg(test)]
mod tests;
