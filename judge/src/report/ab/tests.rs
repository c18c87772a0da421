// Snapshots of every form of an A/B report (what a user reads), from one fixed report.

use super::*;
use crate::compare::ab::outcome::{AB_SCHEMA_VERSION, AbJob, AbMode, AbModeKind, ArmSpec};
use goldgate_core::config::Sequential;
use goldgate_schema::{MetricResult, Unit, Verdict};

fn metric(
    name: &str,
    verdict: AbVerdict,
    a: f64,
    b: f64,
    ci: Option<(f64, f64)>,
    pairs: usize,
) -> AbMetric {
    AbMetric {
        metric: name.into(),
        unit: Unit::of_metric(name),
        test: if ci.is_some() {
            AbTest::Sequential
        } else {
            AbTest::Rule
        },
        verdict,
        a: Some(a),
        b: Some(b),
        change: (a != 0.0).then(|| b / a - 1.0),
        interval: ci,
        level: ci.map(|_| 0.99833),
        pairs,
        detail: "per-job spread used 5.0 %".into(),
    }
}

fn job(index: u32, arm: &str, outcome: &str) -> AbJob {
    AbJob {
        index,
        run_id: format!("{index:02}-{arm}"),
        arm: arm.into(),
        block: 1,
        pair: index.div_ceil(2),
        warmup: false,
        results: format!("{index:02}-{arm}/gpt/c/default/1/results.json"),
        outcome: Some(outcome.into()),
        wall_seconds: Some(31.5),
        failure: None,
    }
}

fn report() -> AbReport {
    let seq = Sequential {
        alpha: 0.01,
        min_effect: 0.05,
        max_pairs: 12,
        min_pairs: 1,
        spread: 0.05,
        spread_df: 8,
    };
    AbReport {
        schema_version: AB_SCHEMA_VERSION,
        id: "20261201-160000-abcd".into(),
        case: "gpt/h200-ckpt-power".into(),
        platform: "h200".into(),
        mode: AbMode {
            kind: AbModeKind::Job,
            reason:
                "the arms differ in a variant (empty_cache=level2), fixed when the process starts"
                    .into(),
        },
        seed: 7,
        sequential: seq,
        within_job: None,
        arms: [
            ArmSpec {
                arm: "a".into(),
                ..ArmSpec::default()
            },
            ArmSpec {
                arm: "b".into(),
                variants: vec!["empty_cache=level2".into()],
                env: vec!["GOLDGATE_PLANT_SAVE_DELAY_S=0.04".into()],
                dir: None,
                switches: Vec::new(),
            },
        ],
        jobs: vec![
            job(1, "a", "passed"),
            job(2, "b", "passed"),
            job(3, "b", "passed"),
            job(4, "a", "passed"),
        ],
        pairs: 4,
        metrics: vec![
            metric(
                "checkpoint-blocking-time",
                AbVerdict::Regression,
                2.41,
                2.68,
                Some((0.079, 0.146)),
                4,
            ),
            metric(
                "iteration-time",
                AbVerdict::Inconclusive,
                0.231,
                0.236,
                Some((-0.03, 0.07)),
                4,
            ),
            metric(
                "empty-cache-calls",
                AbVerdict::Regression,
                0.0,
                11.0,
                None,
                4,
            ),
            metric("lm loss", AbVerdict::Pass, 2.7665, 2.7665, None, 4),
        ],
        goldens: vec![MetricResult {
            metric: "lm loss".into(),
            verdict: Verdict::Pass,
            golden: Some(2.7665),
            now: Some(2.7665),
            delta_pct: Some(0.0),
            interval: None,
            tolerance: "exact + rtol 5%".into(),
            unit: Unit::Plain,
            repeats: 2,
            detail: String::new(),
            band: None,
            pass_reason: None,
        }],
        golden_note: None,
        covariate: None,
        warnings: Vec::new(),
        finished: true,
        job_seconds: 126.0,
        gpus: 1,
        exit_code: Some(1),
        precision: None,
        checks: None,
    }
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

/// What a check annotation shows is the message: a failed job says what it failed on, a golden
/// regression of B is a failing test, and `--strict`'s exit 1 on an inconclusive says so.
#[test]
fn every_failure_in_the_junit_says_why() {
    let mut r = report();
    r.jobs[3].outcome = Some("failed (exit 1)".into());
    r.jobs[3].failure = Some("torch.OutOfMemoryError: CUDA out of memory".into());
    r.goldens[0].verdict = Verdict::Regression;
    r.goldens[0].now = Some(2.9);
    r.goldens[0].delta_pct = Some(4.8);
    let xml = render_junit(&r).unwrap();
    assert!(
        xml.contains(r#"<error message="job 04-a (arm a) failed (exit 1): torch.OutOfMemoryError: CUDA out of memory" type="job-failed"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="lm loss (B vs golden)""#)
            && xml.contains("lm loss golden 2.7665, B 2.9000"),
        "{xml}"
    );
    insta::assert_snapshot!(xml);

    let mut strict = report();
    strict
        .metrics
        .retain(|m| m.verdict == AbVerdict::Inconclusive);
    strict.exit_code = Some(1);
    let xml = render_junit(&strict).unwrap();
    assert!(
        xml.contains("4 pairs: inconclusive (exit 1 under --strict: no answer at the last pair)"),
        "{xml}"
    );

    let mut interrupted = report();
    interrupted.metrics.retain(|m| m.verdict == AbVerdict::Pass);
    interrupted.warnings = vec!["interrupted: the sequence did not finish".into()];
    interrupted.exit_code = Some(3);
    let xml = render_junit(&interrupted).unwrap();
    assert!(
        xml.contains(
            r#"<error message="exit 3: interrupted: the sequence did not finish" type="exit"/>"#
        ),
        "{xml}"
    );
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

/// On a machine without a GPU the jobs' time is no GPU time: the header says so.
#[test]
fn a_machine_without_a_gpu_counts_cpu_minutes() {
    let mut r = report();
    r.gpus = 0;
    let text = render_terminal(&r);
    let header = text.lines().nth(2).unwrap_or_default();
    assert!(!text.contains("GPU-minutes"), "{text}");
    insta::assert_snapshot!(header, @"4 pair(s), 4 job(s), 2.1 CPU-minutes (no GPU), seed 7; alpha 0.01 over 12 looks, min effect 5 %, spread floor 5 %");
    let markdown = render_markdown(&r);
    assert!(markdown.contains("2.1 CPU-minutes (no GPU)"), "{markdown}");
}

/// A metric arm B's jobs could not sample (they ended before their memory was first read) is
/// not a regression: the run passes, the terminal says which metric and why, and `--strict`'s
/// exit 1 says the same in the JUnit.
#[test]
fn a_metric_an_arm_could_not_sample_is_said_and_fails_only_when_strict() {
    use goldgate_schema::Exit;
    let mut r = report();
    r.metrics.retain(|m| m.verdict == AbVerdict::Pass);
    r.goldens.clear();
    let mut pss = metric(
        "host-peak-pss-bytes",
        AbVerdict::NotSampled,
        2.1e8,
        0.0,
        None,
        0,
    );
    (pss.b, pss.change) = (None, None);
    pss.detail = "not sampled in arm B's jobs, so not judged (none of the 1 PSS read(s), the \
                  first as the job started, found a process of the job (it ended before its \
                  memory could be read))"
        .into();
    r.metrics.push(pss);
    assert_eq!(r.exit(false, false), Exit::Pass);
    assert_eq!(r.exit(true, false), Exit::Regression);
    r.exit_code = Some(0);
    insta::assert_snapshot!(render_terminal(&r));
    r.exit_code = Some(1);
    let xml = render_junit(&r).unwrap();
    assert!(
        xml.contains("host-peak-pss-bytes 200.3 MiB → —, —: not-sampled (exit 1 under --strict: not sampled in arm B"),
        "{xml}"
    );
}

/// A within-job run asked for `--precision 3%` that stopped short of it, with its design checks
/// (one failed): the terminal and the markdown say where the intervals stand, how many more
/// jobs would reach the precision, and which check failed and what it means.
fn within_job_report() -> AbReport {
    use crate::compare::ab::precision::Precision;
    use crate::compare::ab::within_job::InJobTest;
    use crate::compare::ab::within_job::checks::{DesignCheck, InJobChecks};
    let mut r = report();
    r.mode = AbMode {
        kind: AbModeKind::WithinJob,
        reason: "the arms differ only in settings the probe switches while the job runs (empty-cache=remove): both arms in every job, save by save".into(),
    };
    r.within_job = Some(InJobTest {
        alpha: 0.01,
        min_effect: 0.03,
        max_jobs: 3,
        metrics: 2,
    });
    r.arms[1] = ArmSpec {
        arm: "b".into(),
        switches: vec!["empty-cache=remove".into()],
        ..ArmSpec::default()
    };
    r.jobs = (1..=3)
        .map(|i| AbJob {
            arm: "ab".into(),
            run_id: format!("20261201-160000-abcd-{i:02}-ab"),
            ..job(i, "ab", "passed")
        })
        .collect();
    r.pairs = 66;
    let mut window = metric(
        "checkpoint-window-time",
        AbVerdict::Inconclusive,
        0.408,
        0.411,
        Some((-0.036, 0.045)),
        66,
    );
    window.test = AbTest::SignedRank;
    window.change = Some(-0.001);
    window.level = Some(0.99667);
    let mut steps = metric(
        "iteration-time",
        AbVerdict::Improvement,
        0.257,
        0.249,
        Some((-0.055, -0.003)),
        63,
    );
    steps.test = AbTest::SignedRank;
    steps.level = Some(0.99667);
    r.metrics = vec![window, steps];
    r.goldens.clear();
    r.golden_note = Some("within-job: every job ran both arms, so none is judged against the goldens (goldgate run does that)".into());
    r.precision = Some(Precision::of(&r.metrics, 0.03, 66));
    let check =
        |name: &str, compares: &str, change: f64, ci: (f64, f64), passed: bool| DesignCheck {
            check: name.into(),
            compares: compares.into(),
            change,
            interval: ci,
            n: (17, 16),
            passed,
        };
    r.checks = Some(InJobChecks {
        metric: "checkpoint-window-time".into(),
        level: 0.99,
        ab_pairs: 35,
        ba_pairs: 31,
        tail_a: 6,
        tail_b: 6,
        checks: vec![
            check(
                "carry-over into A",
                "A units after the other arm against A units after A",
                0.023,
                (-0.048, 0.098),
                true,
            ),
            check(
                "carry-over into B",
                "B units after the other arm against B units after B",
                -0.011,
                (-0.07, 0.05),
                true,
            ),
            check(
                "order",
                "the second save of a pair against the first",
                -0.031,
                (-0.058, -0.004),
                false,
            ),
            check(
                "end of job",
                "the last 2 pairs of each job against its other pairs",
                0.012,
                (-0.03, 0.055),
                true,
            ),
        ],
    });
    r.exit_code = Some(0);
    r
}

#[test]
fn a_within_job_report_shows_its_precision_and_design_checks() {
    let r = within_job_report();
    let text = render_terminal(&r);
    assert!(text.contains("precision ±3 % asked: NOT reached"), "{text}");
    assert!(
        text.contains("(--max-jobs 6)"),
        "(4.05/3)² × 66 = 121 pairs at 22 a job: {text}"
    );
    assert!(text.contains("check failed: order"), "{text}");
    insta::assert_snapshot!("within_job_terminal", text);
    insta::assert_snapshot!("within_job_markdown", render_markdown(&r));
    let json: serde_json::Value = serde_json::from_str(&render_json(&r).unwrap()).unwrap();
    assert_eq!(json["precision"]["reached"], false);
    assert_eq!(json["checks"]["checks"][2]["passed"], false);
    // A job-level report without either says nothing of them.
    let plain = render_json(&report()).unwrap();
    assert!(
        !plain.contains("\"precision\"") && !plain.contains("\"checks\""),
        "{plain}"
    );
}
