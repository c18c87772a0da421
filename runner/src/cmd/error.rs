//! Commands: the one exit-code decision point. Stages return their own typed errors; `?`
//! wraps each in an [`AppError`], and [`AppError::exit`] maps every variant of every stage's
//! error to its documented code — one match per stage, no wildcard arm, so a new variant must
//! be given its code here (nextest's single match in its errors module). [`CmdError`] holds
//! the command layer's own errors (a selection that names nothing, a bad flag value).

use std::fmt;
use std::path::PathBuf;

use goldgate_core::case::{CaseError, RecipeError};
use goldgate_core::config::ConfigError;
use goldgate_core::golden::GoldenError;
use goldgate_core::log::LogError;
use goldgate_core::records::RecordError;
use goldgate_core::tensorboard::TensorboardError;
use goldgate_judge::compare::CompareError;
use goldgate_judge::github::GithubError;
use goldgate_judge::history::HistoryError;
use goldgate_judge::report::error::ReportError;
use goldgate_record::launch::{LaunchError, SettleError};
use goldgate_record::plan::{FilterError, PlanError, SelectError};
use goldgate_record::run::RunError;
use goldgate_schema::Exit;

/// Every error a command can end with: each stage's own error, unchanged, or the command
/// layer's. [`AppError::exit`] is the one place that decides its exit code.
#[derive(thiserror::Error, miette::Diagnostic)]
pub enum AppError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Case(#[from] CaseError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Recipe(#[from] RecipeError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Golden(#[from] GoldenError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Filter(#[from] FilterError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Select(#[from] SelectError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Settle(#[from] SettleError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Tensorboard(#[from] TensorboardError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Compare(#[from] CompareError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Github(#[from] GithubError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cmd(#[from] CmdError),
}

impl AppError {
    /// The documented exit code of this error: `Usage` (2) for what the user can fix in their
    /// flags or files, `Failure` (3) for jobs, the machine and remote services. Every variant
    /// is named, so a new one cannot get a code by accident.
    pub fn exit(&self) -> Exit {
        match self {
            AppError::Case(e) => case(e),
            AppError::Recipe(e) => recipe(e),
            AppError::Golden(e) => golden(e),
            AppError::Config(e) => config(e),
            AppError::Plan(e) => plan(e),
            AppError::Filter(e) => filter(e),
            AppError::Select(e) => select(e),
            AppError::Launch(e) => launch(e),
            AppError::Settle(e) => settle(e),
            AppError::Log(e) => log(e),
            AppError::Tensorboard(e) => tensorboard(e),
            AppError::Record(e) => record(e),
            AppError::Run(e) => run(e),
            AppError::Compare(e) => compare(e),
            AppError::Report(e) => report(e),
            AppError::Github(e) => github(e),
            AppError::History(e) => history(e),
            AppError::Cmd(e) => cmd(e),
        }
    }
}

impl fmt::Debug for AppError {
    /// The error as goldgate prints it and its exit code (what a test wants to see).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = super::output::render_error(self, None, false);
        write!(f, "{text} (exit {})", self.exit().code())
    }
}

fn history(e: &HistoryError) -> Exit {
    match e {
        HistoryError::NotFound(_) | HistoryError::Usage(_) | HistoryError::TooNew { .. } => {
            Exit::Usage
        }
        HistoryError::OpenSqlite { .. }
        | HistoryError::ReadOnly { .. }
        | HistoryError::Connect { .. }
        | HistoryError::Sqlite { .. }
        | HistoryError::Postgres { .. }
        | HistoryError::ColumnType { .. }
        | HistoryError::Folder { .. }
        | HistoryError::Write { .. } => Exit::Failure,
    }
}

fn case(e: &CaseError) -> Exit {
    match e {
        CaseError::Read { .. }
        | CaseError::Empty { .. }
        | CaseError::TooLarge { .. }
        | CaseError::NotUtf8 { .. }
        | CaseError::Syntax { .. }
        | CaseError::Limit { .. }
        | CaseError::WrongType { .. }
        | CaseError::UnknownValue { .. }
        | CaseError::Missing { .. }
        | CaseError::NotADirectory { .. } => Exit::Usage,
    }
}

fn recipe(e: &RecipeError) -> Exit {
    match e {
        RecipeError::Read { .. } | RecipeError::TooLarge { .. } | RecipeError::Invalid { .. } => {
            Exit::Usage
        }
    }
}

fn golden(e: &GoldenError) -> Exit {
    match e {
        GoldenError::Read { .. }
        | GoldenError::Empty { .. }
        | GoldenError::TooLarge { .. }
        | GoldenError::NotUtf8 { .. }
        | GoldenError::Json { .. }
        | GoldenError::Shape { .. }
        | GoldenError::Inference { .. } => Exit::Usage,
        GoldenError::Write { .. } => Exit::Failure,
    }
}

fn config(e: &ConfigError) -> Exit {
    match e {
        ConfigError::Read { .. }
        | ConfigError::Invalid { .. }
        | ConfigError::NoPlatform
        | ConfigError::UnknownPlatform { .. } => Exit::Usage,
    }
}

fn plan(e: &PlanError) -> Exit {
    match e {
        PlanError::VariantSyntax { .. }
        | PlanError::UnknownAxis { .. }
        | PlanError::UnknownValue { .. }
        | PlanError::AxisTwice { .. }
        | PlanError::NotAllowed { .. }
        | PlanError::CaseVariants { .. }
        | PlanError::Unresolved { .. }
        | PlanError::Ranks { .. }
        | PlanError::Argv { .. }
        | PlanError::EnvName { .. }
        | PlanError::ZeroRepeat
        | PlanError::NothingToRun { .. } => Exit::Usage,
    }
}

fn select(e: &SelectError) -> Exit {
    match e {
        SelectError::Case(e) => case(e),
        SelectError::Recipe(e) => recipe(e),
        SelectError::Config(e) => config(e),
        SelectError::Plan(e) => plan(e),
        SelectError::Filter(e) => filter(e),
        SelectError::NoRecipes { .. } | SelectError::CaseNotLoaded { .. } => Exit::Usage,
        SelectError::Cwd { .. } => Exit::Failure,
    }
}

fn filter(e: &FilterError) -> Exit {
    match e {
        FilterError::NoMatch { .. } | FilterError::Regex { .. } => Exit::Usage,
    }
}

/// A program that cannot be found is the machine's state, not the user's flags: `run` records
/// it as the job's launch error (exit 3), and every other path says the same.
fn launch(e: &LaunchError) -> Exit {
    match e {
        LaunchError::EmptyArgv
        | LaunchError::MissingCwd { .. }
        | LaunchError::TooFewGpus { .. } => Exit::Usage,
        LaunchError::ProgramNotFound { .. }
        | LaunchError::Spawn { .. }
        | LaunchError::LogFile { .. }
        | LaunchError::Plumbing { .. }
        | LaunchError::FreePort { .. }
        | LaunchError::Wait { .. }
        | LaunchError::Signals { .. } => Exit::Failure,
    }
}

/// A flag the machine cannot honour is the user's choice to change, not a job failure.
fn settle(e: &SettleError) -> Exit {
    match e {
        SettleError::NotPermitted { .. } => Exit::Usage,
    }
}

fn log(e: &LogError) -> Exit {
    match e {
        LogError::Open { .. } | LogError::Folder { .. } => Exit::Usage,
        LogError::Read { .. } => Exit::Failure,
    }
}

fn record(e: &RecordError) -> Exit {
    match e {
        RecordError::Read { .. }
        | RecordError::Parse { .. }
        | RecordError::Version { .. }
        | RecordError::Name { .. }
        | RecordError::TooLarge { .. }
        | RecordError::Empty { .. } => Exit::Usage,
    }
}

fn run(e: &RunError) -> Exit {
    match e {
        RunError::Refused { .. } => Exit::Usage,
        RunError::Encode { .. }
        | RunError::Write { .. }
        | RunError::Saves { .. }
        | RunError::Slurm(_)
        | RunError::Cwd { .. } => Exit::Failure,
    }
}

fn compare(e: &CompareError) -> Exit {
    match e {
        CompareError::Records(e) => record(e),
        CompareError::Golden(e) => golden(e),
        CompareError::Case(e) => case(e),
        CompareError::EnvMismatch { .. }
        | CompareError::BlessFailed { .. }
        | CompareError::BlessNothing { .. }
        | CompareError::UnknownRun { .. }
        | CompareError::UnknownCase { .. }
        | CompareError::ConfigEdit { .. }
        | CompareError::Read { .. }
        | CompareError::SavedComparison { .. }
        | CompareError::SavedAb { .. }
        | CompareError::OnlyAbJobs { .. }
        | CompareError::UnsafeName { .. }
        | CompareError::TensorboardGolden { .. }
        | CompareError::NoComparison => Exit::Usage,
        CompareError::Tensorboard(e) => tensorboard(e),
        // An incomplete run is a job that did not finish: never a pass, never "bad input".
        CompareError::Write { .. }
        | CompareError::Incomplete { .. }
        | CompareError::Disagree { .. } => Exit::Failure,
    }
}

/// An event file that is missing, unreadable or damaged is bad input.
fn tensorboard(e: &TensorboardError) -> Exit {
    match e {
        TensorboardError::List { .. }
        | TensorboardError::NoEventFiles { .. }
        | TensorboardError::Read { .. }
        | TensorboardError::Damaged { .. } => Exit::Usage,
    }
}

fn report(e: &ReportError) -> Exit {
    match e {
        ReportError::Junit { .. }
        | ReportError::Json { .. }
        | ReportError::Write { .. }
        | ReportError::Svg { .. } => Exit::Failure,
    }
}

/// Bad local set-up is a usage error; GitHub refusing or failing is an infrastructure one.
fn github(e: &GithubError) -> Exit {
    match e {
        GithubError::MissingToken
        | GithubError::BadToken
        | GithubError::MissingRepo
        | GithubError::BadRepo(_)
        | GithubError::BadKey(_)
        | GithubError::BadApiUrl { .. }
        | GithubError::MissingPr
        | GithubError::EventRead { .. }
        | GithubError::EventJson { .. }
        | GithubError::EventWithoutPr { .. } => Exit::Usage,
        GithubError::Setup { .. }
        | GithubError::Unauthorized { .. }
        | GithubError::Forbidden { .. }
        | GithubError::NotFound { .. }
        | GithubError::RateLimited { .. }
        | GithubError::Server { .. }
        | GithubError::Transport { .. }
        | GithubError::Unexpected { .. }
        | GithubError::BadResponse { .. }
        | GithubError::TooManyPages { .. } => Exit::Failure,
    }
}

fn cmd(e: &CmdError) -> Exit {
    match e {
        CmdError::BadDir { .. }
        | CmdError::NoEarlierRun { .. }
        | CmdError::NoRun { .. }
        | CmdError::ForeignRunId { .. }
        | CmdError::LiveRun { .. }
        | CmdError::NotPlanned
        | CmdError::NothingToRun
        | CmdError::NotOneJob { .. }
        | CmdError::BadValue { .. }
        | CmdError::NotAFolder { .. }
        | CmdError::BudgetFitsNoPair { .. }
        | CmdError::NotSwitchable { .. }
        | CmdError::NoCovariate { .. }
        | CmdError::NothingToJudge { .. } => Exit::Usage,
        CmdError::Cwd { .. }
        | CmdError::Write { .. }
        | CmdError::Encode { .. }
        | CmdError::Runtime { .. }
        | CmdError::InJob { .. } => Exit::Failure,
    }
}

/// What a command can fail on besides its stages' errors.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CmdError {
    /// `--out` (or another folder) cannot be made absolute.
    #[error("cannot use {}: {source}", dir.display())]
    BadDir {
        dir: PathBuf,
        source: std::io::Error,
    },

    /// The current directory cannot be read (relative entries and folders need it).
    #[error("cannot read the current directory: {source}")]
    Cwd { source: std::io::Error },

    /// `--rerun-failed` found no run to rerun.
    #[error("--rerun-failed: no earlier run under {}", out.display())]
    #[diagnostic(help("--out names the folder of runs"))]
    NoEarlierRun { out: PathBuf },

    /// `cancel`: no such run (or no run at all) under `--out`.
    #[error(
        "no {} under {}",
        run.as_ref().map_or_else(|| "run".to_owned(), |r| format!("run {r}")),
        out.display()
    )]
    #[diagnostic(help("--out names the folder of runs, --run one of them"))]
    NoRun { out: PathBuf, run: Option<String> },

    /// `cancel`: the run's `run.json` names another run than its folder does.
    #[error("not cancelling: {} says run `{found}`, but it is the run.json of folder `{folder}`", path.display())]
    #[diagnostic(help(
        "a run's jobs are found by its id; a run.json edited or copied from another run would cancel that run's jobs"
    ))]
    ForeignRunId {
        path: PathBuf,
        found: String,
        folder: String,
    },

    /// `cancel`: the run may still be running; its jobs are in use.
    #[error("not cancelling the jobs of run {run}: {why}")]
    #[diagnostic(help(
        "stop that goldgate (Ctrl-C cancels its jobs), or pass --force to cancel them under it"
    ))]
    LiveRun { run: String, why: String },

    /// Some selected cases do not plan; `run` starts nothing.
    #[error("not running: the cases above do not plan")]
    #[diagnostic(help("`goldgate plan` shows the same"))]
    NotPlanned,

    /// The selection planned no job at all.
    #[error("nothing to run: the selection planned no job")]
    NothingToRun,

    /// `repro` needs exactly one job.
    #[error("repro makes one job, but the selection gives {count}: {names}")]
    #[diagnostic(help("use --variant instead of --matrix, and --repeat N for the N-th repeat"))]
    NotOneJob { count: usize, names: String },

    /// A flag's value is out of its range.
    #[error("{message}")]
    BadValue { message: &'static str },

    /// A flag that names a folder names something else.
    #[error("{flag} {}: {problem}", path.display())]
    #[diagnostic(help("give the folder the case's relative entry words resolve in (a checkout)"))]
    NotAFolder {
        flag: String,
        path: PathBuf,
        problem: String,
    },

    /// `ab --budget` left no time for one pair: `--budget 500 ms fits no pair: one job took
    /// 412 ms, …`, or none ran (times in the unit that fits them).
    #[error(
        "--budget {} fits no pair: {}",
        goldgate_core::units::seconds(*.budget),
        budget_spent(.job_seconds)
    )]
    #[diagnostic(help(
        "give --budget at least three jobs' time (two for the pair and a fifth of margin each), or leave it out"
    ))]
    BudgetFitsNoPair {
        budget: f64,
        /// The slowest job's time; `None` when the budget ran out before any job.
        job_seconds: Option<f64>,
    },
    /// `ab --within-job` was asked to switch what a running job cannot switch.
    #[error("{message}")]
    #[diagnostic(help(
        "drop --within-job (and the switches) to compare this with job-level `goldgate ab`"
    ))]
    NotSwitchable { message: String },

    /// `ab --covariate` where it cannot apply: within-job, or a platform without a measured slope.
    #[error("--covariate: {message}")]
    #[diagnostic(help(
        "the slope is measured, not guessed: run the covariate study on the platform's A/A records (docs/archive/ab-study/ab-study.sh) and set ab.platforms.<platform>.covariate in goldgate.yaml"
    ))]
    NoCovariate { message: String },

    /// `ab --within-job`: a job's records cannot be judged within the job.
    #[error("within-job A/B: {message}")]
    #[diagnostic(help("the job's folder holds its probe files (probe/) and results.json"))]
    InJob { message: String },

    /// `power` found nothing it can judge over repeats.
    #[error(
        "no metric judged over repeats was recorded by two or more passed jobs under {}",
        results.display()
    )]
    #[diagnostic(help("run the same job several times, e.g. `goldgate run CASE --repeat 10`"))]
    NothingToJudge { results: PathBuf },

    /// A file the command writes could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    /// Output could not be encoded as JSON.
    #[error("cannot encode the summaries as json: {source}")]
    Encode { source: serde_json::Error },

    /// The async runtime for the GitHub client could not start.
    #[error("cannot start the async runtime: {source}")]
    Runtime { source: std::io::Error },
}

/// What `--budget` went on before a pair could start: one job's time, or no job at all.
fn budget_spent(job_seconds: &Option<f64>) -> String {
    match job_seconds {
        Some(s) => format!(
            "one job took {}, and a pair is two",
            goldgate_core::units::seconds(*s)
        ),
        None => "it ran out before the first job started".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_a_failure_on_every_path() {
        let missing = LaunchError::ProgramNotFound {
            program: "trainer".into(),
            searched: "/bin".into(),
        };
        assert_eq!(AppError::from(missing).exit(), Exit::Failure);
    }

    #[test]
    fn github_refusals_are_failures_and_bad_input_is_usage() {
        let code = |e: GithubError| AppError::from(e).exit();
        let op = "listing comments on o/r#1".to_string();
        assert_eq!(
            code(GithubError::Unauthorized { op: op.clone() }),
            Exit::Failure
        );
        assert_eq!(code(GithubError::NotFound { op }), Exit::Failure);
        assert_eq!(code(GithubError::MissingToken), Exit::Usage);
        assert_eq!(code(GithubError::BadRepo("x".into())), Exit::Usage);
    }

    #[test]
    fn too_many_jobs_for_the_gpus_is_a_usage_error() {
        let err = goldgate_record::launch::gpu_slices(
            &goldgate_record::launch::visible_gpus(4, None),
            2,
            3,
        );
        assert_eq!(AppError::from(err.unwrap_err()).exit(), Exit::Usage);
    }

    #[test]
    fn nested_stage_errors_keep_their_stage_code() {
        let write = GoldenError::Write {
            path: "g.json".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(
            AppError::from(CompareError::Golden(write)).exit(),
            Exit::Failure
        );
        let refused = RunError::Refused {
            executor: "local",
            count: 1,
            list: "  a: needs 2 nodes".into(),
            hint: "use slurm".into(),
        };
        let app = AppError::from(refused);
        assert_eq!(app.exit(), Exit::Usage);
        let shown = format!("{app:?}");
        assert!(
            shown.contains("needs 2 nodes") && shown.ends_with("(exit 2)"),
            "{shown}"
        );
    }
}
