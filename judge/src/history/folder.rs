//! Stage "history": the runs of a results folder as `history ingest` takes them — only what
//! each run's own `run.json` names. The job folders are the jobs' to write (`$OUTPUT_PATH`
//! lies inside them), so walking them for every `results.json` would store whatever a job
//! planted (`$OUTPUT_PATH/../../2/results.json` became a second passed run). Each job the
//! index lists is read from `<run folder>/<its dir>/results.json`; a record that names
//! another run or job is left out with a note, and a job the index lists without an outcome
//! (goldgate was killed before it recorded one) is stored as incomplete, never as passed,
//! whatever its results.json says.

use std::path::Path;

use goldgate_core::records::{self, RecordError};
use goldgate_schema::{Outcome, RunIndex, RunRecord};

/// The outcome stored for a job its run.json lists without one.
pub const INCOMPLETE: &str = "incomplete";

/// One run of the folder, as its run.json names it.
#[derive(Clone, Debug, PartialEq)]
pub struct FolderRun {
    pub index: RunIndex,
    pub jobs: Vec<FolderJob>,
}

/// One job of a run with its record.
#[derive(Clone, Debug, PartialEq)]
pub struct FolderJob {
    /// `<run id>/<job dir>/results.json`: where the record was read, from the run folder on
    /// (the store outlives the folder it was read from).
    pub path: String,
    pub record: RunRecord,
    /// The outcome run.json records; `None` when goldgate never recorded one.
    pub recorded: Option<Outcome>,
}

impl FolderJob {
    /// Whether the job counts as passed: both run.json and its record say so.
    pub fn passed(&self) -> bool {
        self.recorded.as_ref().is_some_and(Outcome::passed) && self.record.outcome.passed()
    }

    /// The outcome to store: the record's, or [`INCOMPLETE`] when run.json has none.
    pub fn outcome_label(&self) -> String {
        match &self.recorded {
            Some(_) => self.record.outcome.label(),
            None => INCOMPLETE.to_owned(),
        }
    }
}

/// What reading a folder found: its runs, and a note per job left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Folder {
    pub runs: Vec<FolderRun>,
    /// `path: why` of each listed job not stored (no results.json yet, or a record that names
    /// another run or job).
    pub left_out: Vec<String>,
}

/// Reads every run of `dir` (`dir/run.json`, or `dir/*/run.json` for a folder of runs). A
/// folder without any run.json has no runs. Warm-up jobs are left out (nothing judges them).
pub fn read(dir: &Path) -> Result<Folder, RecordError> {
    let mut folder = Folder::default();
    for (index_path, index) in records::load_indexes(dir)? {
        let run_dir = index_path.parent().unwrap_or(dir);
        let mut jobs = Vec::new();
        for entry in &index.jobs {
            let path = run_dir.join(&entry.dir).join("results.json");
            let shown = format!(
                "{}/{}/results.json",
                index.run_id,
                entry.dir.to_string_lossy()
            );
            if !goldgate_core::fsio::exists(&path) {
                folder.left_out.push(format!("{shown}: no results.json"));
                continue;
            }
            let record = records::load_record(&path)?;
            if record.run_id != index.run_id || record.job_id != entry.job_id {
                folder.left_out.push(format!(
                    "{shown}: it records {} of run {}, but run.json lists {} there",
                    record.job_id, record.run_id, entry.job_id
                ));
                continue;
            }
            if record.warmup {
                continue;
            }
            jobs.push(FolderJob {
                path: shown,
                record,
                recorded: entry.outcome.clone(),
            });
        }
        folder.runs.push(FolderRun { index, jobs });
    }
    Ok(folder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_schema::{JobEntry, VariantRecord};

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// A run `r1` of one job; its run.json records `outcome` for it.
    fn run(dir: &Path, outcome: Option<Outcome>) -> RunRecord {
        let mut r = RunRecord::passed("m/c", VariantRecord::baseline(), 1, "h200");
        r.run_id = "r1".into();
        let job_dir = dir.join("r1").join(r.rel_dir());
        write(
            &job_dir.join("results.json"),
            &serde_json::to_vec(&r).unwrap(),
        );
        let index = RunIndex {
            schema_version: 3,
            run_id: "r1".into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            finished_at: None,
            platform: "h200".into(),
            goldgate_version: "0".into(),
            command: vec![],
            jobs: vec![JobEntry {
                job_id: r.job_id.clone(),
                dir: r.rel_dir(),
                outcome,
                scheduler_job_ids: vec![],
                secret_names: Vec::new(),
                secret_checks: Default::default(),
            }],
            runner: None,
            ab: None,
            rerun_of: None,
            keep_raw_log: false,
            secret_salt: None,
        };
        write(
            &dir.join("r1/run.json"),
            &serde_json::to_vec(&index).unwrap(),
        );
        r
    }

    #[test]
    fn a_job_without_a_recorded_outcome_is_incomplete_whatever_its_record_says() {
        let tmp = tempfile::tempdir().unwrap();
        run(tmp.path(), None);
        let f = read(tmp.path()).unwrap();
        let job = &f.runs[0].jobs[0];
        assert!(job.record.outcome.passed(), "the record itself says passed");
        assert!(!job.passed());
        assert_eq!(job.outcome_label(), "incomplete");
    }

    #[test]
    fn only_the_jobs_run_json_names_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let r = run(tmp.path(), Some(Outcome::Passed));
        // What a job can write from its $OUTPUT_PATH: a second repeat nobody ran, and a record
        // of another run inside this one.
        let mut forged = r.clone();
        forged.repeat = 2;
        forged.job_id = "m/c@default#2".into();
        let variant_dir = tmp.path().join("r1").join(r.rel_dir());
        let variant_dir = variant_dir.parent().unwrap();
        write(
            &variant_dir.join("2/results.json"),
            &serde_json::to_vec(&forged).unwrap(),
        );
        forged.run_id = "r2".into();
        write(
            &tmp.path().join("r1/m/c/default/1/output/results.json"),
            &serde_json::to_vec(&forged).unwrap(),
        );
        let f = read(tmp.path()).unwrap();
        assert_eq!(f.runs.len(), 1);
        assert_eq!(f.runs[0].jobs.len(), 1);
        assert_eq!(f.runs[0].jobs[0].record.job_id, r.job_id);
        assert!(f.runs[0].jobs[0].passed());
        assert!(f.left_out.is_empty(), "{:?}", f.left_out);
    }

    #[test]
    fn a_record_naming_another_job_is_left_out_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = run(tmp.path(), Some(Outcome::Passed));
        r.run_id = "other".into();
        write(
            &tmp.path().join("r1").join(r.rel_dir()).join("results.json"),
            &serde_json::to_vec(&r).unwrap(),
        );
        let f = read(tmp.path()).unwrap();
        assert!(f.runs[0].jobs.is_empty());
        assert_eq!(f.left_out.len(), 1);
        assert!(f.left_out[0].contains("run other"), "{:?}", f.left_out);
    }
}
