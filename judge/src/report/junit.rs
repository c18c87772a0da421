//! Stage "report": JUnit XML for CI test tabs — a suite per case and variant, a test per
//! metric. A metric that fails the gate is a `<failure>` with golden, actual and tolerance; a
//! failed job is one `<error>` test carrying the failure line; no golden is an `<error>` too.
//! Every test's `system-out` holds its explanation (golden, actual, interval, tolerance, rule
//! detail), so a CI test tab shows why a metric passed too; a suite's `time` is the wall time of
//! the job's repeats, from the records (no timestamps: the file is stable for the same runs).

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::report::error::ReportError;
use crate::report::units;
use goldgate_schema::{Comparison, JobComparison, MetricResult, Verdict};

fn metric_case(job: &JobComparison, m: &MetricResult) -> TestCase {
    let [golden, now, delta, interval] = units::metric_cells(m);
    let text = format!(
        "{}: golden {golden}, actual {now} ({delta}), interval {interval}, tolerance {}{}",
        m.verdict.label(),
        m.tolerance,
        if m.detail.is_empty() {
            String::new()
        } else {
            format!("; {}", m.detail)
        }
    );
    let status = match m.verdict {
        Verdict::Pass | Verdict::Improvement | Verdict::Unstable => TestCaseStatus::success(),
        // Not judged: neither a pass nor a failure of the metric.
        Verdict::NotSampled => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(text.clone()).set_type(m.verdict.label());
            s
        }
        Verdict::Regression | Verdict::MissingMetric => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(text.clone()).set_type(m.verdict.label());
            s
        }
        Verdict::MissingGolden | Verdict::JobFailed => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(text.clone()).set_type(m.verdict.label());
            s
        }
    };
    let mut case = TestCase::new(m.metric.as_str(), status);
    case.set_classname(suite_name(job));
    case.set_system_out(text);
    case
}

fn job_error(job: &JobComparison, platform: &str) -> TestCase {
    let (name, message) = match job.verdict {
        Verdict::MissingGolden => (
            "golden",
            format!("no golden file for platform {platform} (run `goldgate bless`)"),
        ),
        _ => (
            "job",
            match &job.failure_line {
                Some(line) => format!("job failed: {}: {}", job.outcome, line.trim()),
                None => format!("job failed: {}", job.outcome),
            },
        ),
    };
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(message).set_type(job.verdict.label());
    if let Some(line) = &job.failure_line {
        status.set_description(line.as_str());
    }
    let mut case = TestCase::new(name, status);
    case.set_classname(suite_name(job));
    let mut out = format!(
        "{} repeat(s): {}; outcome {}{}",
        job.job_ids.len(),
        job.job_ids.join(", "),
        job.outcome,
        job.failure_line
            .as_deref()
            .map(|l| format!("\n{l}"))
            .unwrap_or_default()
    );
    if let Some(log) = log_text(job) {
        out.push('\n');
        out.push_str(&log);
    }
    case.set_system_out(out);
    if let Some(time) = wall_time(job) {
        case.set_time(time);
    }
    case
}

/// A failed job's log path and last lines, for `system-out`.
fn log_text(job: &JobComparison) -> Option<String> {
    if job.log.is_none() && job.log_tail.is_empty() {
        return None;
    }
    let mut out = String::new();
    if let Some(log) = &job.log {
        out.push_str(&format!("log: {}\n", log.display()));
    }
    if !job.log_tail.is_empty() {
        out.push_str(&format!(
            "last {} line(s) of the log:\n",
            job.log_tail.len()
        ));
        for l in &job.log_tail {
            out.push_str(l);
            out.push('\n');
        }
    }
    Some(out)
}

/// The job's wall time, when recorded and finite.
fn wall_time(job: &JobComparison) -> Option<std::time::Duration> {
    job.wall_seconds
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
}

fn suite_name(job: &JobComparison) -> String {
    format!("{}@{}", job.case, job.variant)
}

/// The JUnit XML document.
pub fn render(c: &Comparison) -> Result<String, ReportError> {
    let mut report = Report::new("goldgate");
    for job in &c.jobs {
        let mut suite = TestSuite::new(suite_name(job));
        if let Some(time) = wall_time(job) {
            suite.set_time(time);
        }
        if job.metrics.is_empty() || job.verdict == Verdict::JobFailed {
            suite.add_test_case(job_error(job, &c.platform));
        }
        suite.add_test_cases(job.metrics.iter().map(|m| metric_case(job, m)));
        report.add_test_suite(suite);
    }
    report.to_string().map_err(|e| ReportError::Junit {
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixtures::comparison()).unwrap());
    }

    #[test]
    fn counts_failures_and_errors() {
        let xml = render(&fixtures::comparison()).unwrap();
        assert!(
            xml.contains(r#"tests="15" skipped="0" failures="1" errors="2""#),
            "{xml}"
        );
        assert!(xml.contains("&lt;@team&gt;"), "{xml}");
    }

    #[test]
    fn suites_carry_the_wall_time_and_every_test_its_explanation() {
        let xml = render(&fixtures::comparison()).unwrap();
        assert!(xml.contains(r#"time="12.500""#), "{xml}");
        let tests = xml.matches("<testcase ").count();
        let outs = xml.matches("<system-out>").count();
        assert_eq!(tests, outs, "{xml}");
        // A comparison saved before wall time was recorded has no `time` on its suites.
        let mut old = fixtures::comparison();
        for job in &mut old.jobs {
            job.wall_seconds = None;
        }
        let xml = render(&old).unwrap();
        assert!(!xml.contains("12.500"), "{xml}");
    }
}
