//! Stage "compare": the A/B resampling study (`goldgate ab-study`, docs/book/src/results/ab-study.md) —
//! from real per-save records of unchanged jobs, how often `goldgate ab`'s sequential test
//! raises a false alarm (A/A), how often it catches a planted +5/+10/+20/+30 % per save, how
//! many pairs and GPU-minutes a decision takes, side by side with today's band, the golden
//! two-sample test and Megatron's 5 % rule judged on the same synthetic jobs.
//!
//! **The resampling model.** Each session (jobs of one machine within about ten minutes) is
//! split into a job level and per-save residuals: a job's level is the median of its counted
//! saves, its residuals the saves divided by that level. The between-job spread of the levels is
//! what is left of their observed spread once the spread a median of `n` resampled residuals has
//! by itself is taken out (a variance decomposition; at least 0). A synthetic job of a session
//! draws its level from the session's median times a log-normal of that between-job spread, and
//! `saves` residuals with replacement from the session's pooled residuals; its value is the
//! median of its saves, as the `checkpoint-blocking-time` rule takes it. A planted change adds
//! `size × the session's median save` to every save of a B job (what
//! `GOLDGATE_PLANT_SAVE_DELAY_S` does). Both arms of an A/B sequence come from one session; the
//! golden of the other rules comes from the *other* session (a golden is blessed on another
//! day), which is how the gate is used today. More saves per job (a case designed for A/B) are
//! the same draws with more residuals, costing the measured time per extra save.

use serde::Serialize;

use super::across_jobs::{self, Pair};
use super::metric::AbVerdict;
use crate::compare::stats::summary::{self, SplitMix64};
use crate::compare::stats::t_test;
use goldgate_core::config::Sequential;
use goldgate_core::rules::Direction;

/// One session's unchanged jobs: each job's counted save times (seconds) and wall time.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub name: String,
    pub jobs: Vec<Vec<f64>>,
    pub walls: Vec<f64>,
}

/// The session as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionModel {
    pub name: String,
    pub jobs: usize,
    /// Median of the job levels (seconds).
    pub median_save: f64,
    /// Observed spread of the job levels (log scale ≈ coefficient of variation).
    pub job_spread: f64,
    /// Spread of one save around its job's level.
    pub save_spread: f64,
    /// What is left for the between-job component.
    pub between: f64,
    pub mean_wall: f64,
    #[serde(skip)]
    residuals: Vec<f64>,
}

fn sd(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let m = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Normal draws (Box–Muller) from the crate's seeded generator.
pub struct Normal(pub SplitMix64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub(crate) fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

impl SessionModel {
    /// The model of `s`; `None` without two jobs with a save each.
    pub fn fit(s: &Session, rng: &mut Normal) -> Option<SessionModel> {
        let levels: Vec<f64> = s.jobs.iter().filter_map(|j| summary::median(j)).collect();
        if levels.len() < 2 {
            return None;
        }
        let residuals: Vec<f64> = s
            .jobs
            .iter()
            .zip(&levels)
            .flat_map(|(j, l)| j.iter().map(move |v| v / l))
            .collect();
        let logs: Vec<f64> = levels.iter().map(|l| l.ln()).collect();
        let job_spread = sd(&logs);
        let n = s.jobs.iter().map(Vec::len).min().unwrap_or(1);
        let mut model = SessionModel {
            name: s.name.clone(),
            jobs: levels.len(),
            median_save: summary::median(&levels)?,
            job_spread,
            save_spread: sd(&residuals.iter().map(|r| r.ln()).collect::<Vec<_>>()),
            between: 0.0,
            mean_wall: s.walls.iter().sum::<f64>() / s.walls.len().max(1) as f64,
            residuals,
        };
        let of_median: Vec<f64> = (0..2000)
            .map(|_| model.median_of(1.0, n, 0.0, rng).ln())
            .collect();
        let within = sd(&of_median);
        model.between = (job_spread.powi(2) - within.powi(2)).max(0.0).sqrt();
        Some(model)
    }

    /// The median of `saves` resampled saves at `level`, each plus `delay` seconds.
    fn median_of(&self, level: f64, saves: usize, delay: f64, rng: &mut Normal) -> f64 {
        let mut v: Vec<f64> = (0..saves)
            .map(|_| {
                level * self.residuals[rng.0.below(self.residuals.len())] * self.median_save + delay
            })
            .collect();
        v.sort_by(f64::total_cmp);
        summary::median_sorted(&v).unwrap_or(f64::NAN)
    }

    /// One synthetic job's value.
    pub(crate) fn job(&self, saves: usize, delay: f64, rng: &mut Normal) -> f64 {
        let level = (self.between * rng.next()).exp();
        self.median_of(level, saves, delay, rng)
    }
}

/// What one design (saves per job, sequential settings) costs and sees.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesignRow {
    pub saves: usize,
    pub seq: Sequential,
    /// Planted size (0 = A/A) → share regression, share pass/improvement, mean pairs, mean
    /// GPU-minutes, 95th percentile of pairs.
    pub sizes: Vec<SizeRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeRow {
    pub size: f64,
    pub regression: f64,
    pub pass: f64,
    pub inconclusive: f64,
    pub mean_pairs: f64,
    pub p95_pairs: usize,
    pub gpu_minutes: f64,
}

/// What to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyOptions {
    pub draws: usize,
    pub sizes: Vec<f64>,
    pub seed: u64,
    /// Seconds one more save costs a job (the save and the iterations between saves).
    pub per_save_seconds: f64,
    pub warmup_jobs: u32,
}

/// One A/B sequence on synthetic jobs of `m`; returns the verdict and the pairs it took.
fn sequence(
    m: &SessionModel,
    saves: usize,
    delay: f64,
    seq: &Sequential,
    rng: &mut Normal,
) -> (AbVerdict, usize) {
    let order = across_jobs::block_order(seq.max_pairs.div_ceil(2), rng.0.next_u64());
    let (mut a, mut b, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
    for (i, is_b) in order.iter().enumerate() {
        match is_b {
            true => b.push(m.job(saves, delay, rng)),
            false => a.push(m.job(saves, 0.0, rng)),
        }
        if a.len() != b.len() {
            continue;
        }
        let k = a.len() - 1;
        pairs.push(Pair {
            block: (i / 4 + 1) as u32,
            a: a[k],
            b: b[k],
        });
        let Ok(e) = across_jobs::estimate(&pairs, seq) else {
            return (AbVerdict::Inconclusive, pairs.len());
        };
        let v = if (pairs.len() as u32) < seq.min_pairs {
            AbVerdict::Undecided
        } else {
            across_jobs::decide(&e, Direction::LowerIsBetter, seq.min_effect)
        };
        if !v.is_open() {
            return (v, pairs.len());
        }
        if pairs.len() as u32 >= seq.max_pairs {
            break;
        }
    }
    (AbVerdict::Inconclusive, pairs.len())
}

/// The sequential test of one design over every session (draws split evenly).
pub fn design(
    models: &[SessionModel],
    saves: usize,
    seq: &Sequential,
    opts: &StudyOptions,
) -> DesignRow {
    let mut rng = Normal(SplitMix64::new(opts.seed));
    let mut sizes = Vec::new();
    for size in std::iter::once(0.0).chain(opts.sizes.iter().copied()) {
        let (mut reg, mut pass, mut inc, mut minutes) = (0, 0, 0, 0.0);
        let mut pairs = Vec::new();
        for d in 0..opts.draws {
            let m = &models[d % models.len()];
            let (v, k) = sequence(m, saves, size * m.median_save, seq, &mut rng);
            reg += usize::from(v == AbVerdict::Regression);
            pass += usize::from(matches!(v, AbVerdict::Pass | AbVerdict::Improvement));
            inc += usize::from(v == AbVerdict::Inconclusive);
            let wall = m.mean_wall + (saves as f64 - 10.0).max(0.0) * opts.per_save_seconds;
            minutes += (2 * k + opts.warmup_jobs as usize) as f64 * wall / 60.0;
            pairs.push(k);
        }
        pairs.sort_unstable();
        let n = opts.draws as f64;
        sizes.push(SizeRow {
            size,
            regression: reg as f64 / n,
            pass: pass as f64 / n,
            inconclusive: inc as f64 / n,
            mean_pairs: pairs.iter().sum::<usize>() as f64 / n,
            p95_pairs: pairs[((pairs.len() as f64 * 0.95) as usize).min(pairs.len() - 1)],
            gpu_minutes: minutes / n,
        });
    }
    DesignRow {
        saves,
        seq: *seq,
        sizes,
    }
}

/// Today's rules on the same kind of synthetic jobs, golden from the other session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleRow {
    pub rule: String,
    /// Jobs of the candidate per decision.
    pub jobs: usize,
    /// Planted size → share flagged as a regression.
    pub flagged: Vec<(f64, f64)>,
    pub gpu_minutes: f64,
}

/// The golden of a rule in [`todays_rules`]: the next session's jobs, or for
/// [`POOLED_TWO_SAMPLE`] [`POOLED_GOLDEN_JOBS`] jobs taken in turn from every session but the
/// candidate's (`now`), as a golden blessed from jobs of several days would be.
fn golden_jobs(rule: &str, models: &[SessionModel], now: usize, rng: &mut Normal) -> Vec<f64> {
    let n = models.len();
    if rule == POOLED_TWO_SAMPLE {
        let others = (n - 1).max(1);
        return (0..POOLED_GOLDEN_JOBS)
            .map(|k| models[(now + 1 + k % others) % n].job(10, 0.0, rng))
            .collect();
    }
    let gold = &models[(now + 1) % n];
    (0..gold.jobs.max(2))
        .map(|_| gold.job(10, 0.0, rng))
        .collect()
}

/// The two-sample test against a golden of [`POOLED_GOLDEN_JOBS`] jobs from the other sessions.
pub const POOLED_TWO_SAMPLE: &str = "two-sample, 10 golden jobs of the other sessions";

/// Golden jobs of [`POOLED_TWO_SAMPLE`]: what `bless` is advised to keep (gating.md).
const POOLED_GOLDEN_JOBS: usize = 10;

/// The band (`rtol`), Megatron's 5 % and the two-sample test (3 jobs against the other session's
/// golden jobs, and against [`POOLED_GOLDEN_JOBS`] of all other sessions; `alpha` 1 %,
/// `min_effect` 2 %, the rule's defaults).
pub fn todays_rules(models: &[SessionModel], band_rtol: f64, opts: &StudyOptions) -> Vec<RuleRow> {
    let mut rng = Normal(SplitMix64::new(opts.seed ^ 0x5eed));
    let rules: [(&str, usize); 4] = [
        ("band", 1),
        ("megatron-5%", 1),
        ("two-sample", 3),
        (POOLED_TWO_SAMPLE, 3),
    ];
    let mut out = Vec::new();
    for (rule, jobs) in rules {
        let mut flagged = Vec::new();
        for size in std::iter::once(0.0).chain(opts.sizes.iter().copied()) {
            let mut hits = 0;
            for d in 0..opts.draws {
                let now = &models[d % models.len()];
                let delay = size * now.median_save;
                let golden = golden_jobs(rule, models, d % models.len(), &mut rng);
                let cand: Vec<f64> = (0..jobs).map(|_| now.job(10, delay, &mut rng)).collect();
                let g = summary::median(&golden).unwrap_or(f64::NAN);
                let hit = match rule {
                    "band" => cand[0] > g * (1.0 + band_rtol),
                    "megatron-5%" => cand[0] > golden[0] * 1.05,
                    _ => t_test::estimate(&golden, &cand, 0.01).is_ok_and(|e| e.low > 0.02),
                };
                hits += usize::from(hit);
            }
            flagged.push((size, hits as f64 / opts.draws as f64));
        }
        let wall = models.iter().map(|m| m.mean_wall).sum::<f64>() / models.len() as f64;
        out.push(RuleRow {
            rule: rule.to_owned(),
            jobs,
            flagged,
            gpu_minutes: jobs as f64 * wall / 60.0,
        });
    }
    out
}

/// The sequential test on real jobs of one interleaved session: pairs in the order they ran,
/// the estimate after each.
pub fn real_pairs(
    a: &[f64],
    b: &[f64],
    seq: &Sequential,
) -> Vec<(usize, f64, f64, f64, AbVerdict)> {
    let mut pairs = Vec::new();
    let mut out = Vec::new();
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        pairs.push(Pair {
            block: (k / 2 + 1) as u32,
            a: *x,
            b: *y,
        });
        if let Ok(e) = across_jobs::estimate(&pairs, seq) {
            out.push((
                k + 1,
                e.change,
                e.low,
                e.high,
                across_jobs::decide(&e, Direction::LowerIsBetter, seq.min_effect),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(level: f64, n: usize, rng: &mut Normal) -> Session {
        let jobs = (0..n)
            .map(|_| {
                let l = level * (0.03 * rng.next()).exp();
                (0..10).map(|_| l * (0.08 * rng.next()).exp()).collect()
            })
            .collect();
        Session {
            name: "s".into(),
            jobs,
            walls: vec![60.0; n],
        }
    }

    #[test]
    fn the_model_recovers_the_spreads_it_was_made_of() {
        let mut rng = Normal(SplitMix64::new(1));
        let s = session(0.4, 60, &mut rng);
        let m = SessionModel::fit(&s, &mut rng).unwrap();
        assert!((m.save_spread - 0.08).abs() < 0.01, "{m:?}");
        assert!((m.between - 0.03).abs() < 0.012, "{m:?}");
        assert!((m.median_save - 0.4).abs() < 0.02);
    }

    #[test]
    fn the_design_sees_large_changes_and_keeps_aa_quiet() {
        let mut rng = Normal(SplitMix64::new(2));
        let models = vec![SessionModel::fit(&session(0.4, 8, &mut rng), &mut rng).unwrap()];
        let seq = Sequential {
            alpha: 0.01,
            min_effect: 0.05,
            max_pairs: 8,
            min_pairs: 1,
            spread: 0.04,
            spread_df: 8,
        };
        let opts = StudyOptions {
            draws: 1000,
            sizes: vec![0.3],
            seed: 3,
            per_save_seconds: 1.0,
            warmup_jobs: 1,
        };
        let row = design(&models, 10, &seq, &opts);
        assert!(row.sizes[0].regression <= 0.01, "{row:?}");
        assert!(row.sizes[1].regression > 0.99, "{row:?}");
        assert!(row.sizes[1].mean_pairs <= 2.0, "{row:?}");
        let rules = todays_rules(&models, 0.55, &opts);
        assert_eq!(rules.len(), 4);
        assert!(
            rules[0].flagged[1].1 < 0.05,
            "the 55 % band misses +30 %: {rules:?}"
        );
    }
}
