// Tests of `goldgate ab`'s statistics: the decision rule, drift cancelling in ABBA blocks, and
// simulated error rates of the whole sequence (A/A false alarms, stopping on large changes).

use super::*;
use crate::compare::stats::summary::SplitMix64;
use goldgate_schema::StepValues;

/// Normal draws (Box–Muller) from the crate's seeded generator.
struct Normal(SplitMix64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        ((self.0.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn next(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn seq(spread: f64, max_pairs: u32) -> Sequential {
    Sequential {
        alpha: 0.01,
        min_effect: 0.05,
        max_pairs,
        min_pairs: 1,
        spread,
        spread_df: 8,
    }
}

/// Runs one sequence on synthetic jobs (log-normal with `sd` per job, level drifting by
/// `drift` per job, B slower by `effect`); returns the verdict and the pairs it took.
fn sequence(
    rng: &mut Normal,
    s: &Sequential,
    sd: f64,
    effect: f64,
    drift: f64,
) -> (AbVerdict, usize) {
    let order = block_order(s.max_pairs.div_ceil(2), rng.0.next_u64());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut pairs = Vec::new();
    for (i, is_b) in order.iter().enumerate() {
        let level = (1.0 + drift * i as f64) * (sd * rng.next()).exp();
        if *is_b {
            b.push(level * (1.0 + effect));
        } else {
            a.push(level);
        }
        if a.len() == b.len() {
            let k = a.len() - 1;
            pairs.push(Pair {
                block: (i / 4 + 1) as u32,
                a: a[k],
                b: b[k],
            });
            let e = estimate(&pairs, s).unwrap();
            let v = decide(&e, Direction::LowerIsBetter, s.min_effect);
            if !v.is_open() {
                return (v, pairs.len());
            }
            if pairs.len() as u32 == s.max_pairs {
                return (AbVerdict::Inconclusive, pairs.len());
            }
        }
    }
    (AbVerdict::Inconclusive, pairs.len())
}

fn rates(s: &Sequential, sd: f64, effect: f64, drift: f64, n: usize) -> (f64, f64, f64) {
    let mut rng = Normal(SplitMix64::new(42));
    let (mut reg, mut pass, mut pairs) = (0, 0, 0);
    for _ in 0..n {
        let (v, k) = sequence(&mut rng, s, sd, effect, drift);
        reg += usize::from(v == AbVerdict::Regression);
        pass += usize::from(matches!(v, AbVerdict::Pass | AbVerdict::Improvement));
        pairs += k;
    }
    (
        reg as f64 / n as f64,
        pass as f64 / n as f64,
        pairs as f64 / n as f64,
    )
}

#[test]
fn decisions_follow_the_interval() {
    let e = |low: f64, high: f64| AbEstimate {
        pairs: 2,
        a: 1.0,
        b: 1.0,
        change: (low + high) / 2.0,
        low,
        high,
        level: 0.98,
        spread_used: 0.05,
        spread_seen: None,
        df: 9,
    };
    let lower = Direction::LowerIsBetter;
    assert_eq!(decide(&e(0.06, 0.2), lower, 0.05), AbVerdict::Regression);
    assert_eq!(decide(&e(-0.2, 0.04), lower, 0.05), AbVerdict::Pass);
    assert_eq!(decide(&e(-0.3, -0.1), lower, 0.05), AbVerdict::Improvement);
    assert_eq!(decide(&e(0.01, 0.09), lower, 0.05), AbVerdict::Undecided);
    assert_eq!(
        decide(&e(-0.3, -0.1), Direction::HigherIsBetter, 0.05),
        AbVerdict::Regression
    );
    assert_eq!(
        decide(&e(-0.3, -0.1), Direction::Both, 0.05),
        AbVerdict::Regression
    );
    assert_eq!(
        decide(&e(-0.02, 0.02), Direction::Both, 0.05),
        AbVerdict::Pass
    );
}

#[test]
fn linear_drift_cancels_in_a_block() {
    // A level rising 5 % per job: ABBA's two pairs are biased +5 % and -5 %; the block is not.
    let lv = |i: f64| 1.0 + 0.05 * i;
    let pairs = [
        Pair {
            block: 1,
            a: lv(0.0),
            b: lv(1.0),
        },
        Pair {
            block: 1,
            a: lv(3.0),
            b: lv(2.0),
        },
    ];
    let e = estimate(&pairs, &seq(0.05, 8)).unwrap();
    assert!(e.change.abs() < 0.005, "{e:?}");
}

#[test]
fn one_pair_has_the_floors_interval() {
    let s = seq(0.05, 8);
    let e = estimate(
        &[Pair {
            block: 1,
            a: 1.0,
            b: 1.5,
        }],
        &s,
    )
    .unwrap();
    // sd = 0.05·√2, t(1 − 0.01/8, 8) ≈ 4.33: half ≈ 0.306 on the log scale.
    let half = (1.5f64.ln() - (e.low + 1.0).ln()).abs();
    assert!((half - 4.33 * 0.05 * 2f64.sqrt()).abs() < 0.01, "{half}");
    assert_eq!(
        decide(&e, Direction::LowerIsBetter, 0.05),
        AbVerdict::Regression
    );
    assert_eq!(e.spread_seen, None);
    assert!(matches!(estimate(&[], &s), Err(Unusable::NoPairs)));
    assert!(matches!(
        estimate(
            &[Pair {
                block: 1,
                a: 0.0,
                b: 1.0
            }],
            &s
        ),
        Err(Unusable::NotPositive)
    ));
}

#[test]
fn a_spread_above_the_floor_widens_the_interval() {
    let s = seq(0.01, 8);
    let noisy: Vec<Pair> = (0..6)
        .map(|i| Pair {
            block: i / 2 + 1,
            a: 1.0,
            b: if i % 2 == 0 { 1.3 } else { 0.8 },
        })
        .collect();
    let e = estimate(&noisy, &s).unwrap();
    assert!(e.spread_used > 0.05, "{e:?}");
    assert!(e.spread_seen.unwrap() > e.spread_used);
}

#[test]
fn block_order_is_balanced_and_seeded() {
    let order = block_order(50, 7);
    assert_eq!(order, block_order(50, 7));
    assert_ne!(order, block_order(50, 8));
    for block in order.chunks(4) {
        assert_eq!(block.iter().filter(|b| **b).count(), 2);
        assert_eq!(block[0], block[3]);
    }
    let b_first = order.chunks(4).filter(|b| b[0]).count();
    assert!((15..=35).contains(&b_first), "{b_first}");
}

#[test]
fn simulated_false_alarms_stay_below_alpha() {
    // A/A at the floor's spread, with and without drift: at most alpha.
    for (sd, drift) in [(0.05, 0.0), (0.05, 0.01), (0.03, 0.0)] {
        let (reg, _, _) = rates(&seq(0.05, 8), sd, 0.0, drift, 20_000);
        println!(
            "A/A sd {sd} drift {drift}: false alarms {:.3} %",
            reg * 100.0
        );
        assert!(reg <= 0.01, "sd {sd} drift {drift}: {reg}");
    }
    // A floor set at half the real spread: the pooled estimate catches up, but not fully
    // (measured 1.28 %); the floor must be the platform's measured spread, not a wish.
    let (reg, _, _) = rates(&seq(0.05, 8), 0.10, 0.0, 0.0, 20_000);
    println!(
        "A/A sd 0.10 over a floor of 0.05: false alarms {:.3} %",
        reg * 100.0
    );
    assert!(reg > 0.01 && reg < 0.02, "{reg}");
}

#[test]
fn large_changes_stop_early_and_small_ones_are_caught() {
    let s = seq(0.03, 12);
    let (reg, _, pairs) = rates(&s, 0.03, 0.30, 0.0, 5_000);
    println!("+30 %: caught {:.1} %, {pairs:.2} pairs", reg * 100.0);
    assert!(reg > 0.99 && pairs <= 2.0, "{reg} {pairs}");
    let (reg, _, pairs) = rates(&s, 0.03, 0.15, 0.0, 5_000);
    println!("+15 %: caught {:.1} %, {pairs:.2} pairs", reg * 100.0);
    assert!(reg > 0.95, "{reg}");
    let (_, pass, _) = rates(&s, 0.03, 0.0, 0.0, 5_000);
    println!("A/A: pass {:.1} %", pass * 100.0);
    assert!(pass > 0.5, "{pass}");
}

fn record(saves: &[f64], calls: f64) -> RunRecord {
    let mut r = RunRecord::passed("m/c", goldgate_schema::VariantRecord::default(), 1, "p");
    let series = saves
        .iter()
        .enumerate()
        .map(|(i, v)| ((i as u64 + 1) * 3, *v))
        .collect();
    r.metrics
        .insert("checkpoint-blocking-time".into(), StepValues(series));
    r.metrics
        .insert("empty-cache-calls".into(), StepValues([(33, calls)].into()));
    r
}

#[test]
fn judges_timing_sequentially_and_counters_by_their_rule() {
    let rules = RuleSet::default();
    let a = [
        record(&[9.0, 1.0, 1.02, 0.98], 0.0),
        record(&[9.0, 1.01, 0.99, 1.0], 0.0),
    ];
    let b = [
        record(&[9.0, 1.5, 1.52, 1.49], 11.0),
        record(&[9.0, 1.48, 1.5, 1.51], 11.0),
    ];
    let (ra, rb): (Vec<&RunRecord>, Vec<&RunRecord>) = (a.iter().collect(), b.iter().collect());
    let metrics = vec![
        "checkpoint-blocking-time".to_owned(),
        "empty-cache-calls".to_owned(),
        "lm loss".to_owned(),
    ];
    let seq_metrics = vec!["checkpoint-blocking-time".to_owned()];
    let out = judge_all(
        &metrics,
        &seq_metrics,
        &rules,
        (&ra, &rb),
        &[1, 1],
        &seq(0.03, 8),
    );
    assert_eq!(out.len(), 2, "lm loss is in neither arm: {out:?}");
    assert_eq!(out[0].verdict, AbVerdict::Regression, "{:?}", out[0]);
    assert!((out[0].change.unwrap() - 0.5).abs() < 0.03);
    assert_eq!(out[0].pairs, 2);
    assert_eq!(out[1].test, AbTest::Rule);
    assert_eq!(out[1].verdict, AbVerdict::Regression, "{:?}", out[1]);
    assert!(crate::compare::ab::metric::settled(&out));
}

#[test]
fn a_metric_of_one_arm_only_is_missing() {
    let a = [record(&[1.0, 1.0], 0.0)];
    let mut b = [record(&[1.0, 1.0], 0.0)];
    b[0].metrics.remove("empty-cache-calls");
    let rule = RuleSet::default()
        .find("empty-cache-calls")
        .unwrap()
        .clone();
    let m = judge_exact("empty-cache-calls", &rule, &[&a[0]], &[&b[0]]).unwrap();
    assert_eq!(m.verdict, AbVerdict::MissingMetric);
    assert_eq!(m.detail, "only arm A recorded it");
}

/// A job that ended before its memory was first read has no `host-peak-pss-bytes` and says why
/// (`memory.not_sampled`). When every job of the arm without the metric says so, it is
/// `not-sampled` (judged neither way), never `missing-metric`; one job that lacks it without
/// saying why keeps it missing, a regression.
#[test]
fn a_metric_one_arms_samplers_could_not_read_is_not_sampled_not_missing() {
    use goldgate_schema::metric_names::HOST_PEAK;
    let why = "none of the 1 PSS read(s), the first as the job started, found a process of the job";
    let sampled = |pss: f64| {
        let mut r = record(&[1.0, 1.0], 0.0);
        r.metrics
            .insert(HOST_PEAK.into(), StepValues([(6, pss)].into()));
        r
    };
    let unsampled = |says: bool| {
        let mut r = record(&[1.0, 1.0], 0.0);
        if says {
            r.memory.not_sampled.insert(HOST_PEAK.into(), why.into());
        }
        r
    };
    let rule = RuleSet::default().find(HOST_PEAK).unwrap().clone();
    let a = [sampled(2.0e8), sampled(2.1e8)];
    let b = [unsampled(true), unsampled(true)];
    let (ra, rb): (Vec<&RunRecord>, Vec<&RunRecord>) = (a.iter().collect(), b.iter().collect());
    let m = judge_exact(HOST_PEAK, &rule, &ra, &rb).unwrap();
    assert_eq!(m.verdict, AbVerdict::NotSampled, "{m:?}");
    assert_eq!(
        m.detail,
        format!("not sampled in arm B's jobs, so not judged ({why})")
    );
    // Arm A's jobs the short ones: the same, named for A.
    let m = judge_exact(HOST_PEAK, &rule, &rb, &ra).unwrap();
    assert_eq!(m.verdict, AbVerdict::NotSampled, "{m:?}");
    assert!(m.detail.starts_with("not sampled in arm A's jobs"), "{m:?}");
    // One job of B lacks it and does not say why: missing, as before.
    let b = [unsampled(true), unsampled(false)];
    let rb: Vec<&RunRecord> = b.iter().collect();
    let m = judge_exact(HOST_PEAK, &rule, &ra, &rb).unwrap();
    assert_eq!(m.verdict, AbVerdict::MissingMetric, "{m:?}");
    assert_eq!(m.detail, "only arm A recorded it");
}
