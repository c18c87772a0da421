//! Stage "compare": which recorded runs a command takes from a results folder — the one rule
//! `compare`, `bless`, `report`, `comment` and `calibrate` share.
//!
//! `goldgate run` writes every run to `OUT/<run-id>/`, so `results/` soon holds many. Judging all
//! of them together would count yesterday's runs as repeats of today's and turn a regression into
//! "unstable" (or bless an average of both), so the newest run is taken unless the user names runs
//! (`--run ID`, repeatable) or asks for all of them (`--all-runs`), as `cargo nextest` reruns only
//! the last run's failures. The newest run must be complete: a newer run that was killed is an
//! error (exit 3), never a reason to fall back to an older run the user did not name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::error::CompareError;
use goldgate_core::records::{self, RecordError};
use goldgate_schema::{RunIndex, RunRecord};

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

/// Loads a results folder — every `results.json` and every run's `run.json` — and keeps the
/// selected runs. A selected run whose `run.json` lists a job without an outcome or without
/// its `results.json` is an error (exit 3): goldgate was killed or the disk filled up, and an
/// incomplete run never passes the gate.
pub fn load_runs(
    dir: &Path,
    selection: &RunSelection,
) -> Result<(Records, Option<String>), CompareError> {
    let indexes = records::load_indexes(dir)?;
    let records = match records::load_results(dir) {
        Ok(records) => records,
        // A run killed before its first job ended has an index and no results.
        Err(RecordError::Empty { .. }) if !indexes.is_empty() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let (records, kept, carried, note) = select(records, &indexes, selection)?;
    for (path, index) in indexes.iter().filter(|(_, i)| kept.contains(&i.run_id)) {
        check_complete(path, index, &records, None).map_err(|e| name_fallback(e, dir, &indexes))?;
        check_agree(path, index, &records)?;
    }
    for (run, pairs) in &carried {
        for (path, index) in indexes.iter().filter(|(_, i)| i.run_id == *run) {
            check_complete(path, index, &records, Some(pairs))?;
            check_agree(path, index, &records)?;
        }
    }
    Ok((records, note))
}

/// `(case, variant)` of a job id `case@variant#repeat`.
fn pair_of(job_id: &str) -> Option<(String, String)> {
    let (job, _repeat) = job_id.rsplit_once('#')?;
    let (case, variant) = job.split_once('@')?;
    Some((case.to_owned(), variant.to_owned()))
}

/// The jobs a kept rerun (`run --rerun-failed`, its index's `rerun_of`) takes from the run it
/// reran, and from that run's own original: every `(case, variant)` no newer run of the chain
/// holds. So the rerun of an interrupted run is judged as the whole matrix, never as the few
/// jobs it ran again.
fn carried(
    keep: &[String],
    indexes: &[(PathBuf, RunIndex)],
    records: &Records,
) -> Vec<(String, BTreeSet<(String, String)>)> {
    let index_of = |id: &str| indexes.iter().find(|(_, i)| i.run_id == id).map(|(_, i)| i);
    let mut covered: BTreeSet<(String, String)> = (records.iter())
        .filter(|(_, r)| keep.contains(&r.run_id))
        .map(|(_, r)| (r.case.clone(), r.variant.name.clone()))
        .collect();
    let mut out: Vec<(String, BTreeSet<(String, String)>)> = Vec::new();
    for id in keep {
        let mut next = index_of(id).and_then(|i| i.rerun_of.clone());
        while let Some(orig) = next {
            let taken = keep.contains(&orig) || out.iter().any(|(o, _)| *o == orig);
            let Some(index) = index_of(&orig).filter(|_| !taken) else {
                break;
            };
            let pairs: BTreeSet<(String, String)> = (index.jobs.iter())
                .filter_map(|j| pair_of(&j.job_id))
                .filter(|p| !covered.contains(p))
                .collect();
            covered.extend(pairs.iter().cloned());
            next = index.rerun_of.clone();
            out.push((orig, pairs));
        }
    }
    out
}

/// An incomplete run's error names the newest complete run of the folder, for `--run`: the
/// selection never falls back to it by itself (a killed newer run must not let an older one
/// pass the gate), but the user may. The folder is read again: this is the failure path only.
fn name_fallback(e: CompareError, dir: &Path, indexes: &[(PathBuf, RunIndex)]) -> CompareError {
    let CompareError::Incomplete {
        run,
        index,
        missing,
        total,
        list,
        instead,
    } = e
    else {
        return e;
    };
    let records = records::load_results(dir).unwrap_or_default();
    let mut runs: Vec<(&str, Option<jiff::Timestamp>)> = run_starts(&records, indexes)
        .into_iter()
        .filter(|(id, _)| *id != run)
        .collect();
    runs.sort_by_key(|(id, start)| std::cmp::Reverse(newness(id, *start)));
    let complete = |id: &str| {
        indexes
            .iter()
            .filter(|(_, i)| i.run_id == id)
            .all(|(path, i)| check_complete(path, i, &records, None).is_ok())
    };
    let instead = runs
        .iter()
        .find(|(id, _)| complete(id))
        .map_or(instead, |(id, _)| {
            format!("read the newest complete run of the folder with --run {id}")
        });
    CompareError::Incomplete {
        run,
        index,
        missing,
        total,
        list,
        instead,
    }
}

/// The records of the selected runs, and a note saying which runs were taken and what was left
/// out (none when the folder held only the runs taken). The note starts with `run …`, for the
/// caller's verb: `judging run …`, `showing run …`.
pub fn select_runs(
    records: Records,
    selection: &RunSelection,
) -> Result<(Records, Option<String>), CompareError> {
    select(records, &[], selection).map(|(records, _, _, note)| (records, note))
}

/// What [`select`] keeps: the records, the run ids kept, the runs reruns take jobs from
/// ([`carried`]), and the note.
type Selected = (
    Records,
    Vec<String>,
    Vec<(String, BTreeSet<(String, String)>)>,
    Option<String>,
);

/// [`select_runs`] over the runs of both the records and the indexes; also returns the ids kept.
fn select(
    records: Records,
    indexes: &[(PathBuf, RunIndex)],
    selection: &RunSelection,
) -> Result<Selected, CompareError> {
    let starts = run_starts(&records, indexes);
    let ab = ab_runs(&records, indexes);
    let ordinary = ordinary_runs(&starts, &ab, selection)?;
    let keep: Vec<String> = match selection {
        RunSelection::All => ordinary.keys().map(|id| (*id).to_owned()).collect(),
        RunSelection::Newest => ordinary
            .iter()
            .max_by_key(|(id, start)| newness(id, **start))
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
    let keep = without_reran(keep, indexes);
    let left_ab = ab
        .iter()
        .filter(|id| !keep.iter().any(|k| k == *id))
        .count();
    let carried = carried(&keep, indexes, &records);
    // The runs a rerun completes are taken too, not left out.
    let total = starts.len() - carried.len();
    let mut note = (keep.len() < total).then(|| note(&keep, total, left_ab, selection));
    let from_carried = |r: &RunRecord| {
        let pair = (r.case.clone(), r.variant.name.clone());
        (carried.iter()).any(|(run, pairs)| *run == r.run_id && pairs.contains(&pair))
    };
    let records: Records = records
        .into_iter()
        .filter(|(_, r)| keep.contains(&r.run_id) || from_carried(r))
        .collect();
    for (run, pairs) in &carried {
        let with = format!(
            "with the {} case/variant pair(s) of run {run} it did not rerun (`--rerun-failed`)",
            pairs.len()
        );
        note = Some(match note {
            Some(n) => format!("{n}, {with}"),
            None => format!("run {}, {with}", keep.join(", ")),
        });
    }
    Ok((records, keep, carried, note))
}

/// The kept runs less those a kept rerun reran (`run --rerun-failed`, its index's
/// `rerun_of`): such a run is taken through its rerun ([`carried`]), so `--all-runs` (or
/// `--run` naming both) judges its failed or interrupted jobs by their rerun, never as failed
/// repeats beside it.
fn without_reran(keep: Vec<String>, indexes: &[(PathBuf, RunIndex)]) -> Vec<String> {
    let reran: BTreeSet<&str> = (indexes.iter())
        .filter(|(_, i)| keep.contains(&i.run_id))
        .filter_map(|(_, i)| i.rerun_of.as_deref())
        .collect();
    keep.iter()
        .filter(|id| !reran.contains(id.as_str()))
        .cloned()
        .collect()
}

/// The runs of `starts` that are no A/B's jobs: an A/B's jobs are arms of a comparison, not
/// runs, and only a `--run ID` that names one takes it. A folder of A/B jobs alone is refused
/// unless runs are named.
fn ordinary_runs<'a>(
    starts: &BTreeMap<&'a str, Option<jiff::Timestamp>>,
    ab: &BTreeSet<&str>,
    selection: &RunSelection,
) -> Result<BTreeMap<&'a str, Option<jiff::Timestamp>>, CompareError> {
    let ordinary: BTreeMap<&str, Option<jiff::Timestamp>> = starts
        .iter()
        .filter(|(id, _)| !ab.contains(*id))
        .map(|(id, start)| (*id, *start))
        .collect();
    if ordinary.is_empty() && !ab.is_empty() && !matches!(selection, RunSelection::Ids(_)) {
        return Err(CompareError::OnlyAbJobs {
            count: ab.len(),
            example: ab
                .iter()
                .next()
                .map(|id| (*id).to_owned())
                .unwrap_or_default(),
        });
    }
    Ok(ordinary)
}

/// The runs that are jobs of a `goldgate ab` sequence, by their records or their index.
fn ab_runs<'a>(records: &'a Records, indexes: &'a [(PathBuf, RunIndex)]) -> BTreeSet<&'a str> {
    let from_records = records
        .iter()
        .filter(|(_, r)| r.is_ab())
        .map(|(_, r)| r.run_id.as_str());
    let from_indexes = indexes
        .iter()
        .filter(|(_, i)| i.ab.is_some())
        .map(|(_, i)| i.run_id.as_str());
    from_records.chain(from_indexes).collect()
}

/// Jobs of `index` (those of `only`'s pairs, when given) are complete when each has an outcome
/// and a loaded record.
fn check_complete(
    path: &Path,
    index: &RunIndex,
    records: &Records,
    only: Option<&BTreeSet<(String, String)>>,
) -> Result<(), CompareError> {
    const LISTED: usize = 20;
    let recorded = |job: &str| {
        records
            .iter()
            .any(|(_, r)| r.run_id == index.run_id && r.job_id == job)
    };
    let wanted =
        |job: &str| only.is_none_or(|pairs| pair_of(job).is_some_and(|p| pairs.contains(&p)));
    let missing: Vec<String> = index
        .jobs
        .iter()
        .filter(|j| wanted(&j.job_id))
        .filter_map(|j| match (&j.outcome, recorded(&j.job_id)) {
            (None, _) => Some(format!("  {}: no outcome (it never finished)", j.job_id)),
            (Some(_), false) => Some(format!(
                "  {}: no results.json in {}",
                j.job_id,
                j.dir.display()
            )),
            (Some(_), true) => None,
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut list = missing[..missing.len().min(LISTED)].join("\n");
    if missing.len() > LISTED {
        list.push_str(&format!("\n  ... and {} more", missing.len() - LISTED));
    }
    Err(CompareError::Incomplete {
        run: index.run_id.clone(),
        index: path.to_path_buf(),
        missing: missing.len(),
        total: index.jobs.len(),
        list,
        instead: "pick another run with --run ID".to_owned(),
    })
}

/// Each job's outcome is its `results.json`'s; the run's `run.json` must say the same, or the
/// run is refused (exit 3) naming both files.
fn check_agree(path: &Path, index: &RunIndex, records: &Records) -> Result<(), CompareError> {
    let differ: Vec<String> = index
        .jobs
        .iter()
        .filter_map(|j| {
            let said = j.outcome.as_ref()?;
            let (file, r) = records
                .iter()
                .find(|(_, r)| r.run_id == index.run_id && r.job_id == j.job_id)?;
            (*said != r.outcome).then(|| {
                format!(
                    "  {}: run.json says {}, {} says {}",
                    j.job_id,
                    said.label(),
                    file.display(),
                    r.outcome.label()
                )
            })
        })
        .collect();
    if differ.is_empty() {
        return Ok(());
    }
    Err(CompareError::Disagree {
        run: index.run_id.clone(),
        index: path.to_path_buf(),
        count: differ.len(),
        list: differ.join("\n"),
    })
}

/// Which runs were taken and what was left out: ordinary runs, and `ab` of the folder's
/// `total` runs that are A/B jobs.
fn note(keep: &[String], total: usize, ab: usize, selection: &RunSelection) -> String {
    let others = total.saturating_sub(ab + keep.len());
    let runs = if others == 1 { "run" } else { "runs" };
    let mut text = match selection {
        _ if others == 0 => format!("run {}", keep.join(", ")),
        RunSelection::Newest => format!(
            "run {}, the newest of {} in this folder ({others} older {runs} left out; \
             --all-runs merges them, --run ID picks others)",
            keep.join(", "),
            total - ab
        ),
        _ => format!(
            "run {} ({others} other {runs} in this folder left out)",
            keep.join(", ")
        ),
    };
    if ab > 0 {
        text.push_str(&format!(
            " ({ab} A/B job(s) of `goldgate ab` left out: arms of a comparison, not runs; \
             --run ID takes one)"
        ));
    }
    text
}

/// Each run id with the time it started: its index's start, else its first job's (a timestamp
/// that does not parse sorts first). A run known only from its index still counts: a newer run
/// that was killed must not let an older one be judged in its place.
fn run_starts<'a>(
    records: &'a [(PathBuf, RunRecord)],
    indexes: &'a [(PathBuf, RunIndex)],
) -> BTreeMap<&'a str, Option<jiff::Timestamp>> {
    let mut starts: BTreeMap<&str, Option<jiff::Timestamp>> = BTreeMap::new();
    let times = records
        .iter()
        .map(|(_, r)| (r.run_id.as_str(), r.started_at.as_str()))
        .chain(
            indexes
                .iter()
                .map(|(_, i)| (i.run_id.as_str(), i.started_at.as_str())),
        );
    for (run, started_at) in times {
        let entry = starts.entry(run).or_insert(None);
        if let Ok(at) = started_at.parse::<jiff::Timestamp>()
            && entry.is_none_or(|earliest| at < earliest)
        {
            *entry = Some(at);
        }
    }
    starts
}

/// What "newest" means for every command (`RunSelection::Newest`, `cancel`, `run
/// --rerun-failed`): the later start, then the later run id; a start that does not parse sorts
/// first.
fn newness(run_id: &str, started: Option<jiff::Timestamp>) -> (Option<jiff::Timestamp>, &str) {
    (started, run_id)
}

/// The `run.json` of the newest run under `out` (by its start time), if there is one.
pub fn newest_run(out: &Path) -> Option<goldgate_schema::RunIndex> {
    std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| goldgate_core::records::load_index(&e.path().join("run.json")).ok())
        .max_by(|a, b| {
            let key = |i: &RunIndex| {
                (
                    i.started_at.parse::<jiff::Timestamp>().ok(),
                    i.run_id.clone(),
                )
            };
            let (ka, kb) = (key(a), key(b));
            newness(&ka.1, ka.0).cmp(&newness(&kb.1, kb.0))
        })
}

/// The `(case, variant)` of every job of `index` that failed or never finished (interrupted,
/// killed): what `run --rerun-failed` runs again.
pub fn failed_pairs(index: &RunIndex) -> BTreeSet<(String, String)> {
    index
        .jobs
        .iter()
        .filter(|j| j.outcome.as_ref().is_none_or(|o| !o.passed()))
        .filter_map(|j| pair_of(&j.job_id))
        .collect()
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
            "run a-new, the newest of 3 in this folder (2 older runs left out; \
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
            "run z-old, mid (1 other run in this folder left out)"
        );
    }

    /// A job of `goldgate ab` `ab_id`, arm `arm`, newer than every run of [`folder`].
    fn ab_job(ab_id: &str, n: u32, arm: &str) -> (PathBuf, RunRecord) {
        let (path, mut r) = record(
            &format!("{ab_id}-{n:02}-{arm}"),
            &format!("2026-11-30T08:00:0{n}Z"),
            1,
        );
        r.ab = Some(goldgate_schema::AbMember {
            ab_id: ab_id.into(),
            arm: arm.into(),
            block: 1,
            pair: n.div_ceil(2),
        });
        (path, r)
    }

    #[test]
    fn the_jobs_of_an_ab_are_never_taken_for_a_run_unless_named() {
        let mut records = folder();
        records.extend([ab_job("ab1", 1, "a"), ab_job("ab1", 2, "b")]);
        // An A/B job from before the marker existed: known by its arm variable.
        let (path, mut old) = record("03-a", "2026-11-30T09:00:00Z", 1);
        old.env
            .insert(goldgate_schema::AB_ARM_VARIABLE.into(), "a".into());
        records.push((path, old));
        let (kept, note) = select_runs(records.clone(), &RunSelection::Newest).unwrap();
        assert_eq!(runs(&kept), [("a-new".to_owned(), 1)]);
        assert_eq!(
            note.unwrap(),
            "run a-new, the newest of 3 in this folder (2 older runs left out; --all-runs merges \
             them, --run ID picks others) (3 A/B job(s) of `goldgate ab` left out: arms of a \
             comparison, not runs; --run ID takes one)"
        );
        let (all, _) = select_runs(records.clone(), &RunSelection::All).unwrap();
        assert!(all.iter().all(|(_, r)| !r.is_ab()), "{:?}", runs(&all));
        assert_eq!(all.len(), 4);
        let named = RunSelection::Ids(vec!["ab1-02-b".into()]);
        let (kept, _) = select_runs(records, &named).unwrap();
        assert_eq!(runs(&kept), [("ab1-02-b".to_owned(), 1)]);
    }

    #[test]
    fn a_folder_of_ab_jobs_alone_is_refused_by_default() {
        let records = vec![ab_job("ab1", 1, "a"), ab_job("ab1", 2, "b")];
        let err = select_runs(records, &RunSelection::Newest).unwrap_err();
        insta::assert_snapshot!(goldgate_core::printable::error_text(&err, None, false));
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
