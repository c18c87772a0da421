// Tests of the save/iteration covariate: the adjusted pair, the rule that switches it off, and
// `apply` on recorded jobs as `goldgate ab` judges them.

use super::*;
use goldgate_schema::StepValues;

fn seq(spread: f64) -> Sequential {
    Sequential {
        alpha: 0.01,
        min_effect: 0.03,
        max_pairs: 6,
        min_pairs: 1,
        spread,
        spread_df: 8,
    }
}

const COV: Covariate = Covariate {
    slope: 0.8,
    spread: 0.02,
};

/// A job whose iteration time is `iteration` every step and whose saves (after the first,
/// set-up save) sit at `0.4 s × iteration^0.8 × (1 + plant)`: its save level follows its steps.
fn job(iteration: f64, plant: f64) -> RunRecord {
    let mut r = RunRecord::passed("m/c", goldgate_schema::VariantRecord::default(), 1, "p");
    let save = 0.4 * iteration.powf(0.8) * (1.0 + plant);
    let saves = std::iter::once((3, 9.0)).chain((2..=11).map(|k| (k * 3, save)));
    r.metrics
        .insert(ADJUSTED.into(), StepValues(saves.collect()));
    let steps = (1..=33).map(|s| (s, 0.25 * iteration));
    r.metrics.insert(BY.into(), StepValues(steps.collect()));
    r
}

/// Four pairs whose jobs sit at their own iteration levels (the A/B of the H200: every job its
/// own level), B's saves `plant` slower, B's steps `× (1 + slower)`.
fn arms(plant: f64, slower: f64) -> (Vec<RunRecord>, Vec<RunRecord>) {
    let a = [1.0, 1.12, 0.92, 1.04].map(|i| job(i, 0.0));
    let b = [1.12, 0.92, 1.04, 1.0].map(|i| job(i * (1.0 + slower), plant));
    (a.to_vec(), b.to_vec())
}

fn judged(plant: f64, slower: f64, state: &mut CovariateUse) -> AbMetric {
    let (a, b) = arms(plant, slower);
    let (ra, rb): (Vec<&RunRecord>, Vec<&RunRecord>) = (a.iter().collect(), b.iter().collect());
    let rules = RuleSet::default();
    let names = [ADJUSTED.to_owned(), BY.to_owned()];
    let mut out = ab::judge_all(
        &names,
        &names,
        &rules,
        (&ra, &rb),
        &[1, 1, 2, 2],
        &seq(0.07),
    );
    apply(
        &mut out,
        &rules,
        (&ra, &rb),
        &[1, 1, 2, 2],
        &seq(0.07),
        state,
    );
    out.remove(0)
}

#[test]
fn the_adjusted_pair_takes_the_shared_iteration_offset_out() {
    // B's job ran its steps 10 % slower and saved 0.8 × that slower: the adjusted change is 0.
    let save = [Pair {
        block: 1,
        a: 0.4,
        b: 0.4 * 1.1f64.powf(0.8),
    }];
    let iteration = [Pair {
        block: 1,
        a: 0.25,
        b: 0.275,
    }];
    let adjusted = adjust(&save, &iteration, 0.8).unwrap();
    assert!(
        (adjusted[0].b / adjusted[0].a - 1.0).abs() < 1e-12,
        "{adjusted:?}"
    );
    assert!(adjust(&save, &[], 0.8).is_none(), "unpaired lists");
}

#[test]
fn a_save_change_hidden_by_job_levels_is_caught_with_the_covariate() {
    let mut plain = CovariateUse::new(COV);
    plain.off = Some("not asked for".into());
    let without = judged(0.10, 0.0, &mut plain);
    assert_eq!(without.verdict, AbVerdict::Undecided, "{without:?}");
    let mut state = CovariateUse::new(COV);
    let with = judged(0.10, 0.0, &mut state);
    assert_eq!(with.verdict, AbVerdict::Regression, "{with:?}");
    assert!(state.applied && state.off.is_none(), "{state:?}");
    assert!((with.change.unwrap() - 0.10).abs() < 0.005, "{with:?}");
    assert!(
        with.detail
            .starts_with("adjusted by iteration-time (slope 0.8, spread floor 2.0 %"),
        "{}",
        with.detail
    );
    // A and B stay what the jobs measured.
    assert_eq!((with.a, with.b), (without.a, without.b));
}

#[test]
fn a_b_that_changes_iteration_time_is_judged_unadjusted_and_says_why() {
    // Steps 30 % slower in every B job (its saves slower with them): the covariate would take
    // a change B made out of B's saves; once iteration time's interval excludes 0 the rule
    // switches it off and the save is judged as measured.
    let mut state = CovariateUse::new(COV);
    let m = judged(0.0, 0.30, &mut state);
    assert!(!state.applied, "{state:?}");
    let off = state.off.clone().unwrap();
    assert!(
        off.starts_with("off from pair 4: iteration time changed (+30.0 %, 90 % interval"),
        "{off}"
    );
    assert!(!m.detail.starts_with("adjusted"), "{}", m.detail);
    // It stays off even once a look's iteration interval would hold 0 again.
    let mut later = state.clone();
    let _ = judged(0.0, 0.0, &mut later);
    assert_eq!(later.off, state.off);
    assert!(!later.applied);
}

#[test]
fn the_covariate_is_off_when_a_job_lacks_iteration_time() {
    let (a, mut b) = arms(0.1, 0.0);
    b[2].metrics.remove(BY);
    let (ra, rb): (Vec<&RunRecord>, Vec<&RunRecord>) = (a.iter().collect(), b.iter().collect());
    let rules = RuleSet::default();
    let names = [ADJUSTED.to_owned()];
    let mut out = ab::judge_all(
        &names,
        &names,
        &rules,
        (&ra, &rb),
        &[1, 1, 2, 2],
        &seq(0.07),
    );
    let mut state = CovariateUse::new(COV);
    apply(
        &mut out,
        &rules,
        (&ra, &rb),
        &[1, 1, 2, 2],
        &seq(0.07),
        &mut state,
    );
    assert_eq!(
        state.off.as_deref(),
        Some("off: a job lacks checkpoint-blocking-time or iteration-time")
    );
    assert!(!out[0].detail.starts_with("adjusted"));
}
