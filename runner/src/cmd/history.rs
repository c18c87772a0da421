//! `goldgate history`: runs the subcommand its flags (`history_args`) name against the store
//! they name (`history_store`) — `ingest` a results folder (idempotent), `prune` old runs,
//! `annotate` an intended change (a new baseline) here; `show` and `changes` read it
//! (`history_show`), `site` draws it (`history_site`).

use std::path::Path;

use super::error::AppError;
use super::history_args::{AnnotateArgs, Args, Command, IngestArgs, PruneArgs};
use super::history_store::{now, open, open_read};
use super::output::{out, outln};
use goldgate_judge::history::folder;
use goldgate_judge::history::ingest::{self, IngestContext, IngestCount, JobRow};
use goldgate_judge::history::series::Annotation;
use goldgate_judge::history::{HistoryError, Store};
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    if let Command::Changes(a) = &args.command
        && let Some(path) = &a.input
    {
        return super::history_show::changes_of_file(path, a);
    }
    let mut store = match &args.command {
        Command::Show(_) | Command::Changes(_) | Command::Site(_) => open_read(&args.store)?,
        Command::Ingest(_) | Command::Prune(_) | Command::Annotate(_) => open(&args.store)?,
    };
    match args.command {
        Command::Ingest(a) => ingest_cmd(&mut store, &a),
        Command::Show(a) => super::history_show::show(&mut store, &a),
        Command::Prune(a) => prune(&mut store, &a),
        Command::Annotate(a) => annotate(&mut store, &a),
        Command::Changes(a) => super::history_show::changes(&mut store, &a),
        Command::Site(a) => super::history_site::site(&mut store, &a),
    }
}

/// Reads the runs of `dir` — only the jobs each run's run.json names ([`folder::read`]) — and
/// stores them; returns what was added and a note per listed job left out.
pub fn ingest_dir(
    store: &mut Store,
    dir: &Path,
    ctx: &IngestContext,
) -> Result<(IngestCount, Vec<String>), AppError> {
    let found = folder::read(dir)?;
    if found.runs.is_empty() {
        return Err(HistoryError::NotFound(format!(
            "no run.json in {} or its folders: ingest stores the runs `goldgate run` wrote \
             (pass its --out folder, or one OUT/<run-id>)",
            dir.display()
        ))
        .into());
    }
    let mut total = IngestCount::default();
    for run in &found.runs {
        // An A/B's jobs are arms of a comparison, not runs of a branch: a planted B arm stored
        // as `main` would become main's history.
        let jobs: Vec<_> = run.jobs.iter().filter(|j| !j.record.is_ab()).collect();
        total.ab_jobs += (run.jobs.len() - jobs.len()) as u64;
        let records: Vec<&RunRecord> = jobs.iter().map(|j| &j.record).collect();
        let Some(row) = ingest::run_row(&records, ctx) else {
            continue;
        };
        let rows: Vec<_> = jobs
            .iter()
            .map(|j| JobRow {
                passed: j.passed(),
                outcome: j.outcome_label(),
                ..ingest::job_row(&j.record, &j.path)
            })
            .collect();
        total.add(store.ingest(&row, &rows)?);
    }
    Ok((total, found.left_out))
}

fn ingest_cmd(store: &mut Store, a: &IngestArgs) -> Result<Exit, AppError> {
    let ctx = IngestContext {
        commit: a.commit.clone().filter(|c| !c.is_empty()),
        checkout: checkout_commit(),
        branch: a.branch.clone(),
        now: now(),
    };
    let (n, left_out) = ingest_dir(store, &a.dir, &ctx)?;
    outln!(
        "ingested {} runs, {} jobs ({} already stored), {} metrics, {} samples into {}",
        n.runs,
        n.jobs,
        n.skipped_jobs,
        n.metrics,
        n.samples,
        store.location()
    );
    if n.ab_jobs > 0 {
        outln!(
            "left out {} job(s) of `goldgate ab`: an A/B's arms are not runs of a branch (its ab.json holds the verdict)",
            n.ab_jobs
        );
    }
    for note in &left_out {
        outln!("  not stored: {note}");
    }
    Ok(Exit::Pass)
}

/// The commit checked out in the working directory (`git rev-parse HEAD`), when it is a git
/// checkout: what a run is of when neither `--commit`, `$GITHUB_SHA` nor the records say.
fn checkout_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--verify", "HEAD"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}

fn prune(store: &mut Store, a: &PruneArgs) -> Result<Exit, AppError> {
    if a.before.is_none() && a.keep.is_none() {
        return Err(HistoryError::Usage(
            "history prune needs --before TIME or --keep N (it never removes everything unasked)"
                .into(),
        )
        .into());
    }
    let plan = store.prune(a.before, a.keep, a.dry_run)?;
    out!(
        "{}",
        goldgate_judge::report::history::prune_text(
            &plan,
            a.dry_run,
            &store.location().to_string()
        )
    );
    Ok(Exit::Pass)
}

fn annotate(store: &mut Store, a: &AnnotateArgs) -> Result<Exit, AppError> {
    let note = Annotation {
        case: a.case.clone(),
        metric: a.metric.clone(),
        commit: a.commit.clone(),
        note: a.note.clone(),
        created_at: now(),
    };
    store.annotate(&note)?;
    outln!(
        "annotated {} ({}) at {}: {}",
        note.case,
        note.metric,
        goldgate_judge::report::history::short(&note.commit),
        note.note
    );
    Ok(Exit::Pass)
}
