//! Stage "compare": the design checks of a within-job A/B (`goldgate ab --within-job`) — does
//! one arm's state leak into the next unit, does a unit's place in its pair or in the job
//! matter — computed on the save windows (`checkpoint-window-time`) of every job so far and
//! shown with the verdicts (`ab.json`'s `checks`, the terminal and markdown reports).
//!
//! Each check is a difference of means of `ln window` with its Welch interval at
//! [`CHECK_LEVEL`]; it **fails** when that interval excludes 0, and a failed check is a warning
//! of the report, never an exit code (the test's own error rate does not depend on them):
//!
//! * **carry-over into A** (and **into B**): units of the arm that follow the other arm,
//!   against units of the same arm that follow the arm itself. Only the first unit of each
//!   pair is used: its predecessor (the previous pair's second unit) is of either arm by the
//!   previous pair's coin, and its place in the pair is the same on both sides, so the
//!   difference is the leak and nothing else. Each job's median of the arm is taken out first
//!   (a job's own level is not a leak). A leak biases the estimate: B's state slows (or speeds)
//!   the A unit after it.
//! * **order**: the second save of a pair against the first, the arms' difference taken out
//!   (the mean over `ab` pairs and over `ba` pairs, averaged). A fixed order (AB in every pair)
//!   would read it as the change; the seeded coin makes it a random sign, at a bias of at most
//!   `order × (ab − ba) / pairs` on the estimate ([`InJobChecks::order_bias`]).
//! * **end of job**: the last [`TAIL_PAIRS`] pairs of each job against the job's other pairs,
//!   each unit's arm-and-job median taken out — the end-of-job profile a fixed ABBA order was
//!   biased by. With the coin both arms share the tail (`tail_a` / `tail_b` units).
//!
//! The level is per check, not split: four checks of an unchanged job warn about 4 % of the
//! time by chance (a warning to read, not a verdict).

use serde::{Deserialize, Serialize};

use super::InJobUnit;
use crate::compare::stats::summary as stats;
use crate::compare::stats::t_test::t_quantile;

/// Two-sided level of each check's interval.
pub const CHECK_LEVEL: f64 = 0.99;
/// Pairs at the end of each job that the end-of-job check sets against the rest.
pub const TAIL_PAIRS: usize = 2;

/// One check: a change as a share (`exp(d) − 1` of a difference `d` of mean logs), its
/// interval, the units (or pairs) on each side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignCheck {
    /// `carry-over into A`, `carry-over into B`, `order`, `end of job`.
    pub check: String,
    /// What is set against what, in words.
    pub compares: String,
    pub change: f64,
    pub interval: (f64, f64),
    /// Units (pairs for `order`) on the first and the second side.
    pub n: (usize, usize),
    pub passed: bool,
}

/// The design checks of a within-job run (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InJobChecks {
    /// The metric they are computed on.
    pub metric: String,
    pub level: f64,
    /// Pairs that ran A first (`ab`) and B first (`ba`).
    pub ab_pairs: usize,
    pub ba_pairs: usize,
    /// A's and B's units among the last [`TAIL_PAIRS`] pairs of every job.
    pub tail_a: usize,
    pub tail_b: usize,
    /// The checks that had enough units (two on each side at least).
    pub checks: Vec<DesignCheck>,
}

impl InJobChecks {
    /// The most the order effect can shift the estimate through the coin's imbalance:
    /// `order × (ab − ba) / pairs` (as a share; `None` without an order check).
    pub fn order_bias(&self) -> Option<f64> {
        let order = self.checks.iter().find(|c| c.check == "order")?;
        let n = (self.ab_pairs + self.ba_pairs) as f64;
        let imbalance = (self.ab_pairs as f64 - self.ba_pairs as f64) / n;
        Some(((1.0 + order.change).ln() * imbalance).exp_m1())
    }

    /// One warning per failed check, in words a user acts on.
    pub fn warnings(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| {
                let what = format!(
                    "{}: {} {:+.1} % ({} % CI {:+.1} to {:+.1} %, {} against {})",
                    c.check,
                    c.compares,
                    c.change * 100.0,
                    trim(self.level * 100.0),
                    c.interval.0 * 100.0,
                    c.interval.1 * 100.0,
                    c.n.0,
                    c.n.1
                );
                let why = match c.check.as_str() {
                    "order" => format!(
                        "a fixed order would read this as the change; the seeded coin ({} ab, {} ba pairs) keeps it out of the test, at a bias of {:+.2} % on the estimate",
                        self.ab_pairs,
                        self.ba_pairs,
                        self.order_bias().unwrap_or(0.0) * 100.0
                    ),
                    "end of job" => format!(
                        "the job's last saves run apart from the rest; the coin shares them between the arms ({} A, {} B units), so they do not bias the test",
                        self.tail_a, self.tail_b
                    ),
                    _ => "one arm's state leaks into the next unit, which biases the within-job estimate: compare such a change with job-level `goldgate ab`".to_owned(),
                };
                format!("check failed: {what}; {why}")
            })
            .collect()
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The checks over the pairs of every job so far (`(first, second)` of each pair in save order,
/// as `job_pairs` gives them); `None` before any pair.
pub fn checks(jobs: &[Vec<(InJobUnit, InJobUnit)>]) -> Option<InJobChecks> {
    if jobs.iter().all(Vec::is_empty) {
        return None;
    }
    let mut units = Gathered::default();
    for pairs in jobs {
        units.add_job(pairs);
    }
    Some(units.judge())
}

/// A unit's ln window time; `None` for a unit without a window.
fn ln(u: &InJobUnit) -> Option<f64> {
    (u.window > 0.0).then(|| u.window.ln())
}

/// What the checks compare, gathered job by job (ln window times, each against its job's arm
/// median).
#[derive(Default)]
struct Gathered {
    /// Carry-over: first units of pairs 2.. of each job, `[arm][predecessor is the other arm]`.
    carry: [[Vec<f64>; 2]; 2],
    /// Order: ln second − ln first, per pair, `[ab, ba]`.
    order: [Vec<f64>; 2],
    /// End of job: residuals of the last pairs' units, and of the others.
    tail: Vec<f64>,
    rest: Vec<f64>,
    ab_pairs: usize,
    ba_pairs: usize,
    tail_a: usize,
    tail_b: usize,
}

impl Gathered {
    fn add_job(&mut self, pairs: &[(InJobUnit, InJobUnit)]) {
        let median = |arm: char| {
            let v: Vec<f64> = pairs
                .iter()
                .flat_map(|(x, y)| [x, y])
                .filter(|u| u.arm == arm)
                .filter_map(ln)
                .collect();
            stats::median(&v)
        };
        let (Some(ma), Some(mb)) = (median('a'), median('b')) else {
            return;
        };
        let level = |u: &InJobUnit| if u.arm == 'a' { ma } else { mb };
        let tail_from = pairs.len().saturating_sub(TAIL_PAIRS);
        for (k, (first, second)) in pairs.iter().enumerate() {
            let (Some(l1), Some(l2)) = (ln(first), ln(second)) else {
                continue;
            };
            let first_is_b = usize::from(first.arm == 'b');
            self.order[first_is_b].push(l2 - l1);
            if first.arm == 'a' {
                self.ab_pairs += 1;
            } else {
                self.ba_pairs += 1;
            }
            if k > 0 {
                let previous = &pairs[k - 1].1;
                self.carry[first_is_b][usize::from(previous.arm != first.arm)]
                    .push(l1 - level(first));
            }
            for u in [first, second] {
                self.add_residual(u, ln(u).unwrap_or_default() - level(u), k >= tail_from);
            }
        }
    }

    fn add_residual(&mut self, u: &InJobUnit, residual: f64, in_tail: bool) {
        if !in_tail {
            self.rest.push(residual);
            return;
        }
        self.tail.push(residual);
        if u.arm == 'a' {
            self.tail_a += 1;
        } else {
            self.tail_b += 1;
        }
    }

    fn judge(self) -> InJobChecks {
        let mut checks = Vec::new();
        for (arm, name) in [(0, "A"), (1, "B")] {
            let [same, other] = &self.carry[arm];
            checks.extend(check(
                &format!("carry-over into {name}"),
                &format!("{name} units after the other arm against {name} units after {name}"),
                &[(1.0, other), (-1.0, same)],
            ));
        }
        let [ab, ba] = &self.order;
        checks.extend(check(
            "order",
            "the second save of a pair against the first",
            &[(0.5, ab), (0.5, ba)],
        ));
        checks.extend(check(
            "end of job",
            &format!("the last {TAIL_PAIRS} pairs of each job against its other pairs"),
            &[(1.0, &self.tail), (-1.0, &self.rest)],
        ));
        InJobChecks {
            metric: super::WINDOW_METRIC.to_owned(),
            level: CHECK_LEVEL,
            ab_pairs: self.ab_pairs,
            ba_pairs: self.ba_pairs,
            tail_a: self.tail_a,
            tail_b: self.tail_b,
            checks,
        }
    }
}

/// The check `Σ c·mean(group)` with its Welch interval (Satterthwaite's degrees of freedom);
/// `None` when a group has fewer than two values.
fn check(name: &str, compares: &str, groups: &[(f64, &Vec<f64>)]) -> Option<DesignCheck> {
    if groups.iter().any(|(_, g)| g.len() < 2) {
        return None;
    }
    let mut estimate = 0.0;
    let mut var = 0.0;
    let mut df_den = 0.0;
    for (c, g) in groups {
        let n = g.len() as f64;
        let m = g.iter().sum::<f64>() / n;
        let s2 = g.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        estimate += c * m;
        let term = c * c * s2 / n;
        var += term;
        df_den += term * term / (n - 1.0);
    }
    let df = if df_den > 0.0 {
        (var * var / df_den).floor().max(1.0) as usize
    } else {
        groups.iter().map(|(_, g)| g.len() - 1).sum()
    };
    let half = t_quantile(0.5 + CHECK_LEVEL / 2.0, df) * var.sqrt();
    let (lo, hi) = (estimate - half, estimate + half);
    Some(DesignCheck {
        check: name.to_owned(),
        compares: compares.to_owned(),
        change: estimate.exp_m1(),
        interval: (lo.exp_m1(), hi.exp_m1()),
        n: (groups[0].1.len(), groups[1].1.len()),
        passed: lo <= 0.0 && hi >= 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(arm: char, window: f64) -> InJobUnit {
        InJobUnit {
            iteration: 0,
            arm,
            window,
            steps: None,
            empty_cache_calls: None,
            fsync_calls: None,
        }
    }

    /// `jobs` jobs of `pairs` pairs, orders by a seeded coin, each unit's window from `f(arm,
    /// previous arm, place in the pair, pair index)` times a seeded noise of about 2 %.
    fn jobs_of(
        jobs: usize,
        pairs: usize,
        seed: u64,
        f: impl Fn(char, Option<char>, usize, usize) -> f64,
    ) -> Vec<Vec<(InJobUnit, InJobUnit)>> {
        let mut rng = stats::SplitMix64::new(seed);
        let mut noise = move || 1.0 + 0.02 * ((rng.next_u64() % 2001) as f64 / 1000.0 - 1.0);
        (0..jobs)
            .map(|j| {
                let schedule = super::super::schedule(seed, j as u32, 0, pairs);
                let arms: Vec<char> = schedule.chars().collect();
                (0..pairs)
                    .map(|k| {
                        let (x, y) = (arms[2 * k], arms[2 * k + 1]);
                        let before = (k > 0).then(|| arms[2 * k - 1]);
                        (
                            unit(x, 0.4 * f(x, before, 0, k) * noise()),
                            unit(y, 0.4 * f(y, Some(x), 1, k) * noise()),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn unchanged_saves_pass_every_check() {
        let jobs = jobs_of(3, 22, 31, |_, _, _, _| 1.0);
        let c = checks(&jobs).unwrap();
        let names: Vec<&str> = c.checks.iter().map(|c| c.check.as_str()).collect();
        assert_eq!(
            names,
            [
                "carry-over into A",
                "carry-over into B",
                "order",
                "end of job"
            ]
        );
        assert!(c.checks.iter().all(|c| c.passed), "{c:?}");
        assert!(c.warnings().is_empty());
        assert_eq!(c.ab_pairs + c.ba_pairs, 66);
        assert_eq!(c.tail_a + c.tail_b, 3 * 2 * TAIL_PAIRS);
    }

    #[test]
    fn b_state_slowing_the_next_a_unit_fails_the_carry_over_check() {
        // An A unit right after a B unit is 10 % slower; B itself is 20 % slower (a real
        // change, which the carry-over check must not mistake for a leak).
        let jobs = jobs_of(3, 22, 7, |arm, before, _, _| match (arm, before) {
            ('a', Some('b')) => 1.1,
            ('b', _) => 1.2,
            _ => 1.0,
        });
        let c = checks(&jobs).unwrap();
        let into_a = &c.checks[0];
        assert_eq!(into_a.check, "carry-over into A");
        assert!(!into_a.passed, "{into_a:?}");
        assert!((into_a.change - 0.10).abs() < 0.03, "{into_a:?}");
        assert!(
            c.checks[1].passed,
            "nothing leaks into B: {:?}",
            c.checks[1]
        );
        // The leak also slows the second save of every `ba` pair (an A after its B): the
        // order check may see it too; the carry-over warning names the remedy.
        let w = c.warnings();
        let carry: Vec<&String> = w.iter().filter(|w| w.contains("carry-over")).collect();
        assert_eq!(carry.len(), 1, "{w:?}");
        assert!(
            carry[0].contains("carry-over into A") && carry[0].contains("job-level"),
            "{w:?}"
        );
    }

    #[test]
    fn a_slower_second_save_fails_the_order_check_and_a_real_change_does_not() {
        // B 20 % slower everywhere, and the second save of every pair 5 % slower.
        let jobs = jobs_of(3, 22, 11, |arm, _, place, _| {
            (if arm == 'b' { 1.2 } else { 1.0 }) * if place == 1 { 1.05 } else { 1.0 }
        });
        let c = checks(&jobs).unwrap();
        let order = c.checks.iter().find(|c| c.check == "order").unwrap();
        assert!(!order.passed, "{order:?}");
        assert!((order.change - 0.05).abs() < 0.015, "{order:?}");
        for carry in &c.checks[..2] {
            assert!(carry.passed, "a real change is no leak: {carry:?}");
        }
        let w = c.warnings().join("\n");
        assert!(w.contains("seeded coin") && w.contains("ab,"), "{w}");
        let bias = c.order_bias().unwrap();
        assert!(bias.abs() <= 0.05, "{bias}");
    }

    #[test]
    fn a_slow_end_of_job_fails_the_end_of_job_check() {
        let jobs = jobs_of(3, 22, 5, |_, _, _, k| if k >= 20 { 1.1 } else { 1.0 });
        let c = checks(&jobs).unwrap();
        let end = c.checks.iter().find(|c| c.check == "end of job").unwrap();
        assert!(!end.passed, "{end:?}");
        assert!((end.change - 0.10).abs() < 0.03, "{end:?}");
        assert!(c.warnings().join("\n").contains("do not bias the test"));
    }

    #[test]
    fn too_few_pairs_leave_a_check_out() {
        assert!(checks(&[]).is_none());
        let jobs = jobs_of(1, 2, 3, |_, _, _, _| 1.0);
        let c = checks(&jobs).unwrap();
        // One carry-over unit at most per arm: no carry-over check; the order check needs two
        // pairs of each order.
        assert!(
            c.checks.iter().all(|c| !c.check.starts_with("carry-over")),
            "{c:?}"
        );
    }
}
