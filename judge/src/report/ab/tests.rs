// Snapshots of every form of an A/B report (what a user reads), from one fixed report.

use super::*;

fn report() -> AbReport {
    crate::report::fixtures::ab_report()
}

#[test]
fn the_seed_example_line() {
    let r = report();
    assert_eq!(
        metric_line(&r.metrics[0]),
        "checkpoint-blocking-time 2.41 s → 2.68 s, +11.2 % (99.83 % CI +7.9 to +14.6 %), 4 pairs: regression"
    );
}

#[test]
fn terminal() {
    insta::assert_snapshot!(render_terminal(&report()));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(render_markdown(&report()));
}

#[test]
fn junit() {
    let mut r = report();
    r.jobs[3].outcome = Some("failed (exit 1)".into());
    insta::assert_snapshot!(render_junit(&r).unwrap());
}

#[test]
fn json() {
    insta::assert_snapshot!(render_json(&report()).unwrap());
}

/// No `torchrun`: the first job fails to launch, no pair is judged, and the report says what
/// failed instead of a regression of 0 pairs.
#[test]
fn a_launch_failure_says_what_failed() {
    let mut r = report();
    r.jobs.truncate(1);
    r.jobs[0].outcome = Some("launch error: torchrun: program not found on PATH".into());
    r.jobs[0].failure = Some("torchrun: program not found on PATH".into());
    r.metrics.clear();
    r.goldens.clear();
    r.pairs = 0;
    r.exit_code = Some(3);
    let text = render_terminal(&r);
    assert!(text.ends_with("verdict: job failed\n"), "{text}");
    insta::assert_snapshot!(text);
}
