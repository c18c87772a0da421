//! Stage "history": the one query layer over both backends. Every statement is written once
//! (`?` placeholders, types both dialects share); ingest is idempotent — a run is keyed by
//! its run id and a job by `(run, job id)`, and a job already stored is skipped — and each
//! run goes in as one transaction, so an interrupted ingest leaves no half run.

use std::collections::BTreeMap;

use super::backend::{Backend, Cell, Postgres, Value};
use super::error::HistoryError;
use super::ingest::{IngestCount, JobRow, RunRow};
use super::location::Location;
use super::migrate;
use super::prune::{self, PrunePlan, StoredRun};
use super::series::{Annotation, Point, SeriesKey};

/// Rows per multi-row INSERT of metrics or samples (4 parameters each, well under both
/// backends' limits).
const SAMPLE_BATCH: usize = 200;

/// An open, migrated history store.
pub struct Store {
    backend: Backend,
    location: Location,
}

/// One series the store holds: `(case, variant, platform, metric)`.
pub type SeriesName = (String, String, String, String);

impl Store {
    /// Opens (creating a SQLite file and its folder when missing) and migrates the store: what
    /// a command that writes (`ingest`, `prune`, `annotate`) opens.
    pub fn open(location: &Location, now: &str) -> Result<Store, HistoryError> {
        let backend = match location {
            Location::Sqlite(path) => open_sqlite(path)?,
            Location::Postgres(url) => connect(location, url)?,
        };
        let mut store = Store {
            backend,
            location: location.clone(),
        };
        migrate::migrate(&mut store.backend, now)?;
        Ok(store)
    }

    /// Opens an existing store to read it (`show`, `changes`, `site`, `bless --from-history`):
    /// nothing is created, locked or written, so a store on a read-only mount, or one another
    /// process is writing, is read as it is. A store this goldgate would have to migrate first
    /// is refused with what to do.
    pub fn open_read(location: &Location) -> Result<Store, HistoryError> {
        let backend = match location {
            Location::Sqlite(path) => open_sqlite_read(path)?,
            Location::Postgres(url) => connect(location, url)?,
        };
        let mut store = Store {
            backend,
            location: location.clone(),
        };
        let version = migrate::stored_version(&mut store.backend)?;
        if version == 0 {
            return Err(HistoryError::NotFound(format!(
                "{location} is not a goldgate history store yet (`goldgate history ingest` \
                 creates one)"
            )));
        }
        if version > migrate::latest() {
            return Err(HistoryError::TooNew {
                found: version,
                known: migrate::latest(),
            });
        }
        if version < migrate::latest() {
            return Err(HistoryError::Usage(format!(
                "{location} is at schema version {version}; this goldgate reads {}: run \
                 `goldgate history ingest` (or any command that writes) where the store is \
                 writable to migrate it",
                migrate::latest()
            )));
        }
        Ok(store)
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The schema version the database is at.
    pub fn schema_version(&mut self) -> Result<i64, HistoryError> {
        migrate::current(&mut self.backend)
    }

    /// Adds one run and those of its jobs not stored yet, in one transaction.
    pub fn ingest(&mut self, run: &RunRow, jobs: &[JobRow]) -> Result<IngestCount, HistoryError> {
        let what = format!("ingesting run {}", run.run_id);
        self.backend
            .write_transaction(&what, |b| ingest_run(b, run, jobs, &what))
    }

    /// The points of a series, oldest run first; only passed jobs count.
    pub fn series(&mut self, key: &SeriesKey) -> Result<Vec<Point>, HistoryError> {
        let mut sql = String::from(
            "SELECT r.run_id, r.commit_sha, r.branch, r.started_at, j.job_id, m.value, \
             j.results_path FROM metrics m JOIN jobs j ON m.job_ref = j.id \
             JOIN runs r ON j.run_ref = r.id \
             WHERE j.case_name = ? AND j.variant = ? AND j.platform = ? AND m.name = ? \
             AND j.passed = 1 AND m.value IS NOT NULL",
        );
        let mut params: Vec<Value> = vec![
            key.case.as_str().into(),
            key.variant.as_str().into(),
            key.platform.as_str().into(),
            key.metric.as_str().into(),
        ];
        if let Some(branch) = &key.branch {
            sql.push_str(" AND r.branch = ?");
            params.push(branch.as_str().into());
        }
        sql.push_str(" ORDER BY r.started_at, r.run_id, j.job_id");
        let rows = self.backend.query(&sql, &params, "reading a series")?;
        Ok(points(&rows))
    }

    /// The per-step samples of one metric of the given jobs (run id, job id), per job in the
    /// order given: what `bless --from-history` keeps as the golden's per-job samples.
    pub fn samples(
        &mut self,
        run_id: &str,
        job_id: &str,
        metric: &str,
    ) -> Result<Vec<(u64, f64)>, HistoryError> {
        let rows = self.backend.query(
            "SELECT s.step, s.value FROM samples s JOIN jobs j ON s.job_ref = j.id \
             JOIN runs r ON j.run_ref = r.id WHERE r.run_id = ? AND j.job_id = ? AND s.name = ? \
             ORDER BY s.step",
            &[run_id.into(), job_id.into(), metric.into()],
            "reading samples",
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let step = u64::try_from(r[0].int()?).ok()?;
                Some((step, r[1].real().unwrap_or(f64::NAN)))
            })
            .collect())
    }

    /// The passed jobs of the newest `runs` runs of `branch` that ran the case's variant on
    /// `platform`, newest run first: `(run id, job id, commit)`.
    pub fn recent_jobs(
        &mut self,
        key: &SeriesKey,
        runs: usize,
    ) -> Result<Vec<(String, String, String)>, HistoryError> {
        let branch = key.branch.as_deref().unwrap_or("main");
        let rows = self.backend.query(
            "SELECT r.run_id, j.job_id, r.commit_sha FROM jobs j JOIN runs r ON j.run_ref = r.id \
             WHERE j.case_name = ? AND j.variant = ? AND j.platform = ? AND r.branch = ? \
             AND j.passed = 1 ORDER BY r.started_at DESC, r.run_id DESC, j.job_id",
            &[
                key.case.as_str().into(),
                key.variant.as_str().into(),
                key.platform.as_str().into(),
                branch.into(),
            ],
            "reading recent jobs",
        )?;
        let mut seen: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for r in &rows {
            let run = text(&r[0]);
            if !seen.contains(&run) {
                if seen.len() == runs {
                    break;
                }
                seen.push(run.clone());
            }
            out.push((run, text(&r[1]), text(&r[2])));
        }
        Ok(out)
    }

    /// Every sample of one stored job: metric → step → value (NaN for NULL).
    pub fn job_samples(
        &mut self,
        run_id: &str,
        job_id: &str,
    ) -> Result<BTreeMap<String, BTreeMap<u64, f64>>, HistoryError> {
        let rows = self.backend.query(
            "SELECT s.name, s.step, s.value FROM samples s JOIN jobs j ON s.job_ref = j.id \
             JOIN runs r ON j.run_ref = r.id WHERE r.run_id = ? AND j.job_id = ? \
             ORDER BY s.name, s.step",
            &[run_id.into(), job_id.into()],
            "reading a job's samples",
        )?;
        let mut out: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
        for r in &rows {
            let Some(step) = r[1].int().and_then(|s| u64::try_from(s).ok()) else {
                continue;
            };
            out.entry(text(&r[0]))
                .or_default()
                .insert(step, r[2].real().unwrap_or(f64::NAN));
        }
        Ok(out)
    }

    /// Every series the store holds, sorted.
    pub fn series_names(&mut self) -> Result<Vec<SeriesName>, HistoryError> {
        let rows = self.backend.query(
            "SELECT DISTINCT j.case_name, j.variant, j.platform, m.name FROM metrics m \
             JOIN jobs j ON m.job_ref = j.id ORDER BY j.case_name, j.variant, j.platform, m.name",
            &[],
            "listing series",
        )?;
        Ok(rows
            .iter()
            .map(|r| (text(&r[0]), text(&r[1]), text(&r[2]), text(&r[3])))
            .collect())
    }

    /// Every series the store holds, sorted, with how many runs have a passed job in it:
    /// what `history show` lists.
    pub fn series_runs(&mut self) -> Result<Vec<(SeriesName, i64)>, HistoryError> {
        let rows = self.backend.query(
            "SELECT j.case_name, j.variant, j.platform, m.name, \
             COUNT(DISTINCT CASE WHEN j.passed = 1 THEN j.run_ref END) FROM metrics m \
             JOIN jobs j ON m.job_ref = j.id GROUP BY j.case_name, j.variant, j.platform, m.name \
             ORDER BY j.case_name, j.variant, j.platform, m.name",
            &[],
            "listing series",
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let name = (text(&r[0]), text(&r[1]), text(&r[2]), text(&r[3]));
                (name, r[4].int().unwrap_or(0))
            })
            .collect())
    }

    /// Records an intended change (a new baseline from `a.commit` on).
    pub fn annotate(&mut self, a: &Annotation) -> Result<(), HistoryError> {
        self.backend.execute(
            "INSERT INTO annotations (case_name, metric, commit_sha, note, created_at) \
             VALUES (?, ?, ?, ?, ?)",
            &[
                a.case.as_str().into(),
                a.metric.as_str().into(),
                a.commit.as_str().into(),
                a.note.as_str().into(),
                a.created_at.as_str().into(),
            ],
            "adding an annotation",
        )?;
        Ok(())
    }

    /// The annotations of a case, oldest first.
    pub fn annotations(&mut self, case: &str) -> Result<Vec<Annotation>, HistoryError> {
        let rows = self.backend.query(
            "SELECT case_name, metric, commit_sha, note, created_at FROM annotations \
             WHERE case_name = ? ORDER BY created_at, id",
            &[case.into()],
            "reading annotations",
        )?;
        Ok(rows
            .iter()
            .map(|r| Annotation {
                case: text(&r[0]),
                metric: text(&r[1]),
                commit: text(&r[2]),
                note: text(&r[3]),
                created_at: text(&r[4]),
            })
            .collect())
    }

    /// Removes runs: those started before `before` and all but the newest `keep` runs (see
    /// [`prune::plan`]), in one write transaction; with `dry_run` nothing is removed. Returns
    /// what was (or would be) removed and the runs kept because their start is not a time.
    pub fn prune(
        &mut self,
        before: Option<jiff::Timestamp>,
        keep: Option<usize>,
        dry_run: bool,
    ) -> Result<PrunePlan, HistoryError> {
        self.backend.write_transaction("pruning runs", |b| {
            let rows = b.query(
                "SELECT id, run_id, started_at FROM runs",
                &[],
                "listing runs",
            )?;
            let runs = rows
                .iter()
                .filter_map(|r| {
                    Some(StoredRun {
                        id: r[0].int()?,
                        run_id: text(&r[1]),
                        started_at: text(&r[2]),
                    })
                })
                .collect();
            let plan = prune::plan(runs, before, keep);
            if !dry_run {
                for run in &plan.remove {
                    delete_run(b, run.id)?;
                }
            }
            Ok(plan)
        })
    }

    /// Rows per table, for `history status` and the measurements.
    pub fn counts(&mut self) -> Result<Vec<(&'static str, i64)>, HistoryError> {
        let mut out = Vec::new();
        for table in ["runs", "jobs", "metrics", "samples", "annotations"] {
            let rows = self.backend.query(
                &format!("SELECT COUNT(*) FROM {table}"),
                &[],
                "counting rows",
            )?;
            let n = rows.first().and_then(|r| r.first()).and_then(Cell::int);
            out.push((table, n.unwrap_or(0)));
        }
        Ok(out)
    }
}

fn connect(location: &Location, url: &str) -> Result<Backend, HistoryError> {
    let client = postgres::Client::connect(url, postgres::NoTls).map_err(|source| {
        HistoryError::Connect {
            url: location.to_string(),
            source,
        }
    })?;
    Ok(Backend::Postgres(Box::new(Postgres::new(client))))
}

/// How long a statement waits for another process's write lock before it fails.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn open_sqlite(path: &std::path::Path) -> Result<Backend, HistoryError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| HistoryError::Folder {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    // SQLite would open a file it cannot write read-only and fail later, deep in a migration
    // or a write, with `unable to open database file`: say what is wrong before.
    if goldgate_core::fsio::exists(path)
        && let Err(source) = std::fs::OpenOptions::new().append(true).open(path)
        && matches!(
            source.kind(),
            std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
        )
    {
        return Err(HistoryError::ReadOnly {
            path: path.to_path_buf(),
            source,
        });
    }
    let open_error = |source| HistoryError::OpenSqlite {
        path: path.to_path_buf(),
        source,
    };
    let conn = rusqlite::Connection::open(path).map_err(open_error)?;
    // WAL: readers (the site, `show`) never block an ingest; a busy writer is waited for.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .map_err(open_error)?;
    set_wal(&conn).map_err(open_error)?;
    Ok(Backend::Sqlite(conn))
}

/// Switches the file to WAL, once: a file already in WAL is left alone (asking again takes no
/// lock), and switching a new file waits for a concurrent opener that switches it too.
fn set_wal(conn: &rusqlite::Connection) -> Result<(), rusqlite::Error> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                // Another opener is switching the same new file: try again until the deadline.
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

fn open_sqlite_read(path: &std::path::Path) -> Result<Backend, HistoryError> {
    use rusqlite::OpenFlags;
    if !path.is_file() {
        return Err(HistoryError::NotFound(format!(
            "no history store at {} (`goldgate history ingest` creates one)",
            path.display()
        )));
    }
    let open_error = |source| HistoryError::OpenSqlite {
        path: path.to_path_buf(),
        source,
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = rusqlite::Connection::open_with_flags(path, flags).map_err(open_error)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    match conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => return Ok(Backend::Sqlite(conn)),
        // A WAL file needs its `-shm` beside it, which a read-only folder cannot take. With no
        // `-wal` file every row is in the database file itself: read it as immutable.
        Err(rusqlite::Error::SqliteFailure(e, _))
            if matches!(
                e.code,
                rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly
            ) && !goldgate_core::fsio::exists(&sidecar(path, "-wal")) =>
        {
            drop(conn);
        }
        Err(e) => return Err(open_error(e)),
    }
    let uri = format!("file:{}?immutable=1", uri_path(path));
    let conn = rusqlite::Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
        .map_err(open_error)?;
    Ok(Backend::Sqlite(conn))
}

/// `history.sqlite` → `history.sqlite-wal`.
fn sidecar(path: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    std::path::PathBuf::from(name)
}

/// A path as the path part of an SQLite `file:` URI: every byte but unreserved ones and `/`
/// percent-encoded (`?`, `#` and `%` would end or escape it).
fn uri_path(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn text(c: &Cell) -> String {
    c.text().unwrap_or_default().to_owned()
}

/// Groups `(run, commit, branch, started, job, value, path)` rows into one point per run.
fn points(rows: &[Vec<Cell>]) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for r in rows {
        let Some(value) = r[5].real() else { continue };
        let run_id = text(&r[0]);
        let job = (text(&r[4]), value, text(&r[6]));
        match out.last_mut() {
            Some(p) if p.run_id == run_id => p.jobs.push(job),
            _ => out.push(Point {
                run_id,
                commit: text(&r[1]),
                branch: text(&r[2]),
                started_at: text(&r[3]),
                jobs: vec![job],
            }),
        }
    }
    out
}

fn ingest_run(
    b: &mut Backend,
    run: &RunRow,
    jobs: &[JobRow],
    what: &str,
) -> Result<IngestCount, HistoryError> {
    let mut count = IngestCount::default();
    let existing = b.query(
        "SELECT id FROM runs WHERE run_id = ?",
        &[run.run_id.as_str().into()],
        what,
    )?;
    let run_ref = match existing.first().and_then(|r| r[0].int()) {
        Some(id) => id,
        None => {
            count.runs = 1;
            insert_run(b, run, what)?
        }
    };
    for job in jobs {
        let stored = b.query(
            "SELECT id FROM jobs WHERE run_ref = ? AND job_id = ?",
            &[run_ref.into(), job.job_id.as_str().into()],
            what,
        )?;
        if stored.is_empty() {
            let (metrics, samples) = insert_job(b, run_ref, job, what)?;
            count.jobs += 1;
            count.metrics += metrics;
            count.samples += samples;
        } else {
            count.skipped_jobs += 1;
        }
    }
    Ok(count)
}

fn insert_run(b: &mut Backend, run: &RunRow, what: &str) -> Result<i64, HistoryError> {
    let rows = b.query(
        "INSERT INTO runs (run_id, started_at, commit_sha, branch, platform, goldgate_version, \
         ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        &[
            run.run_id.as_str().into(),
            run.started_at.as_str().into(),
            run.commit.as_str().into(),
            run.branch.as_str().into(),
            run.platform.as_str().into(),
            run.goldgate_version.as_str().into(),
            jiff::Timestamp::now().to_string().into(),
        ],
        what,
    )?;
    returned_id(&rows, what)
}

fn returned_id(rows: &[Vec<Cell>], what: &str) -> Result<i64, HistoryError> {
    rows.first()
        .and_then(|r| r.first())
        .and_then(Cell::int)
        .ok_or_else(|| HistoryError::NotFound(format!("{what}: the database returned no id")))
}

fn insert_job(
    b: &mut Backend,
    run_ref: i64,
    job: &JobRow,
    what: &str,
) -> Result<(u64, u64), HistoryError> {
    let rows = b.query(
        "INSERT INTO jobs (run_ref, job_id, case_name, variant, repeat_no, platform, outcome, \
         passed, started_at, wall_seconds, gpu_fingerprint, host, results_path) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        &[
            run_ref.into(),
            job.job_id.as_str().into(),
            job.case.as_str().into(),
            job.variant.as_str().into(),
            job.repeat.into(),
            job.platform.as_str().into(),
            job.outcome.as_str().into(),
            i64::from(job.passed).into(),
            job.started_at.as_str().into(),
            Some(job.wall_seconds).into(),
            job.gpu_fingerprint.as_str().into(),
            job.host.as_str().into(),
            job.results_path.as_str().into(),
        ],
        what,
    )?;
    let job_ref = returned_id(&rows, what)?;
    // One statement per chunk of rows: a round trip to PostgreSQL costs more than the row.
    for chunk in job.metrics.chunks(SAMPLE_BATCH) {
        let rows = vec!["(?, ?, ?, ?)"; chunk.len()].join(", ");
        let sql = format!("INSERT INTO metrics (job_ref, name, value, points) VALUES {rows}");
        let params: Vec<Value> = chunk
            .iter()
            .flat_map(|(name, value, points)| {
                [
                    job_ref.into(),
                    name.as_str().into(),
                    (*value).into(),
                    (*points).into(),
                ]
            })
            .collect();
        b.execute(&sql, &params, what)?;
    }
    for chunk in job.samples.chunks(SAMPLE_BATCH) {
        insert_samples(b, job_ref, chunk, what)?;
    }
    Ok((job.metrics.len() as u64, job.samples.len() as u64))
}

fn insert_samples(
    b: &mut Backend,
    job_ref: i64,
    chunk: &[(String, i64, Option<f64>)],
    what: &str,
) -> Result<(), HistoryError> {
    let rows = vec!["(?, ?, ?, ?)"; chunk.len()].join(", ");
    let sql = format!("INSERT INTO samples (job_ref, name, step, value) VALUES {rows}");
    let params: Vec<Value> = chunk
        .iter()
        .flat_map(|(name, step, value)| {
            [
                job_ref.into(),
                name.as_str().into(),
                (*step).into(),
                (*value).into(),
            ]
        })
        .collect();
    b.execute(&sql, &params, what)?;
    Ok(())
}

fn delete_run(b: &mut Backend, id: i64) -> Result<(), HistoryError> {
    let what = "pruning a run";
    for sql in [
        "DELETE FROM samples WHERE job_ref IN (SELECT id FROM jobs WHERE run_ref = ?)",
        "DELETE FROM metrics WHERE job_ref IN (SELECT id FROM jobs WHERE run_ref = ?)",
        "DELETE FROM jobs WHERE run_ref = ?",
        "DELETE FROM runs WHERE id = ?",
    ] {
        b.execute(sql, &[id.into()], what)?;
    }
    Ok(())
}
