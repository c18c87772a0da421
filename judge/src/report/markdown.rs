//! Stage "report": the markdown report of a comparison (step summary and PR comment body) and
//! [`escape_md`], which every markdown renderer applies to text from logs, cases and variants.

/// Escapes text for a GitHub markdown table cell: table pipes, HTML, emphasis, links, code
/// spans and `@` mentions (a zero-width space after `@` keeps GitHub from pinging anyone).
/// Line breaks become spaces so a log line cannot end the table row.
pub fn escape_md(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("@&#8203;"),
            '\r' | '\n' => out.push(' '),
            // ESC sequences and other control characters never reach markdown.
            c if c.is_control() => {}
            _ => out.push(c),
        }
    }
    out
}

use crate::report::table::counts_line;
use crate::report::units;
use goldgate_schema::{Comparison, JobComparison, MetricResult, Verdict};

pub(crate) const HEADER: &str = "| case | variant | metric | golden | now | Δ % | interval | verdict |\n\
                      |---|---|---|---|---|---|---|---|\n";

/// Longest failure line shown (characters); the rest is in the job's log.
const MAX_LINE: usize = 300;

/// The headline: an icon and the gate's answer, then the counts.
fn headline(c: &Comparison) -> String {
    let (icon, word) = answer(c);
    format!(
        "## {icon} goldgate: {word}\n\n{}\n",
        escape_md(&counts_line(c))
    )
}

/// The headline's icon and words: the worst job's verdict, or what the gate said when it
/// failed on what reads as a pass.
pub(crate) fn answer(c: &Comparison) -> (&'static str, &'static str) {
    let worst = c
        .jobs
        .iter()
        .map(|j| j.verdict)
        .max()
        .unwrap_or(Verdict::Pass);
    let (mut icon, mut word) = match worst {
        Verdict::Pass => ("✅", "pass"),
        Verdict::Improvement => ("✅", "pass, with improvements"),
        Verdict::Unstable => ("⚠️", "pass, with unstable metrics"),
        Verdict::NotSampled => ("⚠️", "pass, with metrics not sampled"),
        Verdict::MissingMetric => ("❌", "missing metrics"),
        Verdict::MissingGolden => ("⚠️", "missing golden values"),
        Verdict::Regression => ("❌", "regression"),
        Verdict::JobFailed => ("❌", "job failed"),
    };
    // A gate run with --strict or --fail-on-improvement fails on what reads as a pass above: say
    // what the check said.
    if let Some(gate) = c
        .gate
        .filter(|g| g.exit_code == 1 && worst < Verdict::MissingMetric)
    {
        icon = "❌";
        word = if gate.strict && c.counts.not_sampled > 0 {
            "metrics not sampled fail under --strict"
        } else if gate.strict && c.counts.unstable > 0 {
            "unstable metrics fail under --strict"
        } else {
            "improvements fail under --fail-on-improvement (bless the new values)"
        };
    }
    (icon, word)
}

/// Whether a metric or metric-less job belongs in the first section.
fn failing(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::Regression | Verdict::MissingMetric | Verdict::MissingGolden | Verdict::JobFailed
    )
}

/// `0.042 – 0.096 s`; a band whose lower edge is below zero for a quantity that cannot be
/// (a time, bytes, a count: `atol` larger than the golden) is `≤ 96.2 ms`, not `-12.2 – 96.2 ms`.
fn band(unit: goldgate_schema::Unit, lo: f64, hi: f64) -> String {
    let never_negative = !matches!(unit, goldgate_schema::Unit::Plain);
    if never_negative && lo <= 0.0 {
        return format!("≤ {}", units::value(unit, hi));
    }
    units::interval(unit, lo, hi)
}

fn metric_row(job: &JobComparison, m: &MetricResult) -> String {
    let mut verdict = format!("**{}**", m.verdict.label());
    if m.verdict != Verdict::Pass {
        verdict.push_str(&format!("<br>tolerance {}", escape_md(&m.tolerance)));
        if !m.detail.is_empty() {
            verdict.push_str(&format!("<br>{}", escape_md(&m.detail)));
        }
    } else if let Some(reason) = &m.pass_reason {
        // A pass that does not look like one (a +100 % change): the band and why.
        if let Some((lo, hi)) = m.band {
            verdict.push_str(&format!("<br>band {}", band(m.unit, lo, hi)));
        }
        verdict.push_str(&format!("<br>{}", escape_md(reason)));
    }
    row(job, m, &verdict)
}

/// A metric's row with `verdict` in its last cell.
pub(crate) fn row(job: &JobComparison, m: &MetricResult, verdict: &str) -> String {
    let [golden, now, delta, interval] = units::metric_cells(m);
    format!(
        "| {} | {} | {} | {golden} | {now} | {delta} | {interval} | {verdict} |\n",
        escape_md(&job.case),
        escape_md(&job.variant),
        escape_md(&m.metric),
    )
}

/// The row of a job that has nothing to compare (failed, or no golden).
fn job_row(job: &JobComparison, platform: &str) -> String {
    let mut verdict = format!("**{}**", job.verdict.label());
    match job.verdict {
        Verdict::JobFailed => {
            verdict.push_str(&format!("<br>{}", escape_md(&job.outcome)));
            if let Some(line) = &job.failure_line {
                let short: String = line.trim().chars().take(MAX_LINE).collect();
                verdict.push_str(&format!("<br>{}", escape_md(&short)));
            }
        }
        Verdict::MissingGolden => verdict.push_str(&format!(
            "<br>no golden file for {} (run `goldgate bless`)",
            escape_md(platform)
        )),
        _ => {}
    }
    format!(
        "| {} | {} | — | — | — | — | — | {verdict} |\n",
        escape_md(&job.case),
        escape_md(&job.variant)
    )
}

/// Rows of every job (metric-less jobs as one row) whose verdicts pass `keep`.
fn section(c: &Comparison, keep: impl Fn(Verdict) -> bool) -> (String, usize) {
    let mut rows = String::new();
    let mut n = 0;
    for job in &c.jobs {
        // A failed job gets its own row even if partial metrics came with it.
        if (job.metrics.is_empty() || job.verdict == Verdict::JobFailed) && keep(job.verdict) {
            rows.push_str(&job_row(job, &c.platform));
            n += 1;
        }
        for m in job.metrics.iter().filter(|m| keep(m.verdict)) {
            rows.push_str(&metric_row(job, m));
            n += 1;
        }
    }
    (rows, n)
}

/// A link target safe inside `(...)`: spaces, parentheses and angle brackets percent-encoded.
fn link_target(path: &str) -> String {
    path.replace('%', "%25")
        .replace(' ', "%20")
        .replace('(', "%28")
        .replace(')', "%29")
        .replace('<', "%3C")
        .replace('>', "%3E")
}

fn timelines(c: &Comparison) -> String {
    let links: Vec<String> = c
        .jobs
        .iter()
        .filter_map(|j| {
            let svg = j.svg.as_ref()?;
            Some(format!(
                "[{} @ {}]({})",
                escape_md(&j.case),
                escape_md(&j.variant),
                link_target(&svg.to_string_lossy())
            ))
        })
        .collect();
    if links.is_empty() {
        return String::new();
    }
    format!("\nMemory timelines: {}\n", links.join(" · "))
}

/// Each failed job's last log lines and the log's path, folded (records without lines, from
/// before goldgate kept them, get none).
fn failed_logs(c: &Comparison) -> String {
    let mut out = String::new();
    for job in c.jobs.iter().filter(|j| j.verdict == Verdict::JobFailed) {
        if job.log_tail.is_empty() {
            continue;
        }
        let log = job
            .log
            .as_ref()
            .map(|p| format!(": {}", escape_md(&p.display().to_string())))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n<details><summary>{} @ {} — last {} log line(s){log}</summary>\n\n",
            escape_md(&job.case),
            escape_md(&job.variant),
            job.log_tail.len()
        ));
        out.push_str(&pre_block(&job.log_tail));
        out.push_str("</details>\n");
    }
    out
}

/// Lines in an HTML `<pre>` block (CommonMark keeps it whole up to `</pre>`): `&`, `<`, `>`
/// as entities, `@` broken so a log cannot mention anyone, control characters dropped.
fn pre_block(lines: &[String]) -> String {
    let mut out = String::from("<pre>\n");
    for l in lines {
        for c in l.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '@' => out.push_str("@&#8203;"),
                c if c.is_control() => {}
                c => out.push(c),
            }
        }
        out.push('\n');
    }
    out.push_str("</pre>\n");
    out
}

/// The markdown report: headline with counts, then regressions and failures, improvements,
/// unstable metrics, and everything that passed folded in `<details>`; SVG links and warnings.
pub fn render(c: &Comparison) -> String {
    headline(c) + &body(c)
}

/// Everything below the headline.
pub(crate) fn body(c: &Comparison) -> String {
    let mut out = String::new();
    let sections: [(&str, &dyn Fn(Verdict) -> bool); 4] = [
        ("Regressions and failures", &failing),
        ("Improvements", &|v| v == Verdict::Improvement),
        ("Unstable", &|v| v == Verdict::Unstable),
        ("Not sampled", &|v| v == Verdict::NotSampled),
    ];
    for (title, keep) in sections {
        let (rows, n) = section(c, keep);
        if n > 0 {
            out.push_str(&format!("\n### {title} ({n})\n\n{HEADER}{rows}"));
        }
    }
    let (rows, n) = section(c, |v| v == Verdict::Pass);
    if n > 0 {
        let metrics = if n == 1 { "metric" } else { "metrics" };
        out.push_str(&format!(
            "\n<details><summary>{n} passing {metrics}</summary>\n\n{HEADER}{rows}\n</details>\n"
        ));
    }
    out.push_str(&crate::report::next_steps::render(c));
    out.push_str(&timelines(c));
    out.push_str(&failed_logs(c));
    if !c.warnings.is_empty() {
        out.push_str("\n**Warnings**\n\n");
        for w in &c.warnings {
            out.push_str(&format!("- {}\n", escape_md(w)));
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

    /// A +100 % checkpoint time that passed on `atol`: the band and the reason are shown.
    #[test]
    fn a_non_obvious_pass_shows_its_band_and_reason() {
        let mut c = fixtures::comparison();
        c.jobs.truncate(1);
        let m = &mut c.jobs[0].metrics[0];
        (m.golden, m.now, m.delta_pct, m.interval) = (Some(0.042), Some(0.084), Some(100.0), None);
        m.band = Some((-0.0122, 0.0962));
        m.pass_reason =
            Some("|Δ| 0.0420 s is beyond rtol 10% (0.0042 s) but within atol 0.0500 s".into());
        c.jobs[0].metrics.truncate(2);
        c.counts = goldgate_schema::Counts::of(&c.jobs);
        c.warnings.clear();
        insta::assert_snapshot!(render(&c));
    }

    #[test]
    fn the_headline_says_what_the_gate_said() {
        let mut c = fixtures::comparison();
        c.jobs.retain(|j| j.verdict <= Verdict::Unstable);
        c.counts = goldgate_schema::Counts::of(&c.jobs);
        let headline = |c: &Comparison| render(c).lines().next().unwrap_or("").to_owned();
        assert_eq!(headline(&c), "## ⚠️ goldgate: pass, with unstable metrics");
        let strict = c.clone().gated(true, false);
        assert_eq!(
            headline(&strict),
            "## ❌ goldgate: unstable metrics fail under --strict"
        );
        c.jobs.retain(|j| j.verdict <= Verdict::Improvement);
        c.counts = goldgate_schema::Counts::of(&c.jobs);
        let gated = c.clone().gated(false, false);
        assert_eq!(headline(&gated), "## ✅ goldgate: pass, with improvements");
        let foi = c.gated(false, true);
        assert_eq!(
            headline(&foi),
            "## ❌ goldgate: improvements fail under --fail-on-improvement (bless the new values)"
        );
    }

    #[test]
    fn regressions_come_before_improvements_and_passes_are_folded() {
        let md = render(&fixtures::comparison());
        let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} missing in {md}"));
        assert!(at("### Regressions and failures") < at("### Improvements"));
        assert!(at("### Improvements") < at("<details>"));
        assert!(!md.contains("<@team>"), "{md}");
    }

    #[test]
    fn a_failed_job_with_partial_metrics_still_shows_its_failure() {
        let mut c = fixtures::comparison();
        let metric = c.jobs[0].metrics[0].clone();
        c.jobs[5].metrics.push(metric);
        let md = render(&c);
        assert!(
            md.contains("| moe/mixtral\\_8x7b\\_tp4\\_ep8 | default | — |"),
            "{md}"
        );
        let table = crate::report::table::render(&c, Default::default());
        assert!(table.contains("job-failed: out of memory"), "{table}");
    }

    #[test]
    fn all_pass_has_a_pass_headline_and_no_failure_section() {
        let mut c = fixtures::comparison();
        c.jobs.truncate(1);
        c.counts = goldgate_schema::Counts::of(&c.jobs);
        let md = render(&c);
        assert!(md.starts_with("## ✅ goldgate: pass\n"), "{md}");
        assert!(!md.contains("### "), "{md}");
    }

    proptest::proptest! {
        /// Whatever a log line holds, the escaped text cannot end a table cell or row, open
        /// HTML, or mention anyone.
        #[test]
        fn escaped_text_stays_inside_its_cell(text in "\\PC*|[|<>@\\\\\n`*_\\[\\]a-z ]{0,40}") {
            let out = escape_md(&text);
            proptest::prop_assert!(!out.contains('\n') && !out.contains('<') && !out.contains('>'));
            let bytes = out.as_bytes();
            for (i, b) in bytes.iter().enumerate() {
                if *b == b'|' {
                    // Every pipe is preceded by an odd run of backslashes.
                    let run = bytes[..i].iter().rev().take_while(|c| **c == b'\\').count();
                    proptest::prop_assert!(run % 2 == 1, "{out}");
                }
            }
            proptest::prop_assert_eq!(out.matches('@').count(), out.matches("@&#8203;").count());
        }
    }

    #[test]
    fn escapes_what_github_would_interpret() {
        let cases = [
            ("gpt/gpt3_mcore", r"gpt/gpt3\_mcore"),
            ("a|b", r"a\|b"),
            ("<img src=x>", "&lt;img src=x&gt;"),
            ("`rm -rf`", r"\`rm -rf\`"),
            ("ping @org/team", "ping @&#8203;org/team"),
            ("[x](http://e)", r"\[x\](http://e)"),
            ("**bold** #12 ~~s~~", r"\*\*bold\*\* \#12 \~\~s\~\~"),
            ("a\\b & c", r"a\\b &amp; c"),
            ("line1\nline2\r", "line1 line2 "),
        ];
        for (input, want) in cases {
            assert_eq!(escape_md(input), want, "{input:?}");
        }
    }
}
