//! Stage "compare": the covariate's resampling study (`goldgate ab-study --covariate`,
//! `docs/book/src/results/ab-study-covariate.md`) — on real H200 jobs, how often job-level `ab`
//! raises a false alarm, how often it catches a planted save change, and what a B that moves
//! iteration time does, with the save judged plain and with the covariate on the same draws.
//!
//! **The model.** Each recorded job is reduced as `ab` reduces it (the rules' summary of its
//! saves and of its iteration time). Jobs are grouped by session and arm (one `goldgate ab`'s
//! unchanged jobs, its planted jobs, ...); a job's offsets are its `ln` summaries less its
//! group's means, scaled by `√(n/(n−1))` (a group's mean takes part of each offset with it).
//! The pooled offsets keep what the records show — the correlation of a job's save with its
//! iteration time, and the heavy tail (one job in ten 20–27 % off) — with no distribution
//! assumed. A synthetic job draws one real job's pair of offsets (with replacement); A and B of
//! a pair draw independently. A planted save change adds `size ×` the level to B's save (what
//! `GOLDGATE_PLANT_SAVE_DELAY_S` does); a planted iteration change multiplies B's iteration time.
//! The slope is fitted on the same offsets (pooled least squares); the leave-one-group-out
//! slopes show how far that moves.

use serde::Serialize;

use super::{Covariate, CovariateUse, GUARD_LEVEL, look, look_guarded};
use crate::compare::ab::across_jobs::{self as ab, Pair};
use crate::compare::ab::metric::AbVerdict;
use crate::compare::stats::summary::SplitMix64;
use goldgate_core::config::Sequential;
use goldgate_core::rules::Direction;

/// One recorded job: its group (session and arm) and `ab`'s summaries.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyJob {
    pub group: String,
    pub save: f64,
    pub iteration: f64,
    pub wall: f64,
}

/// The pooled offsets and what they show.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    pub jobs: usize,
    pub groups: usize,
    /// Offsets `(ln save, ln iteration)` of every job of a group of two or more.
    #[serde(skip)]
    pub offsets: Vec<(f64, f64)>,
    pub save_sd: f64,
    pub iteration_sd: f64,
    pub correlation: f64,
    pub slope: f64,
    /// SD of `ln save − slope · ln iteration` offsets.
    pub adjusted_sd: f64,
    /// The slope fitted with each group left out: smallest and largest.
    pub slope_range: (f64, f64),
    pub mean_wall: f64,
}

fn offsets(jobs: &[StudyJob]) -> (Vec<(f64, f64)>, usize) {
    let mut groups: Vec<&str> = jobs.iter().map(|j| j.group.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut out = Vec::new();
    let mut used = 0;
    for g in groups {
        let of: Vec<(f64, f64)> = (jobs.iter())
            .filter(|j| j.group == g && j.save > 0.0 && j.iteration > 0.0)
            .map(|j| (j.save.ln(), j.iteration.ln()))
            .collect();
        if of.len() < 2 {
            continue;
        }
        used += 1;
        let n = of.len() as f64;
        let (ms, mi) = (
            of.iter().map(|p| p.0).sum::<f64>() / n,
            of.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let scale = (n / (n - 1.0)).sqrt();
        out.extend(of.iter().map(|(s, i)| ((s - ms) * scale, (i - mi) * scale)));
    }
    (out, used)
}

/// Least-squares slope of save offsets on iteration offsets (both centred): `Σsi / Σi²`.
fn slope_of(offsets: &[(f64, f64)]) -> f64 {
    let (si, ii) = offsets
        .iter()
        .fold((0.0, 0.0), |(si, ii), (s, i)| (si + s * i, ii + i * i));
    if ii > 0.0 { si / ii } else { 0.0 }
}

fn rms(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v * v, n + 1));
    (sum / n.max(1) as f64).sqrt()
}

/// The fit of `jobs`; `None` without two groups of two jobs.
pub fn fit(jobs: &[StudyJob]) -> Option<Fit> {
    let (offsets, groups) = offsets(jobs);
    if groups < 2 {
        return None;
    }
    let slope = slope_of(&offsets);
    let save_sd = rms(offsets.iter().map(|p| p.0));
    let iteration_sd = rms(offsets.iter().map(|p| p.1));
    let cov = offsets.iter().map(|(s, i)| s * i).sum::<f64>() / offsets.len() as f64;
    let mut names: Vec<&str> = jobs.iter().map(|j| j.group.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let loo: Vec<f64> = names
        .iter()
        .filter_map(|g| {
            let rest: Vec<StudyJob> = jobs.iter().filter(|j| j.group != *g).cloned().collect();
            let (o, n) = self::offsets(&rest);
            (n >= 1 && n < groups).then(|| slope_of(&o))
        })
        .collect();
    let range = loo
        .iter()
        .fold((slope, slope), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
    Some(Fit {
        jobs: offsets.len(),
        groups,
        save_sd,
        iteration_sd,
        correlation: if save_sd > 0.0 && iteration_sd > 0.0 {
            cov / (save_sd * iteration_sd)
        } else {
            0.0
        },
        slope,
        adjusted_sd: rms(offsets.iter().map(|(s, i)| s - slope * i)),
        slope_range: range,
        mean_wall: jobs.iter().map(|j| j.wall).sum::<f64>() / jobs.len().max(1) as f64,
        offsets,
    })
}

/// A planted change: B's save `+save × level`, B's iteration time `× (1 + iteration)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Plant {
    pub save: f64,
    pub iteration: f64,
}

/// How one design did under one plant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub plant: Plant,
    pub regression: f64,
    pub improvement: f64,
    pub pass: f64,
    pub mean_pairs: f64,
    pub gpu_minutes: f64,
    /// Share of sequences that ended with the covariate switched off (covariate designs).
    pub off: f64,
}

/// One design: the save judged plain, or with the covariate at its floor and guard level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Design {
    pub covariate: Option<Covariate>,
    pub guard: f64,
    pub cells: Vec<Cell>,
}

/// One sequence on synthetic pairs: the verdict, the pairs it took, whether the covariate
/// ended off.
fn sequence(
    fit: &Fit,
    plant: Plant,
    seq: &Sequential,
    covariate: Option<(Covariate, f64)>,
    rng: &mut SplitMix64,
) -> (AbVerdict, usize, bool) {
    let guard = covariate.map_or(GUARD_LEVEL, |c| c.1);
    let covariate = covariate.map(|c| c.0);
    let mut state = covariate.map(CovariateUse::new);
    let (mut save, mut iteration) = (Vec::new(), Vec::new());
    let n = fit.offsets.len();
    for k in 0..seq.max_pairs as usize {
        let (sa, ia) = fit.offsets[rng.below(n)];
        let (sb, ib) = fit.offsets[rng.below(n)];
        let block = (k / 2 + 1) as u32;
        save.push(Pair {
            block,
            a: sa.exp(),
            b: sb.exp() + plant.save,
        });
        iteration.push(Pair {
            block,
            a: ia.exp(),
            b: ib.exp() * (1.0 + plant.iteration),
        });
        let e = match &mut state {
            Some(state) => look_guarded(&save, &iteration, seq, state, guard).map(|(e, _)| e),
            None => ab::estimate(&save, seq),
        };
        let Ok(e) = e else {
            return (AbVerdict::Inconclusive, k + 1, false);
        };
        let v = if ((k + 1) as u32) < seq.min_pairs {
            AbVerdict::Undecided
        } else {
            ab::decide(&e, Direction::LowerIsBetter, seq.min_effect)
        };
        if !v.is_open() {
            return (v, k + 1, state.is_some_and(|s| s.off.is_some()));
        }
    }
    let off = state.is_some_and(|s| s.off.is_some());
    (AbVerdict::Inconclusive, seq.max_pairs as usize, off)
}

/// `design` over every plant: `draws` sequences each, seeded; the covariate's guard at
/// `guard` (two-sided level of the iteration-time interval).
pub fn design(
    fit: &Fit,
    plants: &[Plant],
    seq: &Sequential,
    covariate: Option<(Covariate, f64)>,
    draws: usize,
    seed: u64,
) -> Design {
    let mut rng = SplitMix64::new(seed);
    let cells = plants
        .iter()
        .map(|plant| {
            let (mut reg, mut imp, mut pass, mut pairs, mut off) = (0, 0, 0, 0, 0);
            for _ in 0..draws {
                let (v, k, o) = sequence(fit, *plant, seq, covariate, &mut rng);
                reg += usize::from(v == AbVerdict::Regression);
                imp += usize::from(v == AbVerdict::Improvement);
                pass += usize::from(v == AbVerdict::Pass);
                pairs += k;
                off += usize::from(o);
            }
            let n = draws.max(1) as f64;
            let mean_pairs = pairs as f64 / n;
            Cell {
                plant: *plant,
                regression: reg as f64 / n,
                improvement: imp as f64 / n,
                pass: pass as f64 / n,
                mean_pairs,
                // One warm-up job and two jobs a pair.
                gpu_minutes: (2.0 * mean_pairs + 1.0) * fit.mean_wall / 60.0,
                off: off as f64 / n,
            }
        })
        .collect();
    Design {
        covariate: covariate.map(|c| c.0),
        guard: covariate.map_or(GUARD_LEVEL, |c| c.1),
        cells,
    }
}

/// A real interleaved session judged pair by pair, plain and with the covariate: per pair, the
/// plain change and interval, the covariate's, and whether it applied.
pub fn real_pairs(
    save: &[Pair],
    iteration: &[Pair],
    seq: &Sequential,
    covariate: Covariate,
) -> Vec<RealLook> {
    let mut state = CovariateUse::new(covariate);
    (1..=save.len().min(iteration.len()))
        .filter_map(|k| {
            let plain = ab::estimate(&save[..k], seq).ok()?;
            let (e, applied) = look(&save[..k], &iteration[..k], seq, &mut state).ok()?;
            Some(RealLook {
                pairs: k,
                plain: (plain.change, plain.low, plain.high),
                adjusted: (e.change, e.low, e.high),
                applied,
                verdict: ab::decide(&e, Direction::LowerIsBetter, seq.min_effect),
            })
        })
        .collect()
}

/// One look at a real session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RealLook {
    pub pairs: usize,
    pub plain: (f64, f64, f64),
    pub adjusted: (f64, f64, f64),
    pub applied: bool,
    pub verdict: AbVerdict,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::study::Normal;

    /// Jobs whose save offset is `0.8 ×` their iteration offset plus independent noise.
    fn jobs(groups: usize, per: usize, rng: &mut Normal) -> Vec<StudyJob> {
        let mut out = Vec::new();
        for g in 0..groups {
            for _ in 0..per {
                let i = 0.06 * rng.next();
                out.push(StudyJob {
                    group: format!("g{g}"),
                    save: 0.4 * (0.8 * i + 0.03 * rng.next()).exp(),
                    iteration: 0.25 * i.exp(),
                    wall: 60.0,
                });
            }
        }
        out
    }

    fn seq() -> Sequential {
        Sequential {
            alpha: 0.01,
            min_effect: 0.03,
            max_pairs: 6,
            min_pairs: 1,
            spread: 0.07,
            spread_df: 8,
        }
    }

    #[test]
    fn the_fit_recovers_the_slope_and_the_spread_it_takes_out() {
        let mut rng = Normal(SplitMix64::new(4));
        let f = fit(&jobs(8, 10, &mut rng)).unwrap();
        assert!((f.slope - 0.8).abs() < 0.1, "{f:?}");
        assert!(f.adjusted_sd < 0.7 * f.save_sd, "{f:?}");
        assert!(f.slope_range.0 <= f.slope && f.slope <= f.slope_range.1);
    }

    #[test]
    fn on_correlated_jobs_the_covariate_catches_more_and_keeps_aa_quiet() {
        let mut rng = Normal(SplitMix64::new(5));
        let f = fit(&jobs(8, 10, &mut rng)).unwrap();
        let plants = [
            Plant {
                save: 0.0,
                iteration: 0.0,
            },
            Plant {
                save: 0.15,
                iteration: 0.0,
            },
        ];
        let cov = Covariate {
            slope: f.slope,
            spread: 0.04,
        };
        let plain = design(&f, &plants, &seq(), None, 1000, 6);
        let with = design(&f, &plants, &seq(), Some((cov, GUARD_LEVEL)), 1000, 6);
        assert!(with.cells[0].regression <= 0.02, "{with:?}");
        assert!(
            with.cells[1].regression > plain.cells[1].regression + 0.1,
            "plain {plain:?} with {with:?}"
        );
    }

    #[test]
    fn a_b_that_slows_iterations_switches_the_covariate_off() {
        let mut rng = Normal(SplitMix64::new(7));
        let f = fit(&jobs(8, 10, &mut rng)).unwrap();
        let plants = [Plant {
            save: 0.0,
            iteration: 0.5,
        }];
        let cov = Covariate {
            slope: f.slope,
            spread: 0.04,
        };
        let with = design(&f, &plants, &seq(), Some((cov, GUARD_LEVEL)), 500, 8);
        assert!(with.cells[0].off > 0.95, "{with:?}");
        assert!(with.cells[0].improvement < 0.02, "{with:?}");
    }
}
