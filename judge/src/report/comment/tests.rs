// The PR comment's report with and without A/B results beside the comparison.

use super::*;
use crate::report::fixtures;

/// The fixture comparison's platform, and an A/B that judged checkpoint and iteration time.
fn ab() -> AbReport {
    let mut r = fixtures::ab_report();
    r.platform = "dgx_h100".into();
    r
}

#[test]
fn without_an_ab_the_comment_is_the_comparison_report() {
    let c = fixtures::comparison();
    assert_eq!(render(Some(&c), &[]), markdown::render(&c));
}

#[test]
fn an_ab_takes_over_timing_and_the_golden_timing_rows_are_diagnostic() {
    let c = fixtures::comparison();
    let body = render(Some(&c), &[ab()]);
    let at = |s: &str| {
        body.find(s)
            .unwrap_or_else(|| panic!("{s} missing in {body}"))
    };
    // The golden checkpoint-time regression of the async variant is shown, not gated.
    let regressions = &body[at("### Regressions and failures")..at("<details>")];
    assert!(
        !regressions.contains("checkpoint-blocking-time"),
        "{regressions}"
    );
    assert!(
        at("Timing against goldens: 6 row(s), 1 warning(s), diagnostic, not gated")
            > at("### goldgate A/B")
    );
    assert!(body.contains("| diagnostic (regression) |"), "{body}");
    assert!(at("### goldgate A/B") < at("### Regressions and failures"));
    insta::assert_snapshot!(body);
}

/// The A/B gates timing, so a warning that a golden timing is unstable belongs with the
/// diagnostic rows, not in the comment's warnings; other warnings stay where they were.
#[test]
fn warnings_about_golden_timing_are_diagnostic_under_an_ab() {
    let mut c = fixtures::comparison();
    c.warnings.push(
        "gpt/x (default): `checkpoint-blocking-time` is unstable: cv 40% > max_cv 20%".into(),
    );
    c.warnings
        .push("gpt/x: `lm loss` was recorded but g.json has no golden value for it".into());
    let body = render(Some(&c), &[ab()]);
    let details = &body[body
        .find("<details><summary>Timing against goldens")
        .unwrap()..];
    let warnings = body.find("**Warnings**").map_or("", |at| {
        &body[at..body
            .find("<details><summary>Timing against goldens")
            .unwrap()]
    });
    let esc = markdown::escape_md;
    for timing in [
        "is unstable (cv 31%",
        "`checkpoint-blocking-time` is unstable",
    ] {
        assert!(!warnings.contains(&esc(timing)), "{timing} in {warnings}");
        assert!(details.contains(&esc(timing)), "{timing} not in {details}");
    }
    assert!(warnings.contains(&esc("`lm loss` was recorded")), "{body}");
    assert!(
        details.contains("Timing against goldens: 6 row(s), 2 warning(s)"),
        "{details}"
    );
    // Without an A/B the goldens gate timing: the same warnings stay warnings.
    let alone = render(Some(&c), &[]);
    assert!(alone.contains(&esc(
        "- gpt/x (default): `checkpoint-blocking-time` is unstable"
    )));
}

#[test]
fn a_comment_of_an_ab_alone_has_its_own_headline() {
    let mut r = ab();
    r.metrics.truncate(1);
    r.metrics[0].verdict = crate::compare::ab::metric::AbVerdict::Pass;
    r.exit_code = Some(0);
    let body = render(None, &[r.clone()]);
    assert!(
        body.starts_with("## ✅ goldgate: timing (A/B): pass\n"),
        "{body}"
    );
    assert!(all_passed(None, &[r]));
    let failed = render(None, &[ab()]);
    assert!(
        failed.starts_with("## ❌ goldgate: timing (A/B): regression\n"),
        "{failed}"
    );
    assert!(!all_passed(None, &[ab()]));
}

#[test]
fn a_timing_regression_against_goldens_alone_no_longer_fails_the_headline() {
    let mut c = fixtures::comparison();
    // Keep only the async job, whose one failing row is its golden checkpoint time.
    c.jobs.retain(|j| j.verdict == Verdict::Regression);
    c.jobs[0]
        .metrics
        .retain(|m| m.verdict != Verdict::Improvement);
    c.counts = Counts::of(&c.jobs);
    let c = c.gated(false, false);
    assert_eq!(c.gate.map(|g| g.exit_code), Some(1));
    let mut r = ab();
    r.metrics.truncate(2);
    for m in &mut r.metrics {
        m.verdict = crate::compare::ab::metric::AbVerdict::Pass;
    }
    r.exit_code = Some(0);
    let body = render(Some(&c), &[r.clone()]);
    assert!(
        body.starts_with("## ✅ goldgate: pass; timing (A/B): pass\n"),
        "{body}"
    );
    assert!(all_passed(Some(&c), &[r]));
    assert!(
        !all_passed(Some(&c), &[]),
        "without the A/B the goldens gate timing"
    );
}

#[test]
fn a_failed_ab_job_says_what_failed() {
    let mut r = ab();
    r.jobs.truncate(1);
    r.jobs[0].outcome = Some("launch error: torchrun: No such file or directory".into());
    r.metrics.clear();
    r.pairs = 0;
    r.exit_code = Some(3);
    let body = render(None, &[r]);
    assert!(
        body.starts_with("## ❌ goldgate: timing (A/B): job failed\n"),
        "{body}"
    );
    assert!(
        body.contains("job 01-a (arm a) launch error: torchrun: No such file or directory"),
        "{body}"
    );
}

/// An A/B result comes from the tested run's artifacts, which a fork controls: every text of
/// it is escaped like a log line.
#[test]
fn hostile_text_in_an_ab_result_cannot_reach_the_markdown() {
    let mut r = ab();
    r.case = "gpt/x <img src=x> @octocat `y` [z](http://evil) | |".into();
    r.platform = "dgx_h100".into();
    r.arms[1].env = vec!["X=<script>@team".into()];
    r.warnings = vec!["<b>@octocat</b>".into()];
    r.metrics[0].metric = "m<i>@octocat".into();
    let body = render(None, &[r]);
    for bad in ["<img", "<script", "<b>", "<i>", "@octocat", "[z](", " `y` "] {
        assert!(!body.contains(bad), "{bad} in {body}");
    }
}
