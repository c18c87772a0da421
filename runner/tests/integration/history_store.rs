//! The history store, end to end on both backends: the same tests run against an embedded
//! SQLite file and against a real PostgreSQL server. The server is `$GOLDGATE_POSTGRES_URL`
//! (`.ci/postgres.sh` starts one on loopback and prints it); each test gets a fresh database
//! on it. Without the variable a PostgreSQL test prints `skipped:` and passes — except under
//! `CI=true`, where it fails.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use goldgate_judge::history::ingest::{IngestContext, job_row, run_row};
use goldgate_judge::history::series::{Annotation, since_baseline};
use goldgate_judge::history::{Location, SeriesKey, Store};
use goldgate_schema::{Fingerprint, RunIndex, RunRecord, StepValues, VariantRecord};

const PG_VAR: &str = "GOLDGATE_POSTGRES_URL";

/// A store of the backend named, with nothing in it, and what must outlive it.
pub(crate) struct Fresh {
    pub(crate) location: Location,
    _dir: tempfile::TempDir,
    drop_db: Option<(String, String)>,
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.drop_db
            && let Ok(mut c) = postgres::Client::connect(admin, postgres::NoTls)
        {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);

pub(crate) fn fresh(backend: &str) -> Option<Fresh> {
    let dir = tempfile::tempdir().unwrap();
    if backend == "sqlite" {
        let location = Location::Sqlite(dir.path().join("deep/history.sqlite"));
        return Some(Fresh {
            location,
            _dir: dir,
            drop_db: None,
        });
    }
    let Some(admin) = std::env::var(PG_VAR).ok().filter(|u| !u.is_empty()) else {
        goldgate_core::fixtures::prereq::missing(&format!(
            "no PostgreSQL ({PG_VAR} unset; .ci/run starts one with .ci/postgres.sh)"
        ));
        return None;
    };
    let name = format!(
        "gg_test_{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let mut c = postgres::Client::connect(&admin, postgres::NoTls)
        .unwrap_or_else(|e| panic!("{PG_VAR}={admin} does not connect: {e}"));
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let (base, _) = admin.rsplit_once('/').unwrap();
    let location = Location::Postgres(format!("{base}/{name}"));
    Some(Fresh {
        location,
        _dir: dir,
        drop_db: Some((admin, name)),
    })
}

macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite { $( #[test] fn $name() { if let Some(f) = super::fresh("sqlite") { super::$name(&f.location) } } )* }
        mod on_postgres { $( #[test] fn $name() { if let Some(f) = super::fresh("postgres") { super::$name(&f.location) } } )* }
    };
}

both_backends!(
    migrations_run_once_and_a_reopen_applies_nothing,
    ingest_is_idempotent_and_series_come_back_oldest_first,
    a_folder_that_gained_jobs_adds_only_the_new_ones,
    prune_keeps_the_newest_runs_and_removes_their_samples,
    annotations_set_a_new_baseline,
    the_cli_ingests_and_shows_the_same_table,
    bless_from_history_keeps_the_newest_runs_jobs_as_golden_samples,
    a_regression_gets_a_trend_line_against_mains_recent_runs,
);

pub(crate) fn variant() -> VariantRecord {
    VariantRecord {
        name: "default".into(),
        slug: "default".into(),
        choices: Default::default(),
    }
}

/// One job's record: `lm loss` over 4 steps and a per-save blocking time around `t`.
pub(crate) fn record(run: &str, started: &str, commit: &str, repeat: u32, t: f64) -> RunRecord {
    let steps = |v: &[f64]| {
        StepValues(
            v.iter()
                .enumerate()
                .map(|(i, x)| (i as u64 * 10 + 10, *x))
                .collect(),
        )
    };
    let mut r = RunRecord {
        run_id: run.into(),
        started_at: started.into(),
        wall_seconds: 12.5,
        fingerprint: Fingerprint {
            gpu_model: Some("NVIDIA H200".into()),
            gpu_count: Some(1),
            host: "node1".into(),
            goldgate_version: "0.1.0".into(),
            workload_commit: Some(commit.into()),
            ..Fingerprint::default()
        },
        ..RunRecord::passed("gpt/small", variant(), repeat, "h200")
    };
    r.metrics
        .insert("lm loss".into(), steps(&[10.0, 9.0, f64::NAN, 8.0]));
    r.metrics.insert(
        "checkpoint-blocking-time".into(),
        steps(&[5.0 * t, t, t + 0.01, t - 0.01]),
    );
    r
}

/// Writes a run folder `<dir>/<run>/…/results.json` of `repeats` jobs, and its run.json.
pub(crate) fn write_run(dir: &Path, run: &str, started: &str, commit: &str, repeats: u32, t: f64) {
    let mut jobs = Vec::new();
    for repeat in 1..=repeats {
        let r = record(run, started, commit, repeat, t + f64::from(repeat) * 0.001);
        let path = dir.join(run).join(r.rel_dir()).join("results.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();
        jobs.push(goldgate_schema::JobEntry {
            job_id: r.job_id.clone(),
            dir: r.rel_dir(),
            outcome: Some(r.outcome.clone()),
            scheduler_job_ids: Vec::new(),
            secret_names: Vec::new(),
            secret_checks: Default::default(),
        });
    }
    let index = RunIndex {
        schema_version: 3,
        run_id: run.into(),
        started_at: started.into(),
        finished_at: Some(started.into()),
        platform: "h200".into(),
        goldgate_version: "0.1.0".into(),
        command: vec!["goldgate".into(), "run".into()],
        jobs,
        runner: None,
        ab: None,
        rerun_of: None,
        keep_raw_log: false,
        secret_salt: None,
    };
    std::fs::write(
        dir.join(run).join("run.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
}

fn ctx() -> IngestContext {
    IngestContext {
        commit: None,
        checkout: None,
        branch: "main".into(),
        now: "2026-12-01T00:00:00Z".into(),
    }
}

pub(crate) fn key(metric: &str) -> SeriesKey {
    SeriesKey {
        case: "gpt/small".into(),
        variant: "default".into(),
        platform: "h200".into(),
        metric: metric.into(),
        branch: Some("main".into()),
    }
}

/// Stores the records of `runs` as `goldgate history ingest` does, one run at a time.
fn ingest(store: &mut Store, runs: &[Vec<RunRecord>]) -> goldgate_judge::history::IngestCount {
    let mut total = goldgate_judge::history::IngestCount::default();
    for records in runs {
        let refs: Vec<&RunRecord> = records.iter().collect();
        let run = run_row(&refs, &ctx()).unwrap();
        let rows: Vec<_> = records
            .iter()
            .map(|r| job_row(r, &format!("{}/x/results.json", r.run_id)))
            .collect();
        total.add(store.ingest(&run, &rows).unwrap());
    }
    total
}

fn three_runs() -> Vec<Vec<RunRecord>> {
    (1..=3)
        .map(|i| {
            let run = format!("2026-12-0{i}T10-00-00Z");
            let started = format!("2026-12-0{i}T10:00:00Z");
            (1..=2)
                .map(|rep| record(&run, &started, &format!("c{i}"), rep, f64::from(i)))
                .collect()
        })
        .collect()
}

fn migrations_run_once_and_a_reopen_applies_nothing(location: &Location) {
    let mut store = Store::open(location, "2026-12-01T00:00:00Z").unwrap();
    assert_eq!(store.schema_version().unwrap(), 1);
    drop(store);
    let mut again = Store::open(location, "2026-12-02T00:00:00Z").unwrap();
    assert_eq!(again.schema_version().unwrap(), 1);
    assert!(again.counts().unwrap().iter().all(|(_, n)| *n == 0));
}

fn ingest_is_idempotent_and_series_come_back_oldest_first(location: &Location) {
    let mut store = Store::open(location, "now").unwrap();
    // Stored newest first, read back oldest first.
    let mut runs = three_runs();
    runs.reverse();
    let first = ingest(&mut store, &runs);
    assert_eq!((first.runs, first.jobs, first.skipped_jobs), (3, 6, 0));
    assert_eq!(first.samples, 6 * 8);
    let again = ingest(&mut store, &runs);
    assert_eq!(
        (again.runs, again.jobs, again.skipped_jobs, again.samples),
        (0, 0, 6, 0)
    );
    let counts: Vec<i64> = store.counts().unwrap().iter().map(|c| c.1).collect();
    assert_eq!(counts, vec![3, 6, 12, 48, 0]);

    let points = store.series(&key("checkpoint-blocking-time")).unwrap();
    let commits: Vec<&str> = points.iter().map(|p| p.commit.as_str()).collect();
    assert_eq!(commits, ["c1", "c2", "c3"]);
    // Each job's summary: the median of its saves after the first (t - 0.01, t, t + 0.01).
    let medians: Vec<f64> = points
        .iter()
        .map(|p| (p.median() * 1e4).round() / 1e4)
        .collect();
    assert_eq!(medians, vec![1.0, 2.0, 3.0]);
    // A NaN step is kept as NULL and left out of the summary.
    let loss = store.series(&key("lm loss")).unwrap();
    assert_eq!(loss[0].jobs[0].1, 8.5);
    let samples = store
        .samples(&loss[0].run_id, &loss[0].jobs[0].0, "lm loss")
        .unwrap();
    assert_eq!(samples.len(), 4);
    assert!(samples[2].1.is_nan());
    assert_eq!(store.series_names().unwrap().len(), 2);
}

fn a_folder_that_gained_jobs_adds_only_the_new_ones(location: &Location) {
    let mut store = Store::open(location, "now").unwrap();
    let mut runs = three_runs();
    let last = runs[0].pop().unwrap();
    ingest(&mut store, &runs[..1]);
    runs[0].push(last);
    let n = ingest(&mut store, &runs[..1]);
    assert_eq!((n.runs, n.jobs, n.skipped_jobs), (0, 1, 1));
}

fn prune_keeps_the_newest_runs_and_removes_their_samples(location: &Location) {
    let mut store = Store::open(location, "now").unwrap();
    ingest(&mut store, &three_runs());
    let ids = |plan: goldgate_judge::history::prune::PrunePlan| -> Vec<String> {
        plan.remove.into_iter().map(|r| r.run_id).collect()
    };
    let removed = store.prune(None, Some(2), false).unwrap();
    assert_eq!(ids(removed), ["2026-12-01T10-00-00Z"]);
    let cutoff = "2026-12-03T00:00:00Z".parse().unwrap();
    let would = store.prune(Some(cutoff), None, true).unwrap();
    assert_eq!(ids(would), ["2026-12-02T10-00-00Z"]);
    let removed = store.prune(Some(cutoff), None, false).unwrap();
    assert_eq!(ids(removed), ["2026-12-02T10-00-00Z"]);
    let counts: Vec<i64> = store.counts().unwrap().iter().map(|c| c.1).collect();
    assert_eq!(counts, vec![1, 2, 4, 16, 0]);
}

fn annotations_set_a_new_baseline(location: &Location) {
    let mut store = Store::open(location, "now").unwrap();
    ingest(&mut store, &three_runs());
    let note = Annotation {
        case: "gpt/small".into(),
        metric: "checkpoint-blocking-time".into(),
        commit: "c2".into(),
        note: "bigger checkpoints on purpose".into(),
        created_at: "2026-12-04T00:00:00Z".into(),
    };
    store.annotate(&note).unwrap();
    let notes = store.annotations("gpt/small").unwrap();
    assert_eq!(notes, [note]);
    let points = store.series(&key("checkpoint-blocking-time")).unwrap();
    assert_eq!(
        since_baseline(&points, &notes, "checkpoint-blocking-time").len(),
        2
    );
    assert_eq!(since_baseline(&points, &notes, "lm loss").len(), 3);
}

pub(crate) fn db_arg(location: &Location) -> String {
    match location {
        Location::Sqlite(p) => p.display().to_string(),
        Location::Postgres(url) => url.clone(),
    }
}

fn bless_from_history_keeps_the_newest_runs_jobs_as_golden_samples(location: &Location) {
    let db = db_arg(location);
    let results = tempfile::tempdir().unwrap();
    for i in 1..=3 {
        let t = f64::from(i);
        write_run(
            results.path(),
            &format!("2026-12-0{i}T10-00-00Z"),
            &format!("2026-12-0{i}T10:00:00Z"),
            &format!("c0ffee{i:0<34}"),
            2,
            t,
        );
    }
    let golden = tempfile::tempdir().unwrap();
    let goldgate = |args: &[&str]| {
        let o = common::cli::goldgate()
            .args(args)
            .env_remove("GITHUB_SHA")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("GOLDGATE_HISTORY")
            .output()
            .unwrap();
        (common::cli::code(&o), common::cli::text(&o))
    };
    let (code, text) = goldgate(&[
        "history",
        "--db",
        &db,
        "ingest",
        results.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let root = golden.path().to_str().unwrap();
    let (code, text) = goldgate(&[
        "bless",
        "--from-history",
        "2",
        "--db",
        &db,
        "--golden-root",
        root,
        "gpt/small",
    ]);
    assert_eq!(code, 0, "{text}");
    let file = golden.path().join("gpt/small/golden_values_dev_h200.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let samples = &json["goldgate-samples"];
    // The two newest runs' two jobs each; the oldest run (t = 1) is left out.
    assert_eq!(samples["jobs"].as_array().unwrap().len(), 4, "{json}");
    let per_job = samples["metrics"]["checkpoint-blocking-time"]
        .as_array()
        .unwrap();
    let second_saves: Vec<f64> = per_job.iter().map(|j| j["20"].as_f64().unwrap()).collect();
    assert!(second_saves.iter().all(|t| *t > 1.9), "{second_saves:?}");
    // Nothing stored for the case on that branch: a usage error naming the store.
    let (code, text) = goldgate(&[
        "bless",
        "--from-history",
        "2",
        "--history-branch",
        "nope",
        "--db",
        &db,
        "--golden-root",
        root,
        "gpt/small",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("no passed run of gpt/small on branch nope"),
        "{text}"
    );
}

fn a_regression_gets_a_trend_line_against_mains_recent_runs(location: &Location) {
    let db = db_arg(location);
    let main_runs = tempfile::tempdir().unwrap();
    for i in 1..=4 {
        write_run(
            main_runs.path(),
            &format!("2026-12-0{i}T10-00-00Z"),
            &format!("2026-12-0{i}T10:00:00Z"),
            &format!("c0ffee{i:0<34}"),
            2,
            1.0,
        );
    }
    let pr = tempfile::tempdir().unwrap();
    write_run(
        pr.path(),
        "2026-12-09T10-00-00Z",
        "2026-12-09T10:00:00Z",
        "feed",
        2,
        2.0,
    );
    let golden = tempfile::tempdir().unwrap();
    let goldgate = |args: &[&str]| {
        let o = common::cli::goldgate()
            .args(args)
            .env_remove("GITHUB_SHA")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("GOLDGATE_HISTORY")
            .output()
            .unwrap();
        (common::cli::code(&o), common::cli::text(&o))
    };
    let root = golden.path().to_str().unwrap();
    let (code, text) = goldgate(&[
        "history",
        "--db",
        &db,
        "ingest",
        main_runs.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = goldgate(&[
        "bless",
        "--from-history",
        "4",
        "--db",
        &db,
        "--golden-root",
        root,
        "gpt/small",
    ]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = goldgate(&[
        "compare",
        "--results",
        pr.path().to_str().unwrap(),
        "--golden-root",
        root,
        "--trend-db",
        &db,
        "--markdown",
        "-",
    ]);
    assert_eq!(code, 1, "a doubled save time is a regression: {text}");
    assert!(text.contains("### Trend on main (history store)"), "{text}");
    assert!(
        text.contains("`gpt/small @ default: checkpoint-blocking-time`: main's last 4 runs 1.00 s–1.00 s (median 1.00 s)"),
        "{text}"
    );
    assert!(
        text.contains("no change point; this run's 2.00 s is **outside** main's recent spread"),
        "{text}"
    );
}

fn the_cli_ingests_and_shows_the_same_table(location: &Location) {
    let db = db_arg(location);
    let results = tempfile::tempdir().unwrap();
    for i in 1..=3 {
        let t = if i == 3 { 2.0 } else { 1.0 };
        write_run(
            results.path(),
            &format!("2026-12-0{i}T10-00-00Z"),
            &format!("2026-12-0{i}T10:00:00Z"),
            &format!("c0ffee{i:0<34}"),
            2,
            t,
        );
    }
    let run = |args: &[&str]| {
        let o = common::cli::goldgate()
            .args(["history", "--db", &db])
            .args(args)
            .env_remove("GITHUB_SHA")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("GOLDGATE_HISTORY")
            .output()
            .unwrap();
        assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
        common::cli::text(&o)
    };
    let dir = results.path().to_str().unwrap();
    let first = run(&["ingest", dir]);
    assert!(
        first.starts_with("ingested 3 runs, 6 jobs (0 already stored), 12 metrics, 48 samples"),
        "{first}"
    );
    let again = run(&["ingest", dir]);
    assert!(
        again.starts_with("ingested 0 runs, 0 jobs (6 already stored)"),
        "{again}"
    );
    run(&[
        "annotate",
        "--case",
        "gpt/small",
        "--commit",
        &format!("c0ffee{:0<34}", 3),
        "--note",
        "slower saves, on purpose",
    ]);
    let table = run(&[
        "show",
        "--case",
        "gpt/small",
        "--metric",
        "checkpoint-blocking-time",
    ]);
    insta::assert_snapshot!("show_checkpoint_blocking_time", table);
}
