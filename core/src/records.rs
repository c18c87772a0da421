//! Stage "metrics": loading the versioned `results.json` (one [`RunRecord`] per job) and the
//! `run.json` index of a run ([`RunIndex`]), naming the file on any error. The types are the
//! schema crate's (`goldgate_schema::RunRecord`, `goldgate_schema::RunIndex`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goldgate_schema::metric_names::CHECKPOINT_BLOCKING;
use goldgate_schema::{READABLE_SCHEMA_VERSIONS, RunIndex, RunRecord, StepValues};

/// Reading recorded results back.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RecordError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON of the schema.
    #[error("{}: line {line}, column {column}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A file has a schema version this goldgate does not read.
    #[error("{}: schema_version {found} is not supported (this goldgate reads {} to {})", path.display(), READABLE_SCHEMA_VERSIONS[0], READABLE_SCHEMA_VERSIONS[READABLE_SCHEMA_VERSIONS.len() - 1])]
    #[diagnostic(help("re-record with this goldgate version, or use the version that wrote it"))]
    Version { path: PathBuf, found: u64 },
    /// A name in a file cannot be part of a path (`"case": "../../x"`).
    #[error("{}: {message}", path.display())]
    #[diagnostic(help(
        "this file was not written by goldgate as it is, or was edited; goldgate never uses such \
         a name in a path"
    ))]
    Name { path: PathBuf, message: String },
    /// A file is larger than goldgate reads.
    #[error(
        "{} is {bytes} bytes, more than the {MAX_RECORD_BYTES} goldgate reads (bless takes up \
         to 13 times a record's size in memory; the limit bounds that)",
        path.display()
    )]
    #[diagnostic(help("re-record with this goldgate version, which downsamples long series"))]
    TooLarge { path: PathBuf, bytes: u64 },
    /// No results were found where the user pointed.
    #[error("no results.json under {}", path.display())]
    #[diagnostic(help("pass the folder that `goldgate run --out` wrote, e.g. results/<run-id>"))]
    Empty { path: PathBuf },
}

/// Largest `results.json` or `run.json` goldgate reads: 32 MiB. Long series are downsampled
/// when a record is built, so a record of a million-step run stays a few MiB (2.1 MB for two
/// million steps). Reading a record takes about 5 times its size in memory for `compare` and 13
/// times for `bless` (`benches/memory.sh`: a 159 MB record took 1.6 GiB to
/// bless under the old 256 MiB limit), so the limit is what bounds goldgate's memory on one.
pub const MAX_RECORD_BYTES: u64 = 32 << 20;

/// A record or index file's bytes, once its size and `schema_version` are ones this goldgate
/// reads.
fn read_checked(path: &Path) -> Result<Vec<u8>, RecordError> {
    let bytes = match crate::fsio::read_limited(path, MAX_RECORD_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(bytes)) => {
            return Err(RecordError::TooLarge {
                path: path.to_path_buf(),
                bytes,
            });
        }
        Err(source) => {
            return Err(RecordError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    /// Only the version, read without building the whole document.
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(default)]
        schema_version: Option<u64>,
    }
    let version: Version = serde_json::from_slice(&bytes).map_err(|e| parse_error(path, &e))?;
    let found = version.schema_version.unwrap_or(0);
    if !READABLE_SCHEMA_VERSIONS.contains(&u32::try_from(found).unwrap_or(0)) {
        return Err(RecordError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    Ok(bytes)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, RecordError> {
    let bytes = read_checked(path)?;
    serde_json::from_slice(&bytes).map_err(|e| parse_error(path, &e))
}

fn parse_error(path: &Path, e: &serde_json::Error) -> RecordError {
    RecordError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

/// Reads one `results.json`.
pub fn load_record(path: &Path) -> Result<RunRecord, RecordError> {
    let bytes = read_checked(path)?;
    let mut record: RunRecord =
        serde_json::from_slice(&bytes).map_err(|e| parse_error(path, &e))?;
    blocking_from_version_4(&bytes, &mut record);
    check_names(&record).map_err(|message| RecordError::Name {
        path: path.to_path_buf(),
        message,
    })?;
    scrub_output(&mut record);
    Ok(record)
}

/// Records of versions 1–4 kept a save's blocking time in `checkpoints[].blocking_max_seconds`
/// beside the metric `checkpoint-blocking-time`; version 5 keeps the metric alone. A record
/// that has the field but not the metric (written before the metric existed) gets the metric
/// from it, so every reader finds a save's blocking time in one place.
fn blocking_from_version_4(bytes: &[u8], record: &mut RunRecord) {
    if record.schema_version >= 5 || record.metrics.contains_key(CHECKPOINT_BLOCKING) {
        return;
    }
    #[derive(serde::Deserialize)]
    struct Saves {
        #[serde(default)]
        checkpoints: Vec<Save>,
    }
    #[derive(serde::Deserialize)]
    struct Save {
        iteration: u64,
        #[serde(default)]
        blocking_max_seconds: Option<f64>,
    }
    let Ok(old) = serde_json::from_slice::<Saves>(bytes) else {
        return;
    };
    let series: BTreeMap<u64, f64> = (old.checkpoints.iter())
        .filter_map(|s| s.blocking_max_seconds.map(|v| (s.iteration, v)))
        .collect();
    if !series.is_empty() {
        (record.metrics).insert(CHECKPOINT_BLOCKING.to_owned(), StepValues(series));
    }
}

/// The job output a record carries (failure lines, log tails, warnings), with what looks like
/// a secret by itself masked (`redact::scrub`): a record may come from another machine
/// or an older goldgate, whose output did not pass this machine's redactor, and every report
/// and PR comment is rendered from loaded records.
fn scrub_output(record: &mut RunRecord) {
    let scrub = |t: &mut String| {
        if let std::borrow::Cow::Owned(clean) = crate::redact::scrub(t) {
            *t = clean;
        }
    };
    for a in &mut record.attempts {
        a.failure_line.iter_mut().for_each(scrub);
        a.log_tail.iter_mut().for_each(scrub);
    }
    record.warnings.iter_mut().for_each(scrub);
}

/// Reads one `run.json`.
pub fn load_index(path: &Path) -> Result<RunIndex, RecordError> {
    let index: RunIndex = read_json(path)?;
    let names = || -> Result<(), String> {
        crate::fsio::check_component("run id", &index.run_id)?;
        index
            .jobs
            .iter()
            .try_for_each(|j| crate::fsio::check_relative("job folder", &j.dir.to_string_lossy()))
    };
    names().map_err(|message| RecordError::Name {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(index)
}

/// The names of a record that become parts of paths (`bless` writes
/// `<golden root>/<case>/variants/<slug>/golden_values_dev_<platform>.json`): a record with
/// `"case": "../../../x"` must never reach a path.
fn check_names(r: &RunRecord) -> Result<(), String> {
    crate::fsio::check_relative("case", &r.case)?;
    crate::fsio::check_component("variant slug", &r.variant.slug)?;
    crate::fsio::check_component("run id", &r.run_id)?;
    if !r.platform.is_empty() {
        crate::fsio::check_component("platform", &r.platform)?;
    }
    Ok(())
}

/// Every `results.json` under `dir` (a run folder, or a folder of run folders) except those of
/// warm-up jobs, which ran only to warm the machine and nothing judges, sorted by path so
/// reports are stable. Errors name the file.
pub fn load_results(dir: &Path) -> Result<Vec<(PathBuf, RunRecord)>, RecordError> {
    let mut records = load_all_results(dir)?;
    records.retain(|(_, r)| !r.warmup);
    Ok(records)
}

/// Every `results.json` under `dir`, warm-up jobs included (`goldgate power` reports them).
pub fn load_all_results(dir: &Path) -> Result<Vec<(PathBuf, RunRecord)>, RecordError> {
    let mut paths = Vec::new();
    collect(dir, &mut paths, 0)?;
    paths.sort();
    if paths.is_empty() {
        return Err(RecordError::Empty {
            path: dir.to_path_buf(),
        });
    }
    paths
        .into_iter()
        .map(|p| load_record(&p).map(|r| (p, r)))
        .collect()
}

/// Every `run.json` of a results folder: `dir/run.json` (a run folder) and `dir/*/run.json` (a
/// folder of runs), sorted by path. A folder without any (results from `extract`, or written by
/// hand) has none, which is not an error.
pub fn load_indexes(dir: &Path) -> Result<Vec<(PathBuf, RunIndex)>, RecordError> {
    let mut paths = vec![dir.join("run.json")];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                paths.push(entry.path().join("run.json"));
            }
        }
    }
    paths.retain(|p| crate::fsio::exists(p));
    paths.sort();
    paths
        .into_iter()
        .map(|p| load_index(&p).map(|i| (p, i)))
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), RecordError> {
    // <run>/<model>/<case>/<variant>/<repeat>/results.json is 5 deep; allow one more level
    // for a folder of runs and stop there (checkpoint folders can be huge).
    if depth > 6 {
        return Ok(());
    }
    let read_err = |source| RecordError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(read_err)?;
        if file_type.is_dir() {
            let name = entry.file_name();
            if matches!(
                name.to_str(),
                Some("checkpoints" | "tensorboard" | "data-cache" | "logs" | "output")
            ) {
                continue;
            }
            collect(&path, out, depth + 1)?;
        } else if entry.file_name() == "results.json" {
            out.push(path);
        }
    }
    Ok(())
}

/// A failed job's record with metrics and an argv, for unit tests (also other crates': the
/// `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use std::collections::BTreeMap;

    use goldgate_schema::{Outcome, RunRecord, StepValues, VariantRecord};

    /// The record.
    pub fn sample() -> RunRecord {
        let mut metrics = BTreeMap::new();
        metrics.insert(
            "lm loss".to_string(),
            StepValues(BTreeMap::from([(1, 10.5), (2, f64::NAN)])),
        );
        RunRecord {
            run_id: "20261130-062900-abcd".into(),
            outcome: Outcome::Failed { exit_code: 1 },
            started_at: "2026-11-30T06:29:00Z".into(),
            wall_seconds: 1.5,
            argv: vec![vec![
                "fake-trainer".into(),
                "--train-iters".into(),
                "3".into(),
            ]],
            metrics,
            ..RunRecord::passed("demo/ckpt-demo", VariantRecord::baseline(), 1, "dev_cpu")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::sample;
    use super::*;

    #[test]
    fn round_trips_with_nan_as_string() {
        let r = sample();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""2":"nan""#), "{text}");
        assert!(
            text.contains(r#""status":"failed","exit_code":1"#),
            "{text}"
        );
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.metrics["lm loss"].0[&1], 10.5);
        assert!(back.metrics["lm loss"].0[&2].is_nan());
        assert_eq!(back.outcome, r.outcome);
    }

    #[test]
    fn a_record_from_elsewhere_loads_with_secret_shaped_output_masked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let mut r = sample();
        r.warnings = vec!["job said HF_TOKEN=hf_0123456789abcdefghijXYZ".into()];
        let text = serde_json::to_string(&r).unwrap();
        std::fs::write(&p, text).unwrap();
        let back = load_record(&p).unwrap();
        assert_eq!(back.warnings, ["job said HF_TOKEN=<redacted>"]);
    }

    #[test]
    fn load_names_the_file_on_bad_json_and_bad_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        std::fs::write(&p, "{\n  \"schema_version\": 1,\n  oops").unwrap();
        let e = load_record(&p).unwrap_err().to_string();
        assert!(e.contains("results.json: line 3"), "{e}");
        std::fs::write(&p, r#"{"schema_version": 99}"#).unwrap();
        let e = load_record(&p).unwrap_err().to_string();
        assert!(e.contains("schema_version 99 is not supported"), "{e}");
    }

    #[test]
    fn version_1_records_still_read_with_the_new_fields_absent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let mut v1 = serde_json::to_value(sample()).unwrap();
        v1["schema_version"] = 1.into();
        let memory = v1["memory"].as_object_mut().unwrap();
        for new in [
            "host_peak_pss_bytes",
            "host_pss_reads",
            "host_pss_read_cpu_seconds",
            "mem_available",
        ] {
            assert!(memory.remove(new).is_some(), "{new}");
        }
        memory.insert("host_peak_rss_bytes".into(), 5.into());
        v1["memory"]["timeline"]
            .as_object_mut()
            .unwrap()
            .remove("host_pss_bytes");
        std::fs::write(&p, serde_json::to_vec(&v1).unwrap()).unwrap();
        let r = load_record(&p).unwrap();
        assert_eq!(r.schema_version, 1);
        assert_eq!(r.memory.host_peak_rss_bytes, Some(5));
        assert_eq!(r.memory.host_peak_pss_bytes, None);
        assert_eq!(r.memory.mem_available, None);
    }

    /// A version 4 record as goldgate wrote it: two saves with `blocking_max_seconds`.
    fn version_4_with_saves(metric: bool) -> serde_json::Value {
        let mut v4 = serde_json::to_value(sample()).unwrap();
        v4["schema_version"] = 4.into();
        v4["checkpoints"] = serde_json::json!([
            {"iteration": 10, "blocking_min_seconds": 1.5, "blocking_max_seconds": 2.0,
             "saving_to_saved_seconds": 2.1, "asynchronous": false, "async_latency_seconds": null,
             "memory_before_bytes": null, "memory_after_bytes": null},
            {"iteration": 20, "blocking_min_seconds": null, "blocking_max_seconds": 0.25,
             "saving_to_saved_seconds": 0.3, "asynchronous": true, "async_latency_seconds": 4.0,
             "memory_before_bytes": null, "memory_after_bytes": null},
        ]);
        if metric {
            v4["metrics"][CHECKPOINT_BLOCKING] = serde_json::json!({"10": 2.0, "20": 0.25});
        }
        v4
    }

    #[test]
    fn a_version_4_record_without_the_blocking_metric_gets_it_from_its_saves() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let v4 = version_4_with_saves(false);
        assert!(v4["metrics"].get(CHECKPOINT_BLOCKING).is_none());
        std::fs::write(&p, serde_json::to_vec(&v4).unwrap()).unwrap();
        let r = load_record(&p).unwrap();
        assert_eq!(r.checkpoints.len(), 2);
        assert_eq!(
            r.metrics[CHECKPOINT_BLOCKING].0,
            BTreeMap::from([(10, 2.0), (20, 0.25)])
        );
    }

    #[test]
    fn a_record_that_has_the_blocking_metric_keeps_it_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let mut v4 = version_4_with_saves(true);
        v4["metrics"][CHECKPOINT_BLOCKING] = serde_json::json!({"10": 3.0});
        std::fs::write(&p, serde_json::to_vec(&v4).unwrap()).unwrap();
        let r = load_record(&p).unwrap();
        assert_eq!(
            r.metrics[CHECKPOINT_BLOCKING].0,
            BTreeMap::from([(10, 3.0)])
        );
        // Version 5 stores the metric alone: a written record has no second copy.
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("blocking_max_seconds"), "{text}");
    }

    #[test]
    fn load_results_walks_job_folders_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = sample();
        for (repeat, slug) in [(2, "b"), (1, "a")] {
            r.repeat = repeat;
            r.variant.slug = slug.into();
            let p = dir.path().join(r.rel_dir()).join("results.json");
            crate::fsio::write_atomic(&p, &serde_json::to_vec(&r).unwrap()).unwrap();
        }
        let found = load_results(dir.path()).unwrap();
        let repeats: Vec<_> = found.iter().map(|(_, r)| r.repeat).collect();
        assert_eq!(repeats, vec![1, 2]);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_results(empty.path()),
            Err(RecordError::Empty { .. })
        ));
    }
}
