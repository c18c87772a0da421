//! Stage "report": the `goldgate power` report — for each metric, where the noise of unchanged
//! jobs comes from, and each rule's false alarms and smallest detected change side by side —
//! for the terminal and as markdown (the table the book's H200 write-up keeps). Pure functions.

use std::fmt::Write as _;

use super::units::value;
use crate::compare::noise::power::{MetricPower, POWER, Planted, PowerReport, RulePower};

/// The terminal report.
pub fn render_terminal(r: &PowerReport) -> String {
    let mut out = String::new();
    for m in &r.metrics {
        let _ = writeln!(out, "{}", heading(m));
        for line in noise_lines(m) {
            let _ = writeln!(out, "  {line}");
        }
        out.push_str(&indent(&rules_table(m, false)));
        for p in &m.planted {
            let _ = writeln!(out, "  {}", planted_heading(p));
            out.push_str(&indent(&indent(&planted_table(p, m, false))));
        }
        out.push('\n');
    }
    out.push_str(&footer(r, ""));
    out
}

/// The markdown report: per metric a heading, the noise lines and one table with every rule's
/// false alarms, detection at each planted size (synthetic, and real where planted jobs ran)
/// and the smallest change detected.
pub fn render_markdown(r: &PowerReport) -> String {
    let mut out = String::new();
    for m in &r.metrics {
        let _ = writeln!(out, "### {}\n", heading(m));
        for line in noise_lines(m) {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
        out.push_str(&rules_table(m, true));
        out.push('\n');
        for p in &m.planted {
            let _ = writeln!(out, "{}\n", planted_heading(p));
            out.push_str(&planted_table(p, m, true));
            out.push('\n');
        }
    }
    out.push_str(&footer(r, "- "));
    out
}

fn heading(m: &MetricPower) -> String {
    let (lo, hi) = m.noise.samples;
    let samples = if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}-{hi}")
    };
    format!(
        "{} ({}) · {} · {} unchanged jobs, {samples} samples each",
        m.case, m.variant, m.metric, m.noise.jobs
    )
}

fn pct(rel: f64) -> String {
    format!("{:.1}%", rel * 100.0)
}

fn signed_pct(rel: f64) -> String {
    format!("{:+.1}%", rel * 100.0)
}

fn noise_lines(m: &MetricPower) -> Vec<String> {
    let n = &m.noise;
    let opt = |v: Option<f64>| v.map_or_else(|| "—".to_string(), pct);
    let mut lines = vec![format!(
        "median {}; per-job values spread {}; variance components: between jobs {}, within a job {} per sample (intra-class correlation {})",
        value(m.unit, n.center),
        opt(n.job_spread),
        opt(n.between),
        opt(n.within),
        n.icc.map_or_else(|| "—".to_string(), |v| format!("{v:.2}")),
    )];
    if !n.outliers.is_empty() {
        let list: Vec<String> = n
            .outliers
            .iter()
            .map(|(i, d)| format!("job {} ({})", i + 1, signed_pct(*d)))
            .collect();
        lines.push(format!("outlier jobs: {}", list.join(", ")));
    }
    if !n.by_settle.is_empty() {
        let list: Vec<String> = n
            .by_settle
            .iter()
            .map(|(mode, jobs, sd)| format!("{mode}: {jobs} jobs, spread {}", opt(*sd)))
            .collect();
        lines.push(format!("by --settle: {}", list.join("; ")));
    }
    if !n.covariates.is_empty() {
        let list: Vec<String> = n
            .covariates
            .iter()
            .map(|(name, jobs, rho)| format!("{name} {rho:+.2} ({jobs} jobs)"))
            .collect();
        lines.push(format!(
            "rank correlation of per-job values with: {}",
            list.join(", ")
        ));
    }
    lines
}

fn alarms(row: &RulePower) -> String {
    format!(
        "{} of {} ({})",
        row.false_alarms,
        row.comparisons,
        pct(row.false_alarms as f64 / row.comparisons.max(1) as f64)
    )
}

fn smallest(row: &RulePower) -> String {
    match row.smallest {
        Some(s) => signed_pct(s),
        None if row.false_alarms as f64 > 0.01 * row.comparisons as f64 => {
            "— (false alarms > 1%)".into()
        }
        None => "> +300%".into(),
    }
}

/// Detection at one size: the synthetic rate, and the real planted jobs' count where a planted
/// set of that size was judged under the same rule and repeats.
fn detection_cell(row: &RulePower, size: f64, rate: f64, m: &MetricPower) -> String {
    let mut cell = pct(rate);
    let real = m
        .planted
        .iter()
        .filter(|p| (p.size - size).abs() < 1e-9)
        .flat_map(|p| p.rows.iter())
        .find(|r| r.0 == row.which && r.1 == row.repeats);
    if let Some((_, _, n, caught, _)) = real {
        let _ = write!(cell, "; real {caught}/{n}");
    }
    cell
}

fn rules_table(m: &MetricPower, markdown: bool) -> String {
    let sizes: Vec<f64> = m
        .rules
        .first()
        .map(|r| r.detection.iter().map(|d| d.0).collect())
        .unwrap_or_default();
    let mut header: Vec<String> = ["rule", "repeats", "golden jobs", "false alarms"]
        .map(str::to_owned)
        .to_vec();
    header.extend(sizes.iter().map(|s| format!("{} detected", signed_pct(*s))));
    header.push(format!("smallest detected ≥ {:.0}%", POWER * 100.0));
    let rows: Vec<Vec<String>> = m
        .rules
        .iter()
        .map(|row| {
            let mut cells = vec![
                row.tolerance.clone(),
                row.repeats.to_string(),
                row.golden_jobs.to_string(),
                alarms(row),
            ];
            cells.extend(
                row.detection
                    .iter()
                    .map(|(s, r)| detection_cell(row, *s, *r, m)),
            );
            cells.push(smallest(row));
            cells
        })
        .collect();
    table(&header, &rows, markdown)
}

fn planted_heading(p: &Planted) -> String {
    let measured = p.measured.map_or_else(
        || "no estimate".to_string(),
        |(c, lo, hi)| {
            format!(
                "measured {} (98% CI {} to {})",
                signed_pct(c),
                signed_pct(lo),
                signed_pct(hi)
            )
        },
    );
    format!(
        "planted {} ({} of the unchanged median), {} real jobs against every unchanged job: {measured}",
        p.label,
        signed_pct(p.size),
        p.jobs
    )
}

fn planted_table(p: &Planted, m: &MetricPower, markdown: bool) -> String {
    let header = [
        "rule",
        "repeats",
        "real jobs caught",
        "synthetic (same size)",
    ]
    .map(str::to_owned);
    let rows: Vec<Vec<String>> = p
        .rows
        .iter()
        .map(|(which, k, n, caught, synthetic)| {
            let tolerance = m
                .rules
                .iter()
                .find(|r| r.which == *which)
                .map_or(String::new(), |r| r.tolerance.clone());
            vec![
                tolerance,
                k.to_string(),
                format!("{caught} of {n}"),
                pct(*synthetic),
            ]
        })
        .collect();
    table(&header, &rows, markdown)
}

/// A plain table (columns padded, two spaces apart) or a markdown one.
fn table(header: &[String], rows: &[Vec<String>], markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for row in rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        return out;
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            std::iter::once(header)
                .chain(rows.iter().map(Vec::as_slice))
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The method line, warm-up jobs and notes; `bullet` starts each line (`- ` in markdown).
fn footer(r: &PowerReport, bullet: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{bullet}false alarms: regressions among comparisons of unchanged jobs (k of them as the run, the others as the golden); \
detected: the same comparisons with the change added to every sample of the run's jobs (synthetic), or real jobs with a planted slowdown; \
smallest: the first of +1, 2, 3, 5, 7.5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300 % detected in ≥ 95 % of comparisons, for a rule with ≤ 1 % false alarms"
    );
    for w in &r.warmups {
        let _ = writeln!(out, "{bullet}warm-up job (left out): {w}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "{bullet}note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::noise::components::Noise;
    use crate::compare::noise::power::Which;
    use goldgate_schema::Unit;

    fn report() -> PowerReport {
        let row = |which, k, alarms, n, det: [f64; 3], smallest| RulePower {
            which,
            tolerance: match which {
                Which::Megatron => "Megatron: 1 run, rtol 5%".into(),
                Which::Band => "band: rtol 55% + atol 0.05 s".into(),
                Which::TwoSample => "two-sample: min effect 2%, alpha 1%".into(),
            },
            repeats: k,
            golden_jobs: if which == Which::Megatron { 1 } else { 10 - k },
            comparisons: n,
            false_alarms: alarms,
            detection: vec![(0.05, det[0]), (0.10, det[1]), (0.20, det[2])],
            smallest,
        };
        let metric = MetricPower {
            case: "gpt/h200-ckpt-power".into(),
            variant: "default".into(),
            metric: "checkpoint-blocking-time".into(),
            unit: Unit::Seconds,
            noise: Noise {
                jobs: 10,
                samples: (10, 10),
                center: 2.16,
                job_spread: Some(0.081),
                between: Some(0.079),
                within: Some(0.112),
                icc: Some(0.33),
                outliers: vec![(0, 0.41)],
                by_settle: vec![
                    ("drop-caches".into(), 5, Some(0.031)),
                    ("none".into(), 5, Some(0.099)),
                ],
                covariates: vec![("dirty pages at start", 10, 0.71)],
            },
            rules: vec![
                row(Which::Megatron, 1, 38, 90, [0.52, 0.6, 0.8], None),
                row(Which::Band, 3, 0, 120, [0.0, 0.0, 0.0], Some(0.75)),
                row(Which::TwoSample, 3, 1, 120, [0.05, 0.15, 0.7], Some(0.3)),
            ],
            planted: vec![Planted {
                label: "+10%".into(),
                size: 0.10,
                jobs: 3,
                measured: Some((0.094, 0.031, 0.16)),
                rows: vec![
                    (Which::Megatron, 1, 30, 19, 0.6),
                    (Which::Band, 3, 1, 0, 0.0),
                    (Which::TwoSample, 3, 1, 0, 0.15),
                ],
            }],
        };
        PowerReport {
            metrics: vec![metric],
            warmups: vec!["gpt/h200-ckpt-power@default#1 `checkpoint-blocking-time`: +41.2% against the unchanged jobs' median".into()],
            notes: vec!["gpt/h200-ckpt-power@default#7 (r/7/results.json): failed (exit 1); left out".into()],
        }
    }

    #[test]
    fn terminal_snapshot() {
        insta::assert_snapshot!(render_terminal(&report()));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(render_markdown(&report()));
    }
}
