use super::*;
use goldgate_schema::{CheckpointRecord, SaveParts, SaveProbe, StepValues};

#[test]
fn the_exact_null_distribution_matches_enumeration() {
    // n = 3: W⁺ over the 8 sign patterns of ranks 1, 2, 3 is 0,1,2,3,3,4,5,6.
    let cdf = signed_rank_null(3);
    let want = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0].map(|c| c / 8.0);
    for (got, want) in cdf.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{cdf:?}");
    }
    // Symmetric, and the tail of n = 10 is Wilcoxon's table value P(W⁺ ≤ 8) = 0.02441.
    let ten = signed_rank_null(10);
    assert!((ten[8] - 25.0 / 1024.0).abs() < 1e-12, "{}", ten[8]);
    assert!((ten[54] - (1.0 - ten[0])).abs() < 1e-12);
}

#[test]
fn the_interval_holds_the_shift_and_too_few_pairs_cannot_decide() {
    let d: Vec<f64> = (0..30)
        .map(|i| 0.1 + 0.01 * f64::from(i % 7) - 0.03)
        .collect();
    let (est, lo, hi) = hodges_lehmann(&d, 0.005).unwrap();
    assert!(lo < est && est < hi && lo > 0.0, "{lo} {est} {hi}");
    // Five pairs: 2⁻⁵ = 3 % is above any tail of 1 %: no finite interval.
    let (_, lo, hi) = hodges_lehmann(&d[..5], 0.01).unwrap();
    assert!(lo.is_infinite() && hi.is_infinite());
    assert_eq!(hodges_lehmann(&[], 0.01), None);
}

#[test]
fn the_schedule_is_seeded_balanced_and_differs_between_jobs() {
    let s = schedule(7, 0, 1, 22);
    assert_eq!(s.len(), 45);
    assert!(s.starts_with('-'));
    for pair in s.as_bytes()[1..].chunks(2) {
        assert!(pair == b"ab" || pair == b"ba", "{s}");
    }
    assert_eq!(s, schedule(7, 0, 1, 22));
    assert_ne!(s, schedule(7, 1, 1, 22));
    assert!(s.contains("abab") || s.contains("baba") || s.contains("abba") || s.contains("baab"));
}

#[test]
fn switches_parse_and_fixed_settings_are_refused_with_the_way_out() {
    assert_eq!(
        Switch::parse("save-delay=0.04"),
        Ok(Switch::SaveDelay(0.04))
    );
    assert_eq!(
        Switch::parse("empty-cache=remove").unwrap().render(),
        "empty-cache=remove"
    );
    let e = Switch::parse("expandable-segments=true").unwrap_err();
    assert!(e.contains("job-level"), "{e}");
    assert!(
        Switch::parse("gc-threshold=1.5")
            .unwrap_err()
            .contains("between 0 and 1")
    );
    assert!(
        Switch::parse("save-delay")
            .unwrap_err()
            .contains("NAME=VALUE")
    );
    let gc = [Switch::GcThreshold(0.8)];
    assert!(check_arms(&[], &gc).unwrap_err().contains("both arms"));
    assert_eq!(check_arms(&[Switch::GcThreshold(0.99)], &gc), Ok(()));
}

/// A job of `saves` saves every 2 steps: save window `window(i, arm)`, steps of 0.2 s.
fn job(schedule: &str, window: impl Fn(usize, char) -> f64) -> RunRecord {
    let mut r = goldgate_core::records::fixtures::sample();
    let mut steps = std::collections::BTreeMap::new();
    r.checkpoints = schedule
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let iteration = 2 * (i as u64 + 1);
            steps.insert(iteration - 1, 0.2);
            steps.insert(iteration, 0.2);
            let arm = matches!(c, 'a' | 'b').then(|| c.to_string());
            CheckpointRecord {
                iteration,
                probe: Some(SaveProbe {
                    seconds: window(i, c),
                    arm,
                    switch_error: None,
                    parts: SaveParts {
                        empty_cache_calls: Some(u64::from(c != 'b')),
                        ..SaveParts::default()
                    },
                }),
                ..CheckpointRecord::default()
            }
        })
        .collect();
    r.metrics.insert(STEP_METRIC.into(), StepValues(steps));
    r
}

fn test_params() -> InJobTest {
    InJobTest {
        alpha: 0.01,
        min_effect: 0.03,
        max_jobs: 3,
        metrics: 2,
    }
}

#[test]
fn a_plant_on_alternating_saves_is_caught_and_an_end_of_job_profile_is_not() {
    let s = schedule(11, 0, 1, 22);
    // Saves slow down through the job (+1 % a save) and jitter; B is 10 % slower.
    let jitter = |i: usize| 1.0 + 0.04 * ((i * 7919 % 13) as f64 / 13.0 - 0.5);
    let profile = |i: usize| 0.4 * (1.0 + 0.01 * i as f64) * jitter(i);
    let planted = job(&s, |i, c| profile(i) * if c == 'b' { 1.10 } else { 1.0 });
    let pairs = job_pairs("01-ab", &planted).unwrap();
    assert_eq!(pairs.len(), 22);
    let m = judge(&[pairs], &test_params());
    assert_eq!(m[0].metric, WINDOW_METRIC);
    assert_eq!(m[0].verdict, AbVerdict::Regression, "{:?}", m[0]);
    let change = m[0].change.unwrap();
    assert!((change - 0.10).abs() < 0.02, "{change}");
    assert_eq!(
        m[1].verdict,
        AbVerdict::Pass,
        "steps are untouched: {:?}",
        m[1]
    );
    // The counter: B made no empty_cache call, A one.
    assert_eq!(m[2].verdict, AbVerdict::Improvement);
    let same = job(&s, |i, _| profile(i));
    let m = judge(&[job_pairs("01-ab", &same).unwrap()], &test_params());
    assert_ne!(m[0].verdict, AbVerdict::Regression, "{:?}", m[0]);
}

#[test]
fn a_failed_switch_and_a_job_without_arms_are_clear_errors() {
    let mut r = job("-ab", |_, _| 0.4);
    r.checkpoints[1].probe.as_mut().unwrap().switch_error = Some("gc-threshold: no".into());
    let e = job_pairs("02-ab", &r).unwrap_err().to_string();
    assert!(e.contains("02-ab") && e.contains("gc-threshold: no"), "{e}");
    let r = job("---", |_, _| 0.4);
    assert!(matches!(
        job_pairs("03-ab", &r),
        Err(InJobError::NoArms { .. })
    ));
    let r = job("-aa", |_, _| 0.4);
    assert!(matches!(
        job_pairs("04-ab", &r),
        Err(InJobError::BadPair { .. })
    ));
}
