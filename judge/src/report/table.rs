//! Stage "report": the terminal table of a comparison — one row per metric (one per job when a
//! job has nothing to compare), the explanation of every non-passing metric below it, and the
//! verdict counts. Colour only when the caller asks (`cmd::output::color` decides: `--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, a terminal).

use goldgate_core::log::one_line;
use tabled::settings::object::Cell;
use tabled::settings::{Color, Style as TableStyle};

use crate::report::units;
use goldgate_schema::{Comparison, JobComparison, Verdict};

/// How to draw the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Colour verdicts with ANSI escapes.
    pub color: bool,
    /// The run's wall time, for the closing line (`FAIL [8.4s] …`); `None` outside a run.
    pub elapsed: Option<std::time::Duration>,
    /// The failed jobs' log tails were printed already (`goldgate run`'s progress shows them
    /// under each `FAIL` line): leave them out here, keep the log's path.
    pub tails_shown: bool,
}

const HEADER: [&str; 8] = [
    "case", "variant", "metric", "golden", "now", "Δ %", "interval", "verdict",
];

fn verdict_color(v: Verdict) -> Option<Color> {
    match v {
        Verdict::Pass => None,
        Verdict::Improvement => Some(Color::FG_GREEN),
        Verdict::Unstable
        | Verdict::NotSampled
        | Verdict::MissingMetric
        | Verdict::MissingGolden => Some(Color::FG_YELLOW),
        Verdict::Regression | Verdict::JobFailed => Some(Color::FG_RED | Color::BOLD),
    }
}

/// One row per metric; a job without metrics, or a failed one, gets a row naming why first.
fn rows(job: &JobComparison) -> Vec<([String; 8], Verdict)> {
    let mut out = Vec::new();
    if job.metrics.is_empty() || job.verdict == Verdict::JobFailed {
        let why = match job.verdict {
            Verdict::JobFailed => format!("job-failed: {}", short_outcome(&job.outcome)),
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

/// Widest outcome the verdict column shows; the note under the table has it whole.
const OUTCOME_CELL: usize = 40;

/// An outcome short enough for the verdict column: `launch error: program … not found (…)`
/// becomes `launch error`; anything else long is cut with `…`.
fn short_outcome(outcome: &str) -> String {
    let outcome = one_line(outcome);
    if outcome.chars().count() <= OUTCOME_CELL {
        return outcome;
    }
    match outcome.split_once(": ") {
        Some((kind, _)) if kind.chars().count() <= OUTCOME_CELL => kind.to_owned(),
        _ => {
            let cut: String = outcome.chars().take(OUTCOME_CELL - 1).collect();
            format!("{cut}…")
        }
    }
}

/// A failed job's log path and last lines, indented under its note.
fn log_notes(job: &JobComparison, tails_shown: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(log) = &job.log {
        out.push(format!("  log: {}", one_line(&log.display().to_string())));
    }
    if !job.log_tail.is_empty() && !tails_shown {
        out.push(format!("  last {} line(s) of the log:", job.log_tail.len()));
        out.extend(job.log_tail.iter().map(|l| format!("  | {}", one_line(l))));
    }
    out
}

/// Lines explaining what did not pass: detail, tolerance, failure line, log tail.
fn notes(c: &Comparison, tails_shown: bool) -> Vec<String> {
    let mut out = Vec::new();
    for job in &c.jobs {
        if let Some(line) = &job.failure_line {
            // A launch error's outcome is its message already: said once, not "X — X".
            let line = one_line(line.trim());
            let why = if job.outcome.contains(&line) {
                String::new()
            } else {
                format!(" — {line}")
            };
            out.push(format!(
                "{} @ {}: {}{why}",
                one_line(&job.case),
                one_line(&job.variant),
                job.outcome,
            ));
        }
        out.extend(log_notes(job, tails_shown));
        if job.verdict == Verdict::MissingGolden {
            out.push(format!(
                "{} @ {}: no golden file for platform {} (run `goldgate bless`)",
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

/// The last line, as nextest ends a run: the gate's decision, the run's time and the counts
/// (`FAIL [8.4s] 4 jobs on dev_cpu: 1 regression, 3 passed`); only the counts for a
/// comparison not gated yet.
pub fn closing_line(c: &Comparison, elapsed: Option<std::time::Duration>) -> String {
    let counts = counts_line(c);
    let Some(gate) = c.gate else {
        return counts;
    };
    let status = if gate.exit_code == 0 { "PASS" } else { "FAIL" };
    format!("{status} {}{counts}", time_tag(elapsed))
}

/// `[8.4s] ` for a known wall time, else nothing.
pub fn time_tag(elapsed: Option<std::time::Duration>) -> String {
    elapsed.map_or(String::new(), |d| format!("[{:.1}s] ", d.as_secs_f64()))
}

/// `6 jobs on dgx_h100: 1 failed, 1 regression, …, 1 passed` (worst first, zeros left out);
/// `1 job (3 repeats)` when repeats were judged together, as the progress bar counts them.
pub(crate) fn counts_line(c: &Comparison) -> String {
    let parts: Vec<String> = Verdict::ALL
        .iter()
        .rev()
        .filter(|v| c.counts.get(**v) > 0)
        .map(|v| count_words(*v, c.counts.get(*v)))
        .collect();
    let total = c.counts.total();
    let mut jobs = (if total == 1 { "job" } else { "jobs" }).to_owned();
    let repeats: usize = c.jobs.iter().map(|j| j.job_ids.len()).sum();
    if repeats > total {
        jobs.push_str(&format!(" ({repeats} repeats)"));
    }
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
        Verdict::NotSampled => format!("{n} with a metric not sampled"),
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
    for line in notes(c, style.tails_shown) {
        out.push_str(&format!("  {line}\n"));
    }
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&closing_line(c, style.elapsed));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn plain_snapshot() {
        insta::assert_snapshot!(render(&fixtures::comparison(), Style::default()));
    }

    #[test]
    fn colour_only_when_asked() {
        let c = fixtures::comparison();
        assert!(!render(&c, Style::default()).contains('\u{1b}'));
        let coloured = render(
            &c,
            Style {
                color: true,
                ..Style::default()
            },
        );
        assert!(coloured.contains("\u{1b}[31m"), "{coloured}");
        // Colour must not change the layout: strip escapes and compare.
        let stripped = regex::Regex::new("\u{1b}\\[[0-9;]*m")
            .unwrap()
            .replace_all(&coloured, "");
        assert_eq!(stripped, render(&c, Style::default()));
    }

    #[test]
    fn an_empty_comparison_says_so() {
        let c = goldgate_schema::Comparison::new("dev_cpu".into(), vec![], vec![]);
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

    #[test]
    fn the_closing_line_says_the_gate_the_time_and_the_repeats() {
        let c = fixtures::comparison();
        let took = Some(std::time::Duration::from_millis(8_440));
        // Not gated yet (a report rendered from it): the counts only.
        assert_eq!(closing_line(&c, took), counts_line(&c));
        let failed = c.clone().gated(false, false);
        assert_eq!(
            closing_line(&failed, took),
            format!("FAIL [8.4s] {}", counts_line(&c))
        );
        let mut one = c.clone();
        one.jobs.retain(|j| j.verdict == Verdict::Pass);
        one.jobs[0].job_ids = (1..=3).map(|r| format!("x@default#{r}")).collect();
        one.counts = goldgate_schema::Counts::of(&one.jobs);
        let passed = one.gated(false, false);
        assert_eq!(
            closing_line(&passed, None),
            "PASS 1 job (3 repeats) on dgx_h100: 1 passed"
        );
        assert!(
            render(&passed, Style::default())
                .ends_with("PASS 1 job (3 repeats) on dgx_h100: 1 passed\n")
        );
    }

    #[test]
    fn a_launch_error_is_said_once_and_a_shown_tail_not_again() {
        let mut c = fixtures::comparison();
        let job = c
            .jobs
            .iter_mut()
            .find(|j| j.verdict == Verdict::JobFailed)
            .unwrap();
        let message = "program `torchrun` not found (looked next to goldgate (/bin))";
        job.outcome = format!("launch error: {message}");
        job.failure_line = Some(message.to_owned());
        job.log_tail = vec!["the tail's only line".to_owned()];
        let text = render(&c, Style::default());
        assert!(
            text.contains(&format!("launch error: {message}\n")),
            "{text}"
        );
        assert!(!text.contains(" — program"), "{text}");
        assert!(text.contains("  | the tail's only line\n"), "{text}");
        let shown = Style {
            tails_shown: true,
            ..Style::default()
        };
        assert!(!render(&c, shown).contains("the tail's only line"));
        // The verdict column names the kind; the note has the message.
        assert!(text.contains("│ job-failed: launch error │"), "{text}");
        assert_eq!(short_outcome("failed (exit 1)"), "failed (exit 1)");
        let long = "x".repeat(60);
        assert_eq!(short_outcome(&long).chars().count(), OUTCOME_CELL);
    }
}
