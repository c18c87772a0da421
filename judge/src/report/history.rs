//! Stage "report": what the `goldgate history` commands print — `show`'s table of one metric
//! of one case over the runs that recorded it (a row per run: commit, branch, jobs, median,
//! spread; change points and annotations marked where they fall), and what `prune` removed.

use tabled::settings::Style as TableStyle;

use crate::history::prune::PrunePlan;
use crate::history::series::{Annotation, Point};
use crate::history::{SeriesKey, SeriesName};
use crate::report::units::value;
use goldgate_schema::Unit;

/// The table of `points` (oldest first); `changes` are the indices where a change point
/// starts a new segment.
pub fn series_table(
    key: &SeriesKey,
    points: &[Point],
    changes: &[usize],
    annotations: &[Annotation],
) -> String {
    let unit = Unit::of_metric(&key.metric);
    let mut builder = tabled::builder::Builder::default();
    builder.push_record([
        "#", "commit", "branch", "run", "jobs", "median", "min", "max", "mark",
    ]);
    for (i, p) in points.iter().enumerate() {
        let values = p.values();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        builder.push_record([
            i.to_string(),
            short(&p.commit),
            p.branch.clone(),
            p.run_id.clone(),
            values.len().to_string(),
            value(unit, p.median()),
            value(unit, lo),
            value(unit, hi),
            marks(i, p, changes, annotations, &key.metric),
        ]);
    }
    let mut table = builder.build();
    table.with(TableStyle::sharp());
    let branch = key.branch.as_deref().unwrap_or("every branch");
    format!(
        "{} @ {} on {}: {} ({branch}, {} runs)\n{table}\n",
        key.case,
        key.variant,
        key.platform,
        key.metric,
        points.len(),
    )
}

fn marks(i: usize, p: &Point, changes: &[usize], notes: &[Annotation], metric: &str) -> String {
    let mut out = Vec::new();
    if changes.contains(&i) {
        out.push("change point".to_owned());
    }
    for a in notes
        .iter()
        .filter(|a| a.covers(metric) && a.commit == p.commit)
    {
        out.push(format!("baseline: {}", a.note));
    }
    out.join("; ")
}

/// The first 12 characters of a commit.
pub fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}

/// What `history prune` removed (or, with `--dry-run`, would remove): one line per run,
/// oldest first, and the runs it kept because their stored start is not a time.
pub fn prune_text(plan: &PrunePlan, dry_run: bool, store: &str) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut out = format!("{verb} {} runs from {store}", plan.remove.len());
    if dry_run {
        out.push_str(" (dry run: nothing removed)");
    }
    out.push('\n');
    for run in &plan.remove {
        out.push_str(&format!("  {}  started {}\n", run.run_id, run.started_at));
    }
    if !plan.unreadable.is_empty() {
        out.push_str(&format!(
            "kept {} runs whose stored start is not a time:\n",
            plan.unreadable.len()
        ));
        for run in &plan.unreadable {
            out.push_str(&format!("  {}  started {:?}\n", run.run_id, run.started_at));
        }
    }
    out
}

/// What `history show` prints without a series to show: every case, variant and platform the
/// store holds (its metrics and runs), or with `case`, that case's metrics.
pub fn stored_table(series: &[(SeriesName, i64)], case: Option<&str>) -> String {
    let mut builder = tabled::builder::Builder::default();
    let shown: usize;
    if let Some(case) = case {
        builder.push_record(["variant", "platform", "metric", "runs"]);
        let rows: Vec<_> = series.iter().filter(|(s, _)| s.0 == case).collect();
        shown = rows.len();
        for ((_, variant, platform, metric), runs) in rows {
            builder.push_record([
                variant.clone(),
                platform.clone(),
                metric.clone(),
                runs.to_string(),
            ]);
        }
        let mut table = builder.build();
        table.with(TableStyle::sharp());
        return format!(
            "{case}: {shown} series\n{table}\nshow one: goldgate history show --case {case} \
             [--variant V] --metric METRIC\n"
        );
    }
    builder.push_record(["case", "variant", "platform", "metrics", "runs"]);
    let mut groups: Vec<(&str, &str, &str, usize, i64)> = Vec::new();
    for ((c, v, p, _), runs) in series {
        match groups.last_mut() {
            Some(g) if (g.0, g.1, g.2) == (c.as_str(), v.as_str(), p.as_str()) => {
                g.3 += 1;
                g.4 = g.4.max(*runs);
            }
            _ => groups.push((c, v, p, 1, *runs)),
        }
    }
    shown = groups.len();
    for (c, v, p, metrics, runs) in &groups {
        builder.push_record([
            (*c).to_owned(),
            (*v).to_owned(),
            (*p).to_owned(),
            metrics.to_string(),
            runs.to_string(),
        ]);
    }
    let mut table = builder.build();
    table.with(TableStyle::sharp());
    format!(
        "the history store holds {shown} series groups (a case @ a variant on a platform)\n{table}\n\
         list a case's metrics: goldgate history show --case CASE\n"
    )
}

/// A change point as `history changes` prints it: its index, the run id and commit it starts
/// at when the series came from the store, and its relative change.
pub type ChangeAt = (usize, Option<(String, String)>, f64);

/// One series' change points as `history changes` prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangesRow {
    /// `<case> @ <variant> on <platform>: <metric>`, or the name in the input file.
    pub series: String,
    pub points: usize,
    pub changes: Vec<ChangeAt>,
    pub weak: Vec<usize>,
}

/// `history changes`' table: a row per series, its change points where they start.
pub fn changes_table(rows: &[ChangesRow]) -> String {
    let mut builder = tabled::builder::Builder::default();
    builder.push_record(["series", "points", "change points", "weak"]);
    for r in rows {
        let changes = if r.changes.is_empty() {
            "none".to_owned()
        } else {
            r.changes
                .iter()
                .map(|(i, at, change)| match at {
                    Some((run, commit)) => {
                        format!("#{i} {run} ({}) {:+.1} %", short(commit), change * 100.0)
                    }
                    None => format!("#{i} {:+.1} %", change * 100.0),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let weak = r
            .weak
            .iter()
            .map(|i| format!("#{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        builder.push_record([r.series.clone(), r.points.to_string(), changes, weak]);
    }
    let mut table = builder.build();
    table.with(TableStyle::sharp());
    format!("{table}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: usize, v: &[f64]) -> Point {
        Point {
            run_id: format!("2026-12-0{i}T00-00-00Z"),
            commit: format!("{i}abc{i:0>36}"),
            branch: "main".into(),
            started_at: format!("2026-12-0{i}T00:00:00Z"),
            jobs: v
                .iter()
                .enumerate()
                .map(|(j, x)| (format!("m/c@default#{}", j + 1), *x, String::new()))
                .collect(),
        }
    }

    #[test]
    fn a_series_table_marks_change_points_and_baselines() {
        let key = SeriesKey {
            case: "gpt/small".into(),
            variant: "default".into(),
            platform: "h200".into(),
            metric: "checkpoint-blocking-time".into(),
            branch: Some("main".into()),
        };
        let points = vec![
            point(1, &[1.0, 1.1, 0.9]),
            point(2, &[1.02, 1.0]),
            point(3, &[1.5, 1.6, 1.55]),
            point(4, &[1.52]),
        ];
        let note = Annotation {
            case: "gpt/small".into(),
            metric: "*".into(),
            commit: points[3].commit.clone(),
            note: "async saves off".into(),
            created_at: "2026-12-05T00:00:00Z".into(),
        };
        insta::assert_snapshot!(series_table(&key, &points, &[2], &[note]));
    }
}

/// One regressed metric against main's recent history.
#[derive(Clone, Debug, PartialEq)]
pub struct Trend {
    /// `<case> @ <variant>: <metric>`.
    pub label: String,
    pub unit: Unit,
    /// Main's runs looked at (0: none stored).
    pub runs: usize,
    /// The smallest and largest job value of those runs, and their median.
    pub lo: f64,
    pub hi: f64,
    pub median: f64,
    /// The latest change point among them: run id, commit, relative change.
    pub latest_change: Option<(String, String, f64)>,
    /// This run's value (the comparison's `now`).
    pub now: Option<f64>,
}

/// The `Trend on main` section of the markdown report and the PR comment: one line per
/// regressed metric; empty when there is none.
pub fn trend_section(trends: &[Trend]) -> String {
    use crate::report::markdown::escape_md;
    if trends.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n### Trend on main (history store)\n\n");
    for t in trends {
        // A code span shows the label as it is; a backtick in it would end the span.
        let label = t.label.replace('`', "'");
        if t.runs == 0 {
            out.push_str(&format!(
                "- `{label}`: no passed main run of it in the history store\n"
            ));
            continue;
        }
        let change = match &t.latest_change {
            Some((run, commit, rel)) => format!(
                "latest change point at {} (`{}`, {:+.1} %)",
                escape_md(run),
                short(commit),
                rel * 100.0
            ),
            None => "no change point".to_owned(),
        };
        let verdict = match t.now {
            Some(v) if v < t.lo || v > t.hi => {
                format!(
                    "this run's {} is **outside** main's recent spread",
                    value(t.unit, v)
                )
            }
            Some(v) => format!(
                "this run's {} is within main's recent spread",
                value(t.unit, v)
            ),
            None => "this run has no value".to_owned(),
        };
        out.push_str(&format!(
            "- `{label}`: main's last {} runs {}–{} (median {}); {change}; {verdict}\n",
            t.runs,
            value(t.unit, t.lo),
            value(t.unit, t.hi),
            value(t.unit, t.median),
        ));
    }
    out
}

#[cfg(test)]
mod trend_tests {
    use super::*;

    #[test]
    fn a_trend_line_says_the_spread_the_change_point_and_where_this_run_falls() {
        let trends = [
            Trend {
                label: "gpt/small @ default: checkpoint-blocking-time".into(),
                unit: Unit::Seconds,
                runs: 20,
                lo: 1.0,
                hi: 1.1,
                median: 1.05,
                latest_change: Some((
                    "2026-11-20T08-00-00Z".into(),
                    "abcdef0123456789".into(),
                    0.12,
                )),
                now: Some(1.35),
            },
            Trend {
                label: "gpt/small @ default: gpu-peak-memory-bytes".into(),
                unit: Unit::Bytes,
                runs: 5,
                lo: 1e9,
                hi: 1.2e9,
                median: 1.1e9,
                latest_change: None,
                now: Some(1.1e9),
            },
            Trend {
                label: "gpt/new @ default: lm loss".into(),
                unit: Unit::Plain,
                runs: 0,
                lo: 0.0,
                hi: 0.0,
                median: 0.0,
                latest_change: None,
                now: Some(2.0),
            },
        ];
        insta::assert_snapshot!(trend_section(&trends));
        assert_eq!(trend_section(&[]), "");
    }
}
