//! Stage "history": a series — one metric of one case, variant and platform over the runs
//! that recorded it, oldest first — as the store gives it back to `show`, the change-point
//! search, `bless --from-history` and the site.

use super::ingest::median;

/// Which series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesKey {
    pub case: String,
    pub variant: String,
    pub platform: String,
    pub metric: String,
    /// Only runs of this branch; `None` takes every branch.
    pub branch: Option<String>,
}

/// One run's passed jobs in a series.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub run_id: String,
    pub commit: String,
    pub branch: String,
    pub started_at: String,
    /// `(job id, summary value, results.json path)` of each passed job, in job order.
    pub jobs: Vec<(String, f64, String)>,
}

impl Point {
    /// The median of the run's job values (every point has at least one job).
    pub fn median(&self) -> f64 {
        let values: Vec<f64> = self.jobs.iter().map(|j| j.1).collect();
        median(&values).unwrap_or(f64::NAN)
    }

    /// The job values.
    pub fn values(&self) -> Vec<f64> {
        self.jobs.iter().map(|j| j.1).collect()
    }
}

/// An intended change: from `commit` on, the series has a new baseline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub case: String,
    /// The metric, or `*` for every metric of the case.
    pub metric: String,
    pub commit: String,
    pub note: String,
    pub created_at: String,
}

impl Annotation {
    /// Whether it applies to `metric`.
    pub fn covers(&self, metric: &str) -> bool {
        self.metric == "*" || self.metric == metric
    }
}

/// The points after the latest annotation that covers `metric` (the baseline it set), or all
/// of them when none does.
pub fn since_baseline<'a>(
    points: &'a [Point],
    annotations: &[Annotation],
    metric: &str,
) -> &'a [Point] {
    let start = points
        .iter()
        .rposition(|p| {
            annotations
                .iter()
                .any(|a| a.covers(metric) && a.commit == p.commit)
        })
        .unwrap_or(0);
    &points[start..]
}

/// The names of `names` close to `name` — a different case, a typo (edit distance up to a
/// third of its length, at least 2), or one containing the other — closest first: the
/// `did you mean` of a metric or case that names nothing stored.
pub fn near<'a>(name: &str, names: &'a [String]) -> Vec<&'a str> {
    let wanted = name.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .filter_map(|n| {
            let lower = n.to_lowercase();
            let d = edit_distance(&wanted, &lower);
            let contains =
                !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower));
            (d <= limit || contains).then_some((d, n.as_str()))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().map(|(_, n)| n).take(3).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(commit: &str, v: &[f64]) -> Point {
        Point {
            run_id: format!("r-{commit}"),
            commit: commit.into(),
            branch: "main".into(),
            started_at: String::new(),
            jobs: v
                .iter()
                .map(|x| ("j".to_owned(), *x, String::new()))
                .collect(),
        }
    }

    #[test]
    fn an_annotation_starts_a_new_baseline_at_its_commit() {
        let points = vec![
            point("a", &[1.0]),
            point("b", &[2.0, 4.0]),
            point("c", &[3.0]),
        ];
        let note = Annotation {
            case: "m/c".into(),
            metric: "*".into(),
            commit: "b".into(),
            note: "bigger model".into(),
            created_at: String::new(),
        };
        assert_eq!(
            since_baseline(&points, std::slice::from_ref(&note), "lm loss").len(),
            2
        );
        assert_eq!(since_baseline(&points, &[], "lm loss").len(), 3);
        assert_eq!(points[1].median(), 3.0);
    }

    #[test]
    fn a_misspelt_name_finds_the_names_near_it() {
        let names: Vec<String> = [
            "checkpoint-blocking-time",
            "checkpoint-written-bytes",
            "lm loss",
            "iteration-time",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            near("chekpoint-blocking-time", &names),
            ["checkpoint-blocking-time"]
        );
        assert_eq!(near("LM LOSS", &names), ["lm loss"]);
        assert_eq!(near("iteration", &names), ["iteration-time"]);
        assert!(near("throughput", &names).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
