//! Stage "report": GitHub workflow-command annotations (`::error file=…,title=…::message`)
//! for every metric or job that did not pass, pointing at the case's `model_config.yaml`.
//! The command decides whether to emit them (`GITHUB_ACTIONS=true`); this renderer is pure.
//!
//! Escaping follows GitHub's workflow-command rules: `%`, `\r`, `\n` in the message; those
//! plus `:` and `,` in property values.

use crate::report::units;
use goldgate_schema::{Comparison, JobComparison, MetricResult, Verdict};

/// GitHub's escapes, then every other control character (ESC, `\x01`) as its escape, so no
/// raw control byte reaches a CI log through an annotation.
fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    goldgate_core::log::one_line(&s)
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `error` for what fails the gate, `warning` for unstable metrics and missing goldens,
/// `notice` for improvements; `None` for passes.
fn level(v: Verdict) -> Option<&'static str> {
    match v {
        Verdict::Pass => None,
        Verdict::Improvement => Some("notice"),
        Verdict::Unstable | Verdict::NotSampled => Some("warning"),
        Verdict::MissingMetric | Verdict::MissingGolden | Verdict::Regression => Some("error"),
        Verdict::JobFailed => Some("error"),
    }
}

fn command(level: &str, job: &JobComparison, title: &str, message: &str) -> String {
    let mut props = Vec::new();
    if let Some(path) = &job.config_path {
        props.push(format!("file={}", escape_property(&path.to_string_lossy())));
    }
    props.push(format!("title={}", escape_property(title)));
    format!("::{level} {}::{}\n", props.join(","), escape_data(message))
}

fn metric_message(job: &JobComparison, m: &MetricResult) -> String {
    let [golden, now, delta, interval] = units::metric_cells(m);
    let mut msg = format!(
        "{}: golden {golden}, now {now} ({delta}), interval {interval}, tolerance {}",
        units::metric_label(job, m),
        m.tolerance
    );
    if !m.detail.is_empty() {
        msg.push_str(&format!("\n{}", m.detail));
    }
    msg
}

/// One workflow command per line.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    for job in &c.jobs {
        if job.metrics.is_empty() || job.verdict == Verdict::JobFailed {
            let Some(lvl) = level(job.verdict) else {
                continue;
            };
            let mut msg = format!("{} @ {}: {}", job.case, job.variant, job.outcome);
            if job.verdict == Verdict::MissingGolden {
                msg = format!(
                    "{} @ {}: no golden file for platform {} (run `goldgate bless`)",
                    job.case, job.variant, c.platform
                );
            }
            if let Some(line) = &job.failure_line {
                msg.push_str(&format!("\n{line}"));
            }
            let title = format!("goldgate {}: {}", job.verdict.label(), job.case);
            out.push_str(&command(lvl, job, &title, &msg));
        }
        for m in &job.metrics {
            if let Some(lvl) = level(m.verdict) {
                let title = format!("goldgate {}: {}", m.verdict.label(), m.metric);
                out.push_str(&command(lvl, job, &title, &metric_message(job, m)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixtures::comparison()));
    }

    #[test]
    fn escapes_per_workflow_command_rules() {
        assert_eq!(escape_data("50%\r\nx"), "50%25%0D%0Ax");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        let out = render(&fixtures::comparison());
        assert!(out.lines().all(|l| l.starts_with("::")), "{out}");
    }
}
