//! Stage "compare": which recorded runs a comparison (or a bless) takes from a results folder.
//!
//! `goldgate run` writes every run to `OUT/<run-id>/`, so `results/` soon holds many. Judging all
//! of them together would count yesterday's runs as repeats of today's and turn a regression into
//! "unstable" (or bless an average of both), so the newest run is taken unless the user names runs
//! (`--run ID`, repeatable) or asks for all of them (`--all-runs`), as `cargo nextest` reruns only
//! the last run's failures.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::error::CompareError;
use crate::metrics::RunRecord;

/// Which runs of a results folder to judge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RunSelection {
    /// The run that started last (the default).
    #[default]
    Newest,
    /// Every run, merged: repeats of the same job from different runs are judged together.
    All,
    /// The runs with these ids, merged.
    Ids(Vec<String>),
}

impl RunSelection {
    /// `--run ID...` wins, then `--all-runs`, else the newest run.
    pub fn from_flags(ids: &[String], all_runs: bool) -> RunSelection {
        if !ids.is_empty() {
            RunSelection::Ids(ids.to_vec())
        } else if all_runs {
            RunSelection::All
        } else {
            RunSelection::Newest
        }
    }
}

/// `(results.json path, record)` pairs, as `load_results` gives them.
pub type Records = Vec<(PathBuf, RunRecord)>;

/// The records of the selected runs, and a line saying what was left out (none when the folder
/// held only the runs taken).
pub fn select_runs(
    records: Records,
    selection: &RunSelection,
) -> Result<(Records, Option<String>), CompareError> {
    let starts = run_starts(&records);
    let keep: Vec<String> = match selection {
        RunSelection::All => return Ok((records, None)),
        RunSelection::Newest => starts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| a.0.cmp(b.0)))
            .map(|(id, _)| vec![(*id).to_owned()])
            .unwrap_or_default(),
        RunSelection::Ids(ids) => {
            if let Some(unknown) = ids.iter().find(|id| !starts.contains_key(id.as_str())) {
                return Err(CompareError::UnknownRun {
                    run: unknown.clone(),
                    available: starts.keys().copied().collect::<Vec<_>>().join(", "),
                });
            }
            ids.clone()
        }
    };
    let note = (keep.len() < starts.len()).then(|| note(&keep, starts.len(), selection));
    let records = records
        .into_iter()
        .filter(|(_, r)| keep.contains(&r.run_id))
        .collect();
    Ok((records, note))
}

fn note(keep: &[String], total: usize, selection: &RunSelection) -> String {
    let others = total - keep.len();
    let runs = if others == 1 { "run" } else { "runs" };
    match selection {
        RunSelection::Newest => format!(
            "judging run {}, the newest of {total} in this folder ({others} older {runs} left out; \
             --all-runs merges them, --run ID picks others)",
            keep.join(", ")
        ),
        _ => format!(
            "judging run {} ({others} other {runs} in this folder left out)",
            keep.join(", ")
        ),
    }
}

/// Each run id with the time its first job started (a timestamp that does not parse sorts first).
fn run_starts(records: &[(PathBuf, RunRecord)]) -> BTreeMap<&str, Option<jiff::Timestamp>> {
    let mut starts: BTreeMap<&str, Option<jiff::Timestamp>> = BTreeMap::new();
    for (_, r) in records {
        let entry = starts.entry(r.run_id.as_str()).or_insert(None);
        if let Ok(at) = r.started_at.parse::<jiff::Timestamp>()
            && entry.is_none_or(|earliest| at < earliest)
        {
            *entry = Some(at);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures;

    fn record(run: &str, started: &str, repeat: u32) -> (PathBuf, RunRecord) {
        let (_, mut r) = fixtures::record("demo/ckpt", repeat, &[("lm loss", &[(1, 2.0)])]);
        r.run_id = run.into();
        r.started_at = started.into();
        (PathBuf::from(format!("{run}/results.json")), r)
    }

    fn runs(records: &[(PathBuf, RunRecord)]) -> Vec<(String, u32)> {
        records
            .iter()
            .map(|(_, r)| (r.run_id.clone(), r.repeat))
            .collect()
    }

    fn folder() -> Vec<(PathBuf, RunRecord)> {
        vec![
            // The older run's id sorts last: the start time decides, not the name.
            record("z-old", "2026-11-30T06:00:00Z", 1),
            record("z-old", "2026-11-30T06:00:05Z", 2),
            record("a-new", "2026-11-30T07:00:00.5Z", 1),
            record("mid", "2026-11-30T06:30:00Z", 1),
        ]
    }

    #[test]
    fn the_newest_run_is_judged_and_the_rest_are_named() {
        let (kept, note) = select_runs(folder(), &RunSelection::Newest).unwrap();
        assert_eq!(runs(&kept), [("a-new".to_owned(), 1)]);
        assert_eq!(
            note.unwrap(),
            "judging run a-new, the newest of 3 in this folder (2 older runs left out; \
             --all-runs merges them, --run ID picks others)"
        );
    }

    #[test]
    fn all_runs_and_named_runs_merge() {
        let (all, note) = select_runs(folder(), &RunSelection::All).unwrap();
        assert_eq!((all.len(), note), (4, None));
        let ids = RunSelection::from_flags(&["z-old".into(), "mid".into()], true);
        let (some, note) = select_runs(folder(), &ids).unwrap();
        assert_eq!(
            runs(&some),
            [
                ("z-old".to_owned(), 1),
                ("z-old".to_owned(), 2),
                ("mid".to_owned(), 1)
            ]
        );
        assert_eq!(
            note.unwrap(),
            "judging run z-old, mid (1 other run in this folder left out)"
        );
    }

    #[test]
    fn one_run_needs_no_note_and_an_unknown_id_lists_the_runs() {
        let one = vec![record("r1", "2026-11-30T06:00:00Z", 1)];
        let (kept, note) = select_runs(one, &RunSelection::Newest).unwrap();
        assert_eq!((kept.len(), note), (1, None));
        let err = select_runs(folder(), &RunSelection::Ids(vec!["nope".into()])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no run `nope` in the results folder (runs: a-new, mid, z-old)"
        );
    }
}
