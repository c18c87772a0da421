//! Stage "report": the terminal table of a comparison — one row per metric (one per job when a
//! job has nothing to compare), the explanation of every non-passing metric below it, and the
//! verdict counts. Colour only when the caller asks (`cmd::output::color` decides: `--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, a terminal).

use crate::observe::log::one_line;
use tabled::settings::object::Cell;
use tabled::settings::{Color, Style as TableStyle};

use crate::compare::{Comparison, JobComparison, Verdict};
use crate::report::units;

/// How to draw the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Colour verdicts with ANSI escapes.
    pub color: bool,
}

const HEADER: [&str; 8] = [
    "case", "variant", "metric", "golden", "now", "Δ %", "interval", "verdict",
];

fn verdict_color(v: Verdict) -> Option<Color> {
    match v {
        Verdict::Pass => None,
        Verdict::Improvement => Some(Color::FG_GREEN),
        Verdict::Unstable | Verdict::MissingMetric | Verdict::MissingGolden => {
            Some(Color::FG_YELLOW)
        }
        Verdict::Regression | Verdict::JobFailed => Some(Color::FG_RED | Color::BOLD),
    }
}

/// One row per metric; a job without metrics, or a failed one, gets a row naming why first.
fn rows(job: &JobComparison) -> Vec<([String; 8], Verdict)> {
    let mut out = Vec::new();
    if job.metrics.is_empty() || job.verdict == Verdict::JobFailed {
        let why = match job.verdict {
            Verdict::JobFailed => format!("job-failed: {}", job.outcome),
            v => v.label().to_string(),
        };
        let dash = || "—".to_string();
        let row = [
            one_line(&job.case),
            one_line(&job.variant),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
            why,
        ];
        out.push((row, job.verdict));
    }
    out.extend(job.metrics.iter().map(|m| {
        let [golden, now, delta, interval] = units::metric_cells(m);
        let row = [
            one_line(&job.case),
            one_line(&job.variant),
            one_line(&m.metric),
            golden,
            now,
            delta,
            interval,
            m.verdict.label().to_string(),
        ];
        (row, m.verdict)
    }));
    out
}

/// A failed job's log path and last lines, indented under its note.
fn log_notes(job: &JobComparison) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(log) = &job.log {
        out.push(format!("  log: {}", one_line(&log.display().to_string())));
    }
    if !job.log_tail.is_empty() {
        out.push(format!("  last {} line(s) of the log:", job.log_tail.len()));
        out.extend(job.log_tail.iter().map(|l| format!("  | {}", one_line(l))));
    }
    out
}

/// Lines explaining what did not pass: detail, tolerance, failure line, log tail.
fn notes(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for job in &c.jobs {
        if let Some(line) = &job.failure_line {
            out.push(format!(
                "{} @ {}: {} — {}",
                one_line(&job.case),
                one_line(&job.variant),
                job.outcome,
                one_line(line.trim())
            ));
        }
        out.extend(log_notes(job));
        if job.verdict == Verdict::MissingGolden {
            out.push(format!(
                "{} @ {}: no golden file for platform {} (hint: run `goldgate bless`)",
                one_line(&job.case),
                one_line(&job.variant),
                c.platform
            ));
        }
        for m in job.metrics.iter().filter(|m| m.verdict != Verdict::Pass) {
            let mut line = format!(
                "{} (tolerance {})",
                units::metric_label(job, m),
                m.tolerance
            );
            if !m.detail.is_empty() {
                line.push_str(": ");
                line.push_str(&one_line(&m.detail));
            }
            out.push(line);
        }
    }
    out
}

/// `6 jobs on dgx_h100: 1 failed, 1 regression, …, 1 passed` (worst first, zeros left out).
pub(crate) fn counts_line(c: &Comparison) -> String {
    let parts: Vec<String> = Verdict::ALL
        .iter()
        .rev()
        .filter(|v| c.counts.get(**v) > 0)
        .map(|v| count_words(*v, c.counts.get(*v)))
        .collect();
    let total = c.counts.total();
    let jobs = if total == 1 { "job" } else { "jobs" };
    if parts.is_empty() {
        return format!("{total} {jobs} on {}", c.platform);
    }
    format!("{total} {jobs} on {}: {}", c.platform, parts.join(", "))
}

/// `n` jobs of verdict `v` in words, plural when `n` is not 1 (`2 regressions`, `1 passed`).
fn count_words(v: Verdict, n: usize) -> String {
    let s = if n == 1 { "" } else { "s" };
    match v {
        Verdict::Pass => format!("{n} passed"),
        Verdict::Improvement => format!("{n} improvement{s}"),
        Verdict::Unstable => format!("{n} unstable"),
        Verdict::MissingMetric => format!("{n} missing a metric"),
        Verdict::MissingGolden => format!("{n} without a golden"),
        Verdict::Regression => format!("{n} regression{s}"),
        Verdict::JobFailed => format!("{n} failed"),
    }
}

/// Renders the table, the notes and the counts line.
pub fn render(c: &Comparison, style: Style) -> String {
    let mut b = tabled::builder::Builder::default();
    b.push_record(HEADER);
    let mut verdicts = Vec::new();
    for job in &c.jobs {
        for (row, v) in rows(job) {
            b.push_record(row);
            verdicts.push(v);
        }
    }
    let mut table = b.build();
    table.with(TableStyle::sharp());
    if style.color {
        for (i, v) in verdicts.iter().enumerate() {
            if let Some(color) = verdict_color(*v) {
                table.modify(Cell::new(i + 1, HEADER.len() - 1), color);
            }
        }
    }
    let mut out = format!("{table}\n");
    for line in notes(c) {
        out.push_str(&format!("  {line}\n"));
    }
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&counts_line(c));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn plain_snapshot() {
        insta::assert_snapshot!(render(&fixtures::comparison(), Style { color: false }));
    }

    #[test]
    fn colour_only_when_asked() {
        let c = fixtures::comparison();
        assert!(!render(&c, Style { color: false }).contains('\u{1b}'));
        let coloured = render(&c, Style { color: true });
        assert!(coloured.contains("\u{1b}[31m"), "{coloured}");
        // Colour must not change the layout: strip escapes and compare.
        let stripped = regex::Regex::new("\u{1b}\\[[0-9;]*m")
            .unwrap()
            .replace_all(&coloured, "");
        assert_eq!(stripped, render(&c, Style { color: false }));
    }

    #[test]
    fn an_empty_comparison_says_so() {
        let c = crate::compare::Comparison::new("dev_cpu".into(), vec![], vec![]);
        assert_eq!(counts_line(&c), "0 jobs on dev_cpu");
        assert!(render(&c, Style::default()).ends_with("0 jobs on dev_cpu\n"));
    }

    #[test]
    fn counts_line_lists_worst_first() {
        assert_eq!(
            counts_line(&fixtures::comparison()),
            "6 jobs on dgx_h100: 1 failed, 1 regression, 1 without a golden, 1 unstable, 1 improvement, 1 passed"
        );
        assert_eq!(count_words(Verdict::Regression, 2), "2 regressions");
        assert_eq!(count_words(Verdict::Improvement, 0), "0 improvements");
        assert_eq!(count_words(Verdict::Pass, 3), "3 passed");
    }
}
