//! Stage "compare": errors of comparing, blessing and calibrating. A regression is not an
//! error (it is a [`goldgate_schema::Verdict`]); these are the cases where no honest verdict exists.

use std::path::PathBuf;

use goldgate_core::golden::GoldenError;
use goldgate_core::records::RecordError;

/// Comparing, blessing or calibrating failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CompareError {
    /// Results could not be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Records(#[from] RecordError),
    /// A golden file exists but cannot be used (the message names the file).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Golden(#[from] GoldenError),
    /// The case's `model_config.yaml` (for its `METRICS`) cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Case(#[from] goldgate_core::case::CaseError),
    /// The job ran on hardware the golden platform does not describe.
    #[error("{job}: {problem} ({})", golden.display())]
    #[diagnostic(help(
        "compare against the platform the job ran on (`--platform`), or pass `--allow-env-mismatch`"
    ))]
    EnvMismatch {
        job: String,
        golden: PathBuf,
        problem: String,
    },
    /// `bless` was asked to bless a failed job.
    #[error("refusing to bless {job}: it {outcome}")]
    #[diagnostic(help("fix or rerun the job; only passed jobs become golden values"))]
    BlessFailed { job: String, outcome: String },
    /// `bless` found nothing it may bless for a case.
    #[error("nothing to bless for {case}: {reason}")]
    #[diagnostic(help(
        "one golden file per case and platform holds the default variant: run the case without `--variant`/`--matrix`"
    ))]
    BlessNothing { case: String, reason: String },
    /// `--run ID` names no run of the results folder.
    #[error("no run `{run}` in the results folder (runs: {available})")]
    #[diagnostic(help("run ids are the folder names under the results folder"))]
    UnknownRun { run: String, available: String },
    /// The results folder holds only jobs of `goldgate ab` (none to take by default).
    #[error(
        "the results folder holds only A/B jobs ({count} of `goldgate ab`, e.g. run {example}): an A/B's arms are not runs to judge or bless"
    )]
    #[diagnostic(help(
        "`goldgate ab` judged them already (its ab.json and --json/--markdown reports); to take one arm's job anyway, name its run with --run ID"
    ))]
    OnlyAbJobs { count: usize, example: String },
    /// A saved comparison (`compare --json`) cannot be used.
    #[error("{}: {message}", path.display())]
    #[diagnostic(help(
        "pass the JSON that `goldgate compare --json FILE` (or `run --json FILE`) wrote, from the same goldgate version"
    ))]
    SavedComparison { path: PathBuf, message: String },
    /// A saved A/B result (`ab --json`, `ab.json`) cannot be used.
    #[error("{}: {message}", path.display())]
    #[diagnostic(help(
        "pass the JSON that `goldgate ab --json FILE` wrote (or the A/B folder's ab.json), from the same goldgate version"
    ))]
    SavedAb { path: PathBuf, message: String },
    /// Nothing to render: no saved comparison was given.
    #[error("no comparison to render")]
    #[diagnostic(help("pass --comparison FILE (repeatable) or --results DIR"))]
    NoComparison,
    /// A case named on the command line has no results.
    #[error("no results for case {case} under {}", dir.display())]
    UnknownCase { case: String, dir: PathBuf },
    /// `calibrate --write` cannot edit the configuration safely.
    #[error("{}:{line}: {message}", path.display())]
    ConfigEdit {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A name would place a golden file outside the golden root.
    #[error("refusing to bless {case}: {message}")]
    #[diagnostic(help("golden files are written only under --golden-root"))]
    UnsafeName { case: String, message: String },
    /// A selected run did not finish: `run.json` lists jobs without an outcome or without
    /// their `results.json` (goldgate was killed, or the disk filled up).
    #[error(
        "run {run} is incomplete: {missing} of {total} job(s) have no result ({})\n{list}",
        index.display()
    )]
    #[diagnostic(help(
        "an incomplete run never passes the gate: rerun it (`goldgate run`), or {instead}"
    ))]
    Incomplete {
        run: String,
        index: PathBuf,
        missing: usize,
        total: usize,
        list: String,
        /// What else to read: `--run <the newest complete run>`, or `--run ID` in general.
        instead: String,
    },
    /// A run's `run.json` and a job's `results.json` say different things about how the job
    /// ended: one of them was edited or written by another goldgate, and neither can be
    /// trusted to gate.
    #[error(
        "run {run}: {} and the jobs' results.json disagree on how {count} job(s) ended\n{list}",
        index.display()
    )]
    #[diagnostic(help(
        "a job's outcome is its results.json's, and run.json must say the same: rerun the job \
         (`goldgate run`), or judge another run with --run ID"
    ))]
    Disagree {
        run: String,
        index: PathBuf,
        count: usize,
        list: String,
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// TensorBoard event files could not be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Tensorboard(#[from] goldgate_core::tensorboard::TensorboardError),
    /// Megatron's golden script would write no golden file from these event files.
    #[error("{}: {message}", dir.display())]
    #[diagnostic(help(
        "Megatron's get_test_results_from_tensorboard_logs.py writes nothing here either"
    ))]
    TensorboardGolden { dir: PathBuf, message: String },
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
