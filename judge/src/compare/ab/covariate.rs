//! Stage "compare": job-level `goldgate ab`'s save/iteration covariate (`ab --covariate`).
//!
//! **Why.** On the H200 most of a job's save spread is the job's own level, and that level
//! moves with the job's iteration time (host load, GPU utilisation): over the 38 unchanged and
//! planted jobs of `gpt/h200-ckpt-power` recorded on 2026-12-01, a job's `ln(median save)` and
//! its `ln(iteration time)` around their session's levels correlate at 0.6. Taking
//! `slope × ln(iteration time)` out of each job's save takes that shared part out.
//!
//! **The adjusted pair.** For pair `k`, `d_k = ln B_k − ln A_k` of the save becomes
//! `d_k − slope · (ln Bi_k − ln Ai_k)`, `Bi`/`Ai` the two jobs' iteration times. `slope` is fixed
//! before the run (measured by the study on the platform's records, `goldgate.yaml`'s
//! `ab.platforms.<p>.covariate`), never fitted on the pairs it adjusts, so the test stays the
//! sequential t-test of `compare::ab::across_jobs` on other numbers, with the adjusted save's own spread
//! floor.
//!
//! **When it is used.** Only when B leaves iteration time alone: if B changes iteration time by
//! `δ`, the adjusted save is off by `−slope·δ` (a B that speeds up steps would read as a slower
//! save). So the user asks for it (`--covariate`, for a change that touches the save only), and
//! at every look the adjusted estimate is used only while iteration time's interval at the
//! guard's level ([`GUARD_LEVEL`], 90 %, on the same pairs and floor) still holds 0. The first
//! look whose guard interval excludes 0 switches the covariate off for the rest of the
//! sequence; the save is then judged unadjusted, and the report says at which pair and why.
//! The guard catches a gross change of iteration time; a small one (a few per cent) passes it
//! and biases the save by `slope ×` that change: the study's table of such B arms says how
//! often that ends in a wrong verdict. The resampling study
//! ([`study`], `docs/book/src/results/ab-study-covariate.md`) measures false alarms, detection
//! and what a B that moves iteration time does to it.

use serde::{Deserialize, Serialize};

use super::across_jobs::{self as ab, AbEstimate, Pair};
use super::metric::{AbMetric, AbVerdict};
use goldgate_core::config::{AbSettings, Sequential};
use goldgate_core::rules::{Direction, RuleSet};
use goldgate_schema::RunRecord;

pub mod study;

/// The metric adjusted.
pub const ADJUSTED: &str = "checkpoint-blocking-time";
/// The metric it is adjusted by.
pub const BY: &str = "iteration-time";

/// The covariate's fixed settings on one platform.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Covariate {
    /// `ln(save)` on `ln(iteration time)` between jobs of one session.
    pub slope: f64,
    /// The adjusted save's spread floor (one job's), in place of `Sequential::spread`.
    pub spread: f64,
}

/// How the covariate went in one A/B (`ab.json`'s `covariate`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CovariateUse {
    pub settings: Covariate,
    /// Whether the last look judged the save adjusted.
    pub applied: bool,
    /// Why it was switched off, once it was (it stays off).
    pub off: Option<String>,
}

impl Covariate {
    /// The covariate measured for `platform` in `goldgate.yaml`'s `ab:` block, if any.
    pub fn on(settings: &AbSettings, platform: &str) -> Option<Covariate> {
        settings.covariate_on(platform).map(|c| Covariate {
            slope: c.slope,
            spread: c.spread,
        })
    }
}

impl CovariateUse {
    /// Asked for, not yet looked at.
    pub fn new(settings: Covariate) -> CovariateUse {
        CovariateUse {
            settings,
            applied: false,
            off: None,
        }
    }
}

/// The adjusted save pairs: `b · (Bi/Ai)^(−slope)`, so `ln b − ln a` is the adjusted difference.
/// `None` when the two lists do not pair up or a value has no logarithm.
pub fn adjust(save: &[Pair], iteration: &[Pair], slope: f64) -> Option<Vec<Pair>> {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if save.len() != iteration.len() {
        return None;
    }
    save.iter()
        .zip(iteration)
        .map(|(s, i)| {
            (ok(s.a) && ok(s.b) && ok(i.a) && ok(i.b)).then(|| Pair {
                block: s.block,
                a: s.a,
                b: s.b * (-slope * (i.b.ln() - i.a.ln())).exp(),
            })
        })
        .collect()
}

/// The two-sided level of the guard's iteration-time interval, chosen by the study
/// (`ab-study-covariate.md`). Looser than a look's own (99.7 % on the H200), where a one-pair
/// interval spans ±39 %: a B that slowed every step by 50 % passed that guard and its saves
/// read 32 % faster in half the sequences, and a B 10 % faster per step raised 0.9 % false
/// alarms. At 90 % a real change is seen sooner; an unchanged B loses the covariate in 30 % of
/// the sequences (80 %: 54 %), which costs detection, never a false alarm.
pub const GUARD_LEVEL: f64 = 0.90;

/// The sequential settings whose interval is the guard's (two-sided `level`, same floor).
fn guard(seq: &Sequential, level: f64) -> Sequential {
    Sequential {
        alpha: (1.0 - level) / 2.0 * f64::from(seq.max_pairs.max(1)),
        ..*seq
    }
}

/// The rule: iteration time shows no change at this look (its guard interval holds 0).
pub fn iteration_unchanged(e: &AbEstimate) -> bool {
    e.low <= 0.0 && 0.0 <= e.high
}

/// One look with the covariate: the save's estimate, adjusted while the rule holds (and
/// `state` not yet off), else unadjusted; the second value says which. Updates `state`.
pub fn look(
    save: &[Pair],
    iteration: &[Pair],
    seq: &Sequential,
    state: &mut CovariateUse,
) -> Result<(AbEstimate, bool), ab::Unusable> {
    look_guarded(save, iteration, seq, state, GUARD_LEVEL)
}

/// [`look`] with the guard at `level` (the study compares levels).
pub(crate) fn look_guarded(
    save: &[Pair],
    iteration: &[Pair],
    seq: &Sequential,
    state: &mut CovariateUse,
    level: f64,
) -> Result<(AbEstimate, bool), ab::Unusable> {
    let plain = ab::estimate(save, seq)?;
    if state.off.is_none() {
        match ab::estimate(iteration, &guard(seq, level)) {
            Ok(it) if !iteration_unchanged(&it) => {
                state.off = Some(format!(
                    "off from pair {}: iteration time changed ({:+.1} %, {} % interval {:+.1} to {:+.1} %), which would bias the adjusted save",
                    it.pairs,
                    it.change * 100.0,
                    level * 100.0,
                    it.low * 100.0,
                    it.high * 100.0
                ));
            }
            Ok(_) => {}
            Err(_) => state.off = Some(format!("off: no {BY} in both jobs of every pair")),
        }
    }
    let adjusted = state
        .off
        .is_none()
        .then(|| adjust(save, iteration, state.settings.slope))
        .flatten();
    let Some(pairs) = adjusted else {
        state.applied = false;
        return Ok((plain, false));
    };
    let floor = Sequential {
        spread: state.settings.spread,
        ..*seq
    };
    let mut e = ab::estimate(&pairs, &floor)?;
    // A and B as measured; the change and its interval are the adjusted ones.
    (e.a, e.b) = (plain.a, plain.b);
    state.applied = true;
    Ok((e, true))
}

/// The pairs of `metric` (pair `k` = the `k`-th job of each arm, both with a value).
fn pairs_of(
    metric: &str,
    rules: &RuleSet,
    arms: (&[&RunRecord], &[&RunRecord]),
    blocks: &[u32],
) -> Option<Vec<Pair>> {
    let rule = rules.find(metric)?;
    let value = |r: &RunRecord| ab::job_summary(rule, r, metric);
    arms.0
        .iter()
        .zip(arms.1)
        .zip(blocks)
        .map(|((a, b), block)| {
            Some(Pair {
                block: *block,
                a: value(a)?,
                b: value(b)?,
            })
        })
        .collect()
}

/// Judges [`ADJUSTED`] again with the covariate, in place of its plain verdict in `metrics`
/// (after [`ab::judge_all`]); a pair lacking either metric switches the covariate off.
pub fn apply(
    metrics: &mut [AbMetric],
    rules: &RuleSet,
    arms: (&[&RunRecord], &[&RunRecord]),
    blocks: &[u32],
    seq: &Sequential,
    state: &mut CovariateUse,
) {
    let Some(m) = metrics.iter_mut().find(|m| m.metric == ADJUSTED) else {
        return;
    };
    if matches!(m.verdict, AbVerdict::MissingMetric | AbVerdict::NotSampled) {
        return;
    }
    let (Some(save), Some(iteration)) = (
        pairs_of(ADJUSTED, rules, arms, blocks),
        pairs_of(BY, rules, arms, blocks),
    ) else {
        state.applied = false;
        state
            .off
            .get_or_insert_with(|| format!("off: a job lacks {ADJUSTED} or {BY}"));
        return;
    };
    let Ok((e, adjusted)) = look(&save, &iteration, seq, state) else {
        return;
    };
    if !adjusted {
        return;
    }
    let direction = rules
        .find(ADJUSTED)
        .map_or(Direction::LowerIsBetter, |r| r.direction);
    m.verdict = if (e.pairs as u32) < seq.min_pairs {
        AbVerdict::Undecided
    } else {
        ab::decide(&e, direction, seq.min_effect)
    };
    m.detail = format!(
        "adjusted by {BY} (slope {}, spread floor {:.1} %, seen {}); unadjusted {}",
        state.settings.slope,
        state.settings.spread * 100.0,
        e.spread_seen
            .map_or("n/a".to_owned(), |s| format!("{:.1} %", s * 100.0)),
        m.change
            .zip(m.interval)
            .map_or("n/a".to_owned(), |(c, (lo, hi))| format!(
                "{:+.1} % ({:+.1} to {:+.1} %)",
                c * 100.0,
                lo * 100.0,
                hi * 100.0
            ))
    );
    (m.change, m.interval, m.level) = (Some(e.change), Some((e.low, e.high)), Some(e.level));
}

#[cfg(test)]
mod tests;
