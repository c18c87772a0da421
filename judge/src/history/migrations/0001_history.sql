-- goldgate history store, schema version 1. One text for SQLite and PostgreSQL: `{id}` is the
-- one dialect difference (an auto-numbered primary key); every other type is written the same.
CREATE TABLE runs (
    id {id},
    run_id TEXT NOT NULL UNIQUE,
    started_at TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    branch TEXT NOT NULL,
    platform TEXT NOT NULL,
    goldgate_version TEXT NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE TABLE jobs (
    id {id},
    run_ref BIGINT NOT NULL REFERENCES runs (id),
    job_id TEXT NOT NULL,
    case_name TEXT NOT NULL,
    variant TEXT NOT NULL,
    repeat_no BIGINT NOT NULL,
    platform TEXT NOT NULL,
    outcome TEXT NOT NULL,
    passed BIGINT NOT NULL,
    started_at TEXT NOT NULL,
    wall_seconds DOUBLE PRECISION NOT NULL,
    gpu_fingerprint TEXT NOT NULL,
    host TEXT NOT NULL,
    results_path TEXT NOT NULL,
    UNIQUE (run_ref, job_id)
);
CREATE INDEX jobs_series ON jobs (case_name, variant, platform);
-- One value per job and metric: the job's summary (see history::ingest::summary).
CREATE TABLE metrics (
    job_ref BIGINT NOT NULL REFERENCES jobs (id),
    name TEXT NOT NULL,
    value DOUBLE PRECISION,
    points BIGINT NOT NULL,
    PRIMARY KEY (job_ref, name)
);
-- Every per-step or per-save value the job recorded; NULL is a NaN.
CREATE TABLE samples (
    job_ref BIGINT NOT NULL REFERENCES jobs (id),
    name TEXT NOT NULL,
    step BIGINT NOT NULL,
    value DOUBLE PRECISION,
    PRIMARY KEY (job_ref, name, step)
);
-- An intended change: from this commit on, the series has a new baseline.
CREATE TABLE annotations (
    id {id},
    case_name TEXT NOT NULL,
    metric TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    note TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX annotations_case ON annotations (case_name);
