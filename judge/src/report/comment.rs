//! Stage "report": the PR comment's report — the comparison's markdown, and, when `goldgate ab`
//! ran beside it (`functional-tests.yml`'s `gpu-ab` job), the A/B results as its timing section.
//!
//! Timing against goldens of another day is noise (docs/results/ab-study.md: a band of 55 %);
//! base and head on one machine are not. So where an A/B judged a timing metric with an
//! interval, that metric's golden rows move out of the gated sections into a folded
//! "diagnostic, not gated" table, with the comparison's warnings about those metrics (an
//! unstable golden timing is no warning about the gate then), and the headline is the worst of
//! what is left and of the A/B verdicts. Without an A/B the report is [`markdown::render`]'s, unchanged.

use std::collections::BTreeSet;

use crate::compare::ab::outcome::AbReport;
use crate::report::markdown::{self, HEADER, escape_md};
use crate::report::table::counts_line;
use goldgate_schema::{Comparison, Counts, JobComparison, MetricResult, Verdict};

/// The comment's report for `comparison` (if a check compared goldens) and the A/B results
/// `abs` of the same platform.
pub fn render(comparison: Option<&Comparison>, abs: &[AbReport]) -> String {
    match comparison {
        Some(c) if abs.is_empty() => markdown::render(c),
        Some(c) => {
            let timed: BTreeSet<&str> = abs.iter().flat_map(AbReport::timed).collect();
            let (mut gated, diagnostic) = split_timing(c, &timed);
            let (timing, other): (Vec<String>, Vec<String>) = std::mem::take(&mut gated.warnings)
                .into_iter()
                .partition(|w| about_timing(w, &timed));
            gated.warnings = other;
            let mut out = headline(Some(&gated), abs);
            out.push_str(&ab_sections(abs));
            out.push_str(&markdown::body(&gated));
            out.push_str(&diagnostic_section(&diagnostic, &timing));
            out
        }
        None => headline(None, abs) + &ab_sections(abs),
    }
}

/// Whether nothing in the comment calls for a new one: every job plainly passed and every
/// A/B passed without an open or failed metric.
pub fn all_passed(comparison: Option<&Comparison>, abs: &[AbReport]) -> bool {
    let timed: BTreeSet<&str> = abs.iter().flat_map(AbReport::timed).collect();
    let goldens = comparison.is_none_or(|c| {
        let (gated, _) = split_timing(c, &timed);
        gated.jobs.iter().all(|j| j.verdict == Verdict::Pass)
    });
    goldens && abs.iter().all(ab_passed)
}

fn ab_passed(r: &AbReport) -> bool {
    r.exit_code == Some(0)
        && !r.job_failed()
        && r.verdict() == crate::compare::ab::metric::AbVerdict::Pass
}

/// `comparison` without the metrics in `timed`, each job's verdict taken again from what is
/// left (a failed job, or one without a golden, keeps its verdict) and the gate decided again
/// under its flags; and the rows taken out.
fn split_timing(
    c: &Comparison,
    timed: &BTreeSet<&str>,
) -> (Comparison, Vec<(JobComparison, MetricResult)>) {
    let mut gated = c.clone();
    let mut taken = Vec::new();
    for job in &mut gated.jobs {
        let (out, kept): (Vec<MetricResult>, Vec<MetricResult>) = std::mem::take(&mut job.metrics)
            .into_iter()
            .partition(|m| timed.contains(m.metric.as_str()));
        job.metrics = kept;
        if out.is_empty() {
            continue;
        }
        if !matches!(job.verdict, Verdict::JobFailed | Verdict::MissingGolden) {
            job.verdict = job
                .metrics
                .iter()
                .map(|m| m.verdict)
                .max()
                .unwrap_or(Verdict::Pass);
        }
        let shell = JobComparison {
            metrics: Vec::new(),
            ..job.clone()
        };
        taken.extend(out.into_iter().map(|m| (shell.clone(), m)));
    }
    gated.counts = Counts::of(&gated.jobs);
    if let Some(gate) = c.gate {
        gated = gated.gated(gate.strict, gate.fail_on_improvement);
    }
    (gated, taken)
}

/// The headline: the worst of the goldens' answer and the A/B verdicts, then the counts.
fn headline(c: Option<&Comparison>, abs: &[AbReport]) -> String {
    let worst_ab = abs.iter().max_by_key(|r| ab_rank(r));
    let ab_word = worst_ab.map_or("pass", |r| crate::report::ab::verdict_label(r));
    let ab_bad = abs.iter().any(|r| r.exit_code != Some(0));
    let (icon, line) = match c {
        Some(c) => {
            let (icon, word) = markdown::answer(c);
            let icon = if ab_bad { "❌" } else { icon };
            (
                icon,
                format!("{word}; timing (A/B): {ab_word}\n\n{}", counts(c)),
            )
        }
        None => {
            let icon = if ab_bad { "❌" } else { "✅" };
            (icon, format!("timing (A/B): {ab_word}"))
        }
    };
    format!("## {icon} goldgate: {line}\n")
}

fn counts(c: &Comparison) -> String {
    escape_md(&counts_line(c))
}

/// Orders A/B results by how badly they went: a failed job, then the verdict.
fn ab_rank(r: &AbReport) -> (bool, crate::compare::ab::metric::AbVerdict) {
    (r.job_failed(), r.verdict())
}

fn ab_sections(abs: &[AbReport]) -> String {
    let mut out = String::new();
    for r in abs {
        out.push('\n');
        out.push_str(&crate::report::ab::render_markdown(r));
    }
    out
}

/// Whether a comparison warning is about timing against goldens: it names a metric the A/B
/// timed (the engine writes a metric as `` `name` ``, older records as `name of …`), or it is
/// the `clocks: ab` notice. Under an A/B these are as diagnostic as the rows they explain.
fn about_timing(warning: &str, timed: &BTreeSet<&str>) -> bool {
    warning.contains("gates no clocks against golden values")
        || timed.iter().any(|m| {
            warning.contains(&format!("`{m}`")) || warning.starts_with(&format!("{m} of "))
        })
}

/// The golden timing rows the A/B took over, and the warnings about them, folded: shown, not
/// gated.
fn diagnostic_section(rows: &[(JobComparison, MetricResult)], warnings: &[String]) -> String {
    if rows.is_empty() && warnings.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n<details><summary>Timing against goldens: {} row(s), {} warning(s), diagnostic, not gated (the A/B above gates timing)</summary>\n\n",
        rows.len(),
        warnings.len()
    );
    if !rows.is_empty() {
        out.push_str(HEADER);
    }
    for (job, m) in rows {
        let verdict = format!("diagnostic ({})", m.verdict.label());
        out.push_str(&markdown::row(job, m, &verdict));
    }
    if !warnings.is_empty() {
        out.push_str("\nWarnings about timing against goldens (diagnostic):\n\n");
        for w in warnings {
            out.push_str(&format!("- {}\n", escape_md(w)));
        }
    }
    out.push_str("\n</details>\n");
    out
}

#[cfg(test)]
mod tests;
