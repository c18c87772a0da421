//! Stage "report": `goldgate history show` — one metric of one case over the runs that
//! recorded it, a row per run (commit, branch, jobs, median, spread), change points and
//! annotations marked where they fall.

use tabled::settings::Style as TableStyle;

use crate::compare::Unit;
use crate::history::SeriesKey;
use crate::history::series::{Annotation, Point};
use crate::report::units::value;

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
