//! `goldgate history` as a user and a CI fleet meet it, on both backends where the backend
//! matters: `prune --before` reads times (and refuses what is not one), many ingests at once
//! into one store lose no run and migrate it once, a store on a read-only mount is read, only
//! what a run's run.json names is stored (an incomplete job never as passed), the commit comes
//! from the git checkout, and `show`/`changes` print what a person reads.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use crate::common;
use crate::history_store::{db_arg, fresh, record, write_run};

use std::path::Path;
use std::process::Output;

use goldgate_judge::history::{Location, Store};

macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite { $( #[test] fn $name() { if let Some(f) = crate::history_store::fresh("sqlite") { super::$name(&f.location) } } )* }
        mod on_postgres { $( #[test] fn $name() { if let Some(f) = crate::history_store::fresh("postgres") { super::$name(&f.location) } } )* }
    };
}

both_backends!(
    prune_before_compares_instants_and_a_dry_run_removes_nothing,
    many_ingests_at_once_lose_no_run_and_migrate_once,
    an_ingest_waits_for_another_writer_instead_of_failing,
);

/// `goldgate history --db DB ARGS` outside any CI, in `dir`.
fn history_in(dir: &Path, db: &str, args: &[&str]) -> Output {
    common::cli::goldgate()
        .current_dir(dir)
        .args(["history", "--db", db])
        .args(args)
        .env_remove("GITHUB_SHA")
        .env_remove("GITHUB_REF_NAME")
        .env_remove("GOLDGATE_HISTORY")
        .output()
        .unwrap()
}

fn history(db: &str, args: &[&str]) -> Output {
    history_in(Path::new("/"), db, args)
}

/// `history ARGS` that must exit 0; its output.
fn ok(db: &str, args: &[&str]) -> String {
    let o = history(db, args);
    assert_eq!(
        common::cli::code(&o),
        0,
        "{args:?}: {}",
        common::cli::text(&o)
    );
    common::cli::text(&o)
}

pub(crate) fn runs_stored(location: &Location) -> i64 {
    let mut store = Store::open_read(location).unwrap();
    store.counts().unwrap()[0].1
}

/// Three runs at 15:00, 16:00 and 17:00 UTC on 2026-12-01, ingested.
fn three_afternoon_runs(location: &Location) -> tempfile::TempDir {
    let results = tempfile::tempdir().unwrap();
    for h in 15..=17 {
        write_run(
            results.path(),
            &format!("2026-12-01T{h}-00-00Z"),
            &format!("2026-12-01T{h}:00:00Z"),
            &format!("c{h}"),
            1,
            1.0,
        );
    }
    ok(
        &db_arg(location),
        &["ingest", results.path().to_str().unwrap()],
    );
    results
}

fn prune_before_compares_instants_and_a_dry_run_removes_nothing(location: &Location) {
    let db = db_arg(location);
    let _results = three_afternoon_runs(location);
    let shown = location.to_string();
    // 23:59 in Tokyo is 14:59 UTC: before every run, though its text sorts after them all.
    let none = ok(
        &db,
        &[
            "prune",
            "--before",
            "2026-12-01T23:59:00+09:00",
            "--dry-run",
        ],
    );
    assert!(none.starts_with("would remove 0 runs"), "{none}");
    // 01:30 on the 2nd in Tokyo is 16:30 UTC: the first two runs.
    let args = ["prune", "--before", "2026-12-02T01:30:00+09:00"];
    let dry = ok(&db, &[&args[..], &["--dry-run"]].concat());
    insta::assert_snapshot!(
        "prune_dry_run_lists_what_it_would_remove",
        dry.replace(&shown, "[DB]")
    );
    assert_eq!(runs_stored(location), 3, "a dry run removes nothing");
    let done = ok(&db, &args);
    assert!(done.starts_with("removed 2 runs from"), "{done}");
    assert_eq!(runs_stored(location), 1);
    // A lowercase `t` and `z` are RFC 3339 too, and a date is midnight UTC.
    let lower = ok(
        &db,
        &["prune", "--before", "2026-12-01t17:00:00z", "--dry-run"],
    );
    assert!(lower.starts_with("would remove 0 runs"), "{lower}");
    let date = ok(&db, &["prune", "--before", "2026-12-02", "--dry-run"]);
    assert!(date.starts_with("would remove 1 runs"), "{date}");
}

#[test]
fn prune_refuses_a_cutoff_that_is_not_a_time_and_removes_nothing() {
    let Some(f) = fresh("sqlite") else { return };
    let _results = three_afternoon_runs(&f.location);
    let db = db_arg(&f.location);
    for bad in [
        "yesterday",
        "2026-13-45T99:99:99Z",
        "",
        "2026' OR '1'='1",
        "2026-12-01T23:59:00",
    ] {
        let o = history(&db, &["prune", "--before", bad]);
        let text = common::cli::text(&o);
        assert_eq!(common::cli::code(&o), 2, "{bad:?}: {text}");
        assert!(
            text.contains("--before"),
            "{bad:?}: the error names the flag: {text}"
        );
        assert!(
            text.contains("RFC 3339"),
            "{bad:?}: it says what is accepted: {text}"
        );
    }
    assert_eq!(runs_stored(&f.location), 3);
    let o = history(&db, &["prune", "--before", "yesterday"]);
    insta::assert_snapshot!(
        "prune_refuses_yesterday",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// How many goldgates ingest at once.
const WRITERS: usize = 8;

fn many_ingests_at_once_lose_no_run_and_migrate_once(location: &Location) {
    let db = db_arg(location);
    let results = tempfile::tempdir().unwrap();
    let folders: Vec<_> = (0..2 * WRITERS)
        .map(|i| {
            let run = format!("2026-12-{:02}T10-00-00Z", i + 1);
            let dir = results.path().join(format!("f{i}"));
            write_run(
                &dir,
                &run,
                &format!("2026-12-{:02}T10:00:00Z", i + 1),
                "c",
                2,
                1.0,
            );
            dir
        })
        .collect();
    // The first wave opens a store that does not exist yet: every one migrates it, or finds
    // it migrated; the second wave writes into a store that is being written.
    for wave in folders.chunks(WRITERS) {
        let children: Vec<_> = wave
            .iter()
            .map(|dir| {
                common::cli::goldgate()
                    .args(["history", "--db", &db, "ingest"])
                    .arg(dir)
                    .env_remove("GITHUB_SHA")
                    .env_remove("GOLDGATE_HISTORY")
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let o = child.wait_with_output().unwrap();
            assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
        }
    }
    let mut store = Store::open_read(location).unwrap();
    let counts = store.counts().unwrap();
    assert_eq!(counts[0], ("runs", 2 * WRITERS as i64));
    assert_eq!(counts[1], ("jobs", 4 * WRITERS as i64));
    assert_eq!(store.schema_version().unwrap(), 1);
}

/// The advisory lock goldgate's writes hold on PostgreSQL (`goldgate` in ASCII).
const PG_WRITE_LOCK: i64 = 0x676f_6c64_6761_7465;

/// Holds the store's write lock — SQLite's, or the PostgreSQL advisory lock goldgate takes —
/// until dropped.
enum WriteLock {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

impl WriteLock {
    fn take(location: &Location) -> WriteLock {
        match location {
            Location::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.execute_batch("BEGIN IMMEDIATE; DELETE FROM annotations;")
                    .unwrap();
                WriteLock::Sqlite(c)
            }
            Location::Postgres(url) => {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                c.batch_execute(&format!("SELECT pg_advisory_lock({PG_WRITE_LOCK})"))
                    .unwrap();
                WriteLock::Postgres(c)
            }
        }
    }

    fn release(self) {
        match self {
            WriteLock::Sqlite(c) => c.execute_batch("COMMIT").unwrap(),
            WriteLock::Postgres(mut c) => c
                .batch_execute(&format!("SELECT pg_advisory_unlock({PG_WRITE_LOCK})"))
                .unwrap(),
        }
    }
}

fn an_ingest_waits_for_another_writer_instead_of_failing(location: &Location) {
    let db = db_arg(location);
    let _first = three_afternoon_runs(location);
    let results = tempfile::tempdir().unwrap();
    write_run(
        results.path(),
        "r-late",
        "2026-12-02T10:00:00Z",
        "c",
        1,
        1.0,
    );
    let lock = WriteLock::take(location);
    let mut child = common::cli::goldgate()
        .args(["history", "--db", &db, "ingest"])
        .arg(results.path())
        .env_remove("GITHUB_SHA")
        .env_remove("GOLDGATE_HISTORY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // While the lock is held the ingest cannot succeed; it must still be waiting a second
    // later (it used to fail `database is locked` after 0.03 s).
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(1) {
        if let Some(status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            panic!(
                "ingest ended ({status}) while another writer held the lock: {}",
                common::cli::text(&o)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    lock.release();
    let o = child.wait_with_output().unwrap();
    assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    assert_eq!(runs_stored(location), 4);
}

/// `program args…` in a mount namespace of its own where `target` (a folder or a file) is
/// bound read-only over itself, so the mount never outlives the command.
fn read_only_run(target: &Path, program: &Path, args: &[&str]) -> Output {
    let script =
        r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@""#;
    std::process::Command::new("/usr/bin/unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(target)
        .arg(program)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("GOLDGATE_HISTORY")
        .env_remove("GITHUB_SHA")
        .env_remove("GITHUB_REF_NAME")
        .output()
        .unwrap()
}

#[test]
fn a_store_on_a_read_only_mount_is_read() {
    let Some(f) = fresh("sqlite") else { return };
    let _results = three_afternoon_runs(&f.location);
    let Location::Sqlite(path) = &f.location else {
        unreachable!()
    };
    if !rustix::process::geteuid().is_root() || !Path::new("/usr/bin/unshare").is_file() {
        goldgate_core::fixtures::prereq::missing(
            "root and unshare (to bind-mount the store read-only)",
        );
        return;
    }
    // A run of this branch whose saves take twice as long, to be gated with a trend line.
    let pr = tempfile::tempdir().unwrap();
    write_run(
        pr.path(),
        "2026-12-02T10-00-00Z",
        "2026-12-02T10:00:00Z",
        "feed",
        1,
        2.0,
    );
    let gg = Path::new(env!("CARGO_BIN_EXE_goldgate"));
    let db = path.to_str().unwrap();
    // The store's folder read-only (no `-shm` can be made beside it), then the file alone.
    for target in [path.parent().unwrap(), path.as_path()] {
        let read = |args: &[&str]| {
            let o = read_only_run(target, gg, args);
            (common::cli::code(&o), common::cli::text(&o))
        };
        let history = |args: &[&str]| read(&[&["history", "--db", db][..], args].concat());
        let (code, table) = history(&["show", "--case", "gpt/small", "--metric", "lm loss"]);
        assert_eq!(code, 0, "{}: {table}", target.display());
        assert!(table.contains("(every branch, 3 runs)"), "{table}");
        let (code, text) = history(&["changes", "--case", "gpt/small", "--metric", "lm loss"]);
        assert_eq!(code, 0, "{}: {text}", target.display());
        let out = tempfile::tempdir().unwrap();
        let (code, text) = history(&["site", "--out", out.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {text}", target.display());
        assert!(text.contains("case pages"), "{text}");
        let golden = tempfile::tempdir().unwrap();
        let root = golden.path().to_str().unwrap();
        let (code, text) = read(&[
            "bless",
            "--from-history",
            "3",
            "--db",
            db,
            "--golden-root",
            root,
            "gpt/small",
        ]);
        assert_eq!(code, 0, "{}: {text}", target.display());
        let (code, text) = read(&[
            "compare",
            "--results",
            pr.path().to_str().unwrap(),
            "--golden-root",
            root,
            "--trend-db",
            db,
            "--markdown",
            "-",
        ]);
        assert_eq!(code, 1, "{}: a doubled save time: {text}", target.display());
        assert!(text.contains("main's last 3 runs"), "{text}");
        // Proof that the mount is read-only, also to root: goldgate's own write fails there,
        // and the store is as it was.
        let (code, text) = history(&[
            "annotate",
            "--case",
            "gpt/small",
            "--commit",
            "c15",
            "--note",
            "x",
        ]);
        assert_eq!(
            code,
            3,
            "{}: the store is read-only: {text}",
            target.display()
        );
        assert!(
            text.contains("cannot write the history database")
                && text.contains("Read-only file system"),
            "{text}"
        );
    }
    assert_eq!(runs_stored(&f.location), 3);
}

/// A run of one job whose run.json says `outcome` for it, and what a job could plant beside
/// its own folder: the record of a second repeat nobody ran.
fn planted_run(dir: &Path, outcome: Option<goldgate_schema::Outcome>) {
    write_run(dir, "r1", "2026-12-01T10:00:00Z", "c1", 1, 1.0);
    let index_path = dir.join("r1/run.json");
    let mut index: goldgate_schema::RunIndex =
        serde_json::from_slice(&std::fs::read(&index_path).unwrap()).unwrap();
    index.jobs[0].outcome = outcome;
    std::fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();
    // `$OUTPUT_PATH/../../2/results.json` of the job `gpt/small/default/1`.
    let forged = record("r1", "2026-12-01T10:00:00Z", "c1", 2, 1.0);
    common::cli::write(
        &dir.join("r1/gpt/small/default/2/results.json"),
        &serde_json::to_string(&forged).unwrap(),
    );
}

#[test]
fn ingest_stores_only_the_jobs_run_json_names() {
    let Some(f) = fresh("sqlite") else { return };
    let results = tempfile::tempdir().unwrap();
    planted_run(results.path(), Some(goldgate_schema::Outcome::Passed));
    let db = db_arg(&f.location);
    let text = ok(&db, &["ingest", results.path().to_str().unwrap()]);
    assert!(text.starts_with("ingested 1 runs, 1 jobs"), "{text}");
    let mut store = Store::open_read(&f.location).unwrap();
    let points = store.series(&crate::history_store::key("lm loss")).unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].jobs.len(), 1, "the planted repeat 2 is not a job");
}

#[test]
fn a_job_run_json_lists_without_an_outcome_is_stored_incomplete_not_passed() {
    let Some(f) = fresh("sqlite") else { return };
    let results = tempfile::tempdir().unwrap();
    planted_run(results.path(), None);
    let db = db_arg(&f.location);
    let text = ok(&db, &["ingest", results.path().to_str().unwrap()]);
    assert!(text.starts_with("ingested 1 runs, 1 jobs"), "{text}");
    // Stored, but never a point of a series: only passed jobs are.
    let o = history(&db, &["show", "--case", "gpt/small", "--metric", "lm loss"]);
    assert_eq!(common::cli::code(&o), 2, "{}", common::cli::text(&o));
    assert!(
        common::cli::text(&o).contains("no passed job of gpt/small"),
        "{}",
        common::cli::text(&o)
    );
    let Location::Sqlite(path) = &f.location else {
        unreachable!()
    };
    let c = rusqlite::Connection::open(path).unwrap();
    let (outcome, passed): (String, i64) = c
        .query_row("SELECT outcome, passed FROM jobs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((outcome.as_str(), passed), ("incomplete", 0));
}

#[test]
fn a_run_is_of_the_commit_checked_out_when_no_flag_names_one() {
    let Some(f) = fresh("sqlite") else { return };
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    let head = git(&["rev-parse", "HEAD"]);
    let results = repo.path().join("results");
    write_run(&results, "r1", "2026-12-01T10:00:00Z", "unused", 1, 1.0);
    // Records without a workload commit, as a run of a script outside any checkout has.
    for p in walk(&results) {
        if p.ends_with("results.json") {
            let mut r: goldgate_schema::RunRecord =
                serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            r.fingerprint.workload_commit = None;
            std::fs::write(&p, serde_json::to_vec(&r).unwrap()).unwrap();
        }
    }
    let db = db_arg(&f.location);
    let o = history_in(repo.path(), &db, &["ingest", "results"]);
    assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    let table = ok(&db, &["show", "--case", "gpt/small", "--metric", "lm loss"]);
    assert!(table.contains(&head[..12]), "{head}: {table}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_default_store_folder_is_ignored_by_git() {
    let ignore = std::fs::read_to_string(common::cli::repo().join(".gitignore")).unwrap();
    assert!(
        ignore
            .lines()
            .any(|l| matches!(l.trim(), ".goldgate/" | "/.goldgate/")),
        ".gitignore: {ignore}"
    );
}

/// A store of three runs of `gpt/small` (`lm loss`, `checkpoint-blocking-time`), the third
/// with saves twice as slow.
fn shown_store(location: &Location) -> tempfile::TempDir {
    let results = tempfile::tempdir().unwrap();
    for i in 1..=3 {
        write_run(
            results.path(),
            &format!("2026-12-0{i}T10-00-00Z"),
            &format!("2026-12-0{i}T10:00:00Z"),
            &format!("c0ffee{i:0<34}"),
            2,
            if i == 3 { 2.0 } else { 1.0 },
        );
    }
    ok(
        &db_arg(location),
        &["ingest", results.path().to_str().unwrap()],
    );
    results
}

#[test]
fn show_without_a_series_lists_what_the_store_holds() {
    let Some(f) = fresh("sqlite") else { return };
    let _results = shown_store(&f.location);
    let db = db_arg(&f.location);
    insta::assert_snapshot!("show_lists_the_stored_cases", ok(&db, &["show"]));
    insta::assert_snapshot!(
        "show_lists_a_cases_metrics",
        ok(&db, &["show", "--case", "gpt/small"])
    );
}

#[test]
fn a_wrong_metric_or_case_names_the_valid_ones() {
    let Some(f) = fresh("sqlite") else { return };
    let _results = shown_store(&f.location);
    let db = db_arg(&f.location);
    let o = history(
        &db,
        &[
            "show",
            "--case",
            "gpt/small",
            "--metric",
            "chekpoint-blocking-time",
        ],
    );
    assert_eq!(common::cli::code(&o), 2);
    insta::assert_snapshot!(
        "a_wrong_metric_suggests_the_near_one",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = history(&db, &["show", "--case", "gpt/smal", "--metric", "lm loss"]);
    assert_eq!(common::cli::code(&o), 2);
    let text = common::cli::text(&o);
    assert!(text.contains("did you mean `gpt/small`?"), "{text}");
}

#[test]
fn changes_prints_a_table_and_json_names_the_variant() {
    let Some(f) = fresh("sqlite") else { return };
    let results = tempfile::tempdir().unwrap();
    // Eight runs, saves 50 % slower from the fifth on.
    for i in 1..=8 {
        write_run(
            results.path(),
            &format!("2026-12-0{i}T10-00-00Z"),
            &format!("2026-12-0{i}T10:00:00Z"),
            &format!("c0ffee{i:0<34}"),
            1,
            if i >= 5 { 1.5 } else { 1.0 } + f64::from(i % 2) * 0.01,
        );
    }
    let db = db_arg(&f.location);
    ok(&db, &["ingest", results.path().to_str().unwrap()]);
    let args = [
        "changes",
        "--case",
        "gpt/small",
        "--metric",
        "checkpoint-blocking-time",
    ];
    insta::assert_snapshot!("changes_table", ok(&db, &args));
    let json = ok(&db, &[&args[..], &["--json"]].concat());
    let line: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(line["variant"], "default");
    assert_eq!(
        line["series"],
        "gpt/small @ default on h200: checkpoint-blocking-time"
    );
    assert_eq!(line["change_points"], serde_json::json!([4]));
    assert_eq!(
        line["change_runs"],
        serde_json::json!(["2026-12-05T10-00-00Z"])
    );
}
