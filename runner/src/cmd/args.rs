//! Command-line argument groups shared by several subcommands (`#[command(flatten)]`), and the
//! value parsers they use. Each flag and its default is written once here.

use goldgate_core::duration::parse_duration;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{AppError, CmdError};
use super::output::errln;
use goldgate_core::config::{Config, ConfigSource, ExecutorChoice, Platform};
use goldgate_record::launch::Settle;
use goldgate_record::observe::probe::install::ProbeMode;
use goldgate_record::run::{RunError, RunOptions};

/// `--root`: where the test cases are.
#[derive(clap::Args, Debug, Clone)]
pub struct CaseRoot {
    /// Root of the test-case tree (`<root>/<model>/<case>/model_config.yaml`; goldens beside a
    /// case are found too).
    #[arg(
        id = "root",
        long = "root",
        value_name = "ROOT",
        default_value = "test_cases"
    )]
    pub path: PathBuf,
}

/// `--golden-root`: goldgate's tree of golden files.
#[derive(clap::Args, Debug, Clone)]
pub struct GoldenRoot {
    /// Golden root (`<golden-root>/<model>/<case>/golden_values_*.json`, other variants under
    /// `variants/`): `bless` writes there; `compare`, `run`, `list` and `check` also look there
    /// (besides the goldens next to each case).
    #[arg(
        id = "golden_root",
        long = "golden-root",
        value_name = "GOLDEN_ROOT",
        default_value = "golden"
    )]
    pub path: PathBuf,
}

/// `--run` and `--all-runs`: which runs of a results folder a command reads — `compare` and
/// `comment` judge them, `bless` blesses them, `report` shows them, `calibrate` measures them.
/// By default the newest run (`compare::runs`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunPick {
    /// Only these runs of the folder (run ids: the folder names under it; repeatable); their
    /// repeats merge. Default: the newest run.
    #[arg(long = "run", value_name = "RUN_ID")]
    pub runs: Vec<String>,
    /// Every run in the folder, repeats of the same job merged across runs.
    #[arg(long, conflicts_with = "runs")]
    pub all_runs: bool,
}

impl RunPick {
    /// The runs these flags pick.
    pub fn selection(&self) -> goldgate_judge::compare::RunSelection {
        goldgate_judge::compare::RunSelection::from_flags(&self.runs, self.all_runs)
    }

    /// Loads the picked runs of `dir` (`compare::load_runs`: an incomplete run is an error)
    /// and, when other runs were left out, says which run it took on stderr:
    /// `goldgate: <verb> run …, the newest of 3 in this folder (…)`.
    pub fn load(
        &self,
        dir: &Path,
        verb: &str,
    ) -> Result<goldgate_judge::compare::Records, AppError> {
        let (records, note) = goldgate_judge::compare::load_runs(dir, &self.selection())?;
        if let Some(note) = note {
            errln!("goldgate: {verb} {note}");
        }
        Ok(records)
    }
}

/// `--config`: the repository's `goldgate.yaml`.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigFile {
    /// Repository configuration (platforms, variant axes, rules, check.ignore). Default:
    /// `$GOLDGATE_CONFIG`, else the first goldgate.yaml from the working directory up to the
    /// repository root, else the built-in one (goldgate says which on stderr).
    #[arg(id = "config", long = "config", value_name = "CONFIG")]
    pub path: Option<PathBuf>,
}

impl ConfigFile {
    /// Where the configuration comes from (`--config`, `GOLDGATE_CONFIG`, the walk up).
    pub fn source(&self) -> Result<ConfigSource, AppError> {
        let cwd =
            std::env::current_dir().map_err(|source| super::error::CmdError::Cwd { source })?;
        let env = std::env::var_os(goldgate_core::config::CONFIG_ENV);
        Ok(goldgate_core::config::discover(
            self.path.as_deref(),
            env.as_deref(),
            &cwd,
        ))
    }

    /// Reads the configuration, saying on stderr which one when the user could not guess it.
    pub fn load(&self) -> Result<Config, AppError> {
        let source = self.source()?;
        if let Some(note) = source.note() {
            errln!("{note}");
        }
        Ok(Config::from_source(&source)?)
    }
}

/// How `run` runs its jobs: the low args of `run::RunOptions`, validated once by
/// [`ExecArgs::options`].
#[derive(clap::Args, Debug, Clone)]
pub struct ExecArgs {
    /// Time limit per job's running time (e.g. `90s`, `30m`); then SIGTERM to its process
    /// group, a grace period, SIGKILL. On Slurm it is the batch job's `--time` (whole
    /// minutes): time pending in the queue does not count; `--pending-limit` bounds that.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when a job is stopped.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub grace: Duration,
    /// Slurm: how long a job may wait in the queue before goldgate cancels it as never
    /// started (default: the platform's `slurm.pending_limit`, else 1h); `--timeout` counts
    /// running time only.
    #[arg(long, value_parser = parse_duration)]
    pub pending_limit: Option<Duration>,
    /// Jobs at once, each on its own slice of the platform's GPUs.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Re-run a job whose failure matches a flaky pattern up to N times (at most 100).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_RETRIES)))]
    pub retries: u32,
    /// Interval of the GPU and host memory samplers (e.g. `10ms`).
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub sample_interval: Duration,
    /// In-process probe for Python jobs: `torch`, `torch,history` or `none`.
    #[arg(long, default_value = "torch", value_parser = ProbeMode::parse)]
    pub probe: ProbeMode,
    /// Keep each job's checkpoints (by default they are deleted once the job is recorded).
    #[arg(long)]
    pub keep_checkpoints: bool,
    /// Before each job: `none`, `sync` (flush dirty pages) or `drop-caches` (also empty the
    /// page cache; needs root and a writable /proc/sys, checked before the first job).
    #[arg(long, default_value = "none", value_parser = Settle::parse)]
    pub settle: Settle,
    /// Run the cases' BEFORE_SCRIPT and AFTER_SCRIPT on this machine: bash runs them in the job
    /// folder around every run, as Megatron's `_run_training.sh` evals them. They may change
    /// the machine (MR-scope cases `pip uninstall` packages), so the local executor runs them
    /// only with this flag or a platform with `scripts: true`; Slurm jobs run them on their node.
    /// What runs is printed first.
    #[arg(long, conflicts_with = "no_scripts")]
    pub scripts: bool,
    /// Never run the cases' BEFORE_SCRIPT and AFTER_SCRIPT (not even under Slurm or a platform
    /// with `scripts: true`).
    #[arg(long)]
    pub no_scripts: bool,
    /// Also copy each job's output (stdout and stderr) to goldgate's stderr as it arrives,
    /// still parsed and logged; runs one job at a time (`--jobs` is set to 1). Local jobs only.
    #[arg(long)]
    pub no_capture: bool,
    /// Also keep each job's output as it came, unredacted, in `logs/console.raw.log`. The log
    /// goldgate keeps (`logs/console.log`, uploaded by CI) has every secret of the job's
    /// environment masked; the raw copy holds whatever the job printed, tokens included.
    #[arg(long)]
    pub keep_raw_log: bool,
    /// Also read each run's TensorBoard event files (Megatron's --tensorboard-dir; cases set it
    /// to ${TENSORBOARD_PATH}): Megatron's golden metrics take TensorBoard's values, metrics only
    /// TensorBoard has (memory, timers) are added, and disagreements with the log are recorded.
    #[arg(long)]
    pub tensorboard: bool,
}

/// Whether the cases' `BEFORE_SCRIPT`/`AFTER_SCRIPT` run (for `run` and `ab`) or go into the
/// script (for `repro`): `--scripts`/`--no-scripts`, else the platform's `scripts`, else only
/// under Slurm (where the job's node, not this machine, runs them).
pub(crate) fn scripts_on(
    scripts: bool,
    no_scripts: bool,
    platform: &Platform,
    executor: ExecutorChoice,
) -> bool {
    if scripts || no_scripts {
        return scripts;
    }
    platform
        .scripts
        .unwrap_or(executor == ExecutorChoice::Slurm)
}

impl ExecArgs {
    /// The validated options of the run stage, with results under `out`.
    pub fn options(&self, out: &Path) -> Result<RunOptions, AppError> {
        Ok(RunOptions {
            run_id: goldgate_record::run::new_run_id(),
            out_dir: absolute(out)?,
            base_dir: std::env::current_dir().map_err(|source| RunError::Cwd { source })?,
            workers: self.workers(),
            retries: self.retries,
            timeout: self.timeout,
            grace: self.grace,
            pending_limit: self.pending_limit,
            sample_interval: self.sample_interval,
            probe: self.probe,
            keep_checkpoints: self.keep_checkpoints,
            settle: self.settle,
            // Decided with the platform and executor: `ExecArgs::scripts_on`.
            scripts: self.scripts,
            no_capture: self.no_capture,
            keep_raw_log: self.keep_raw_log,
            tensorboard: self.tensorboard,
        })
    }

    /// Whether the cases' scripts run: `--scripts`/`--no-scripts`, else the platform's
    /// `scripts`, else only under Slurm (where the job's node, not this machine, runs them).
    pub fn scripts_on(&self, platform: &Platform, executor: ExecutorChoice) -> bool {
        scripts_on(self.scripts, self.no_scripts, platform, executor)
    }

    /// `--jobs`, or 1 with `--no-capture` (said when that overrides a larger `--jobs`).
    fn workers(&self) -> u32 {
        if self.no_capture && self.jobs > 1 {
            errln!(
                "goldgate: --no-capture runs one job at a time: --jobs {} ignored",
                self.jobs
            );
        }
        if self.no_capture { 1 } else { self.jobs.max(1) }
    }
}

/// How a comparison gates and where its reports go (`compare`, `run`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Unstable metrics fail the gate (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// Improvements beyond tolerance fail the gate, so goldens get refreshed.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Compare even when the GPU the jobs ran on is not the golden file's platform's (a
    /// `dgx_h100` golden expects an H100; an unknown platform expects no GPU); the mismatch
    /// is then a warning instead of an error (exit 3). The driver is recorded, not checked.
    #[arg(long)]
    pub allow_env_mismatch: bool,
    /// Write the comparison as JUnit XML here (`-`: stdout, the table then goes to stderr).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the comparison as markdown here (`-`: stdout, the table then goes to stderr).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the comparison as JSON here (`-`: stdout, the table then goes to stderr).
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub trend: TrendArgs,
}

/// `run`/`compare --clocks`: what judges the clocks of this comparison, over the platform's
/// `clocks:` in goldgate.yaml.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClocksArg {
    /// `ab`: iteration, save and async-completion times are reported against their goldens and
    /// never gate (a `goldgate ab` of the same check gates timing; the action passes it in mode
    /// `both` and where its `clocks` input says `ab`); `golden`: they gate whatever the platform
    /// says. Default: the platform's `clocks:`.
    #[arg(long, value_enum, value_name = "ab|golden")]
    pub clocks: Option<ClocksChoice>,
}

/// The values of `--clocks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ClocksChoice {
    Ab,
    Golden,
}

impl ClocksArg {
    /// The comparison's options from `config` with this choice (`run`, `compare`).
    pub fn compare_options(
        &self,
        config: &goldgate_core::config::Config,
        golden_root: &GoldenRoot,
        root: &CaseRoot,
        platform: Option<String>,
        allow_env_mismatch: bool,
    ) -> goldgate_judge::compare::CompareOptions {
        goldgate_judge::compare::CompareOptions {
            clocks: self.choice(),
            ..goldgate_judge::compare::CompareOptions::from_config(
                config,
                golden_root.path.clone(),
                root.path.clone(),
                platform,
                allow_env_mismatch,
            )
        }
    }

    /// The choice as the compare stage takes it.
    pub fn choice(&self) -> Option<goldgate_core::config::Clocks> {
        self.clocks.map(|c| match c {
            ClocksChoice::Ab => goldgate_core::config::Clocks::Ab,
            ClocksChoice::Golden => goldgate_core::config::Clocks::Golden,
        })
    }
}

/// The one-line trend per regressed metric in the markdown report (and so the step summary
/// and the PR comment), from the history store.
#[derive(clap::Args, Debug, Clone)]
pub struct TrendArgs {
    /// Add a line per regressed metric: main's last runs in this history store (a PostgreSQL
    /// URL or a SQLite file), its latest change point, and whether this run's value lies
    /// outside main's recent spread.
    #[arg(long, value_name = "URL|FILE")]
    pub trend_db: Option<String>,
    /// Main's runs the trend looks back over.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(usize))]
    pub trend_runs: usize,
}

impl Default for TrendArgs {
    fn default() -> TrendArgs {
        TrendArgs {
            trend_db: None,
            trend_runs: 20,
        }
    }
}

impl GateArgs {
    /// Refuses two reports on stdout (`--json - --junit -`): they would be one unreadable mix.
    /// Checked before anything runs.
    pub fn check(&self) -> Result<(), AppError> {
        let on_stdout = [&self.junit, &self.markdown, &self.json]
            .into_iter()
            .filter(|p| p.as_deref().is_some_and(super::output::is_stdout))
            .count();
        if on_stdout > 1 {
            return Err(super::error::CmdError::BadValue {
                message: "only one of --json, --junit and --markdown can be `-` (stdout)",
            }
            .into());
        }
        Ok(())
    }
}

/// `dir` made absolute against the current directory (job folders must not depend on the
/// folder a job runs in).
pub(crate) fn absolute(dir: &Path) -> Result<PathBuf, AppError> {
    std::path::absolute(dir).map_err(|source| {
        CmdError::BadDir {
            dir: dir.to_path_buf(),
            source,
        }
        .into()
    })
}

/// A platform name given on the command line: it becomes part of a golden file's name, so it
/// must be one plain path component (`--platform '../..'` is refused).
pub(crate) fn platform_name(text: &str) -> Result<String, String> {
    goldgate_core::fsio::check_component("platform", text)?;
    Ok(text.to_owned())
}

/// `--executor`: `local` or `slurm`.
pub(crate) fn executor_name(text: &str) -> Result<goldgate_core::config::ExecutorChoice, String> {
    use goldgate_core::config::ExecutorChoice;
    match text {
        "local" => Ok(ExecutorChoice::Local),
        "slurm" => Ok(ExecutorChoice::Slurm),
        other => Err(format!("`{other}` is not an executor (local, slurm)")),
    }
}

/// An environment name (`dev`, `lts`) given on the command line: also part of a golden file's
/// name.
pub(crate) fn environment_name(text: &str) -> Result<String, String> {
    goldgate_core::fsio::check_component("environment", text)?;
    Ok(text.to_owned())
}

/// The most retries `--retries` takes: a job retried more often than this is broken, not flaky.
const MAX_RETRIES: u32 = 100;

/// The heartbeat's interval in plain-line output: 30 s, or `GOLDGATE_HEARTBEAT` (`200ms`,
/// `5s`; `0` for none). A value that does not parse is said and ignored.
pub fn heartbeat_interval() -> Option<Duration> {
    let Some(text) = std::env::var_os("GOLDGATE_HEARTBEAT") else {
        return Some(goldgate_record::run::DEFAULT_HEARTBEAT);
    };
    match parse_duration(&text.to_string_lossy()) {
        Ok(every) => Some(every),
        Err(e) => {
            errln!("warning: GOLDGATE_HEARTBEAT ignored: {e}");
            Some(goldgate_record::run::DEFAULT_HEARTBEAT)
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap checks a command's arguments only when it is built: build every subcommand's.
    #[test]
    fn every_subcommand_has_distinct_well_formed_arguments() {
        fn check<A: clap::Args>(name: &'static str) {
            A::augment_args(clap::Command::new(name)).debug_assert();
        }
        use crate::cmd::*;
        check::<list::Args>("list");
        check::<check::Args>("check");
        check::<plan::Args>("plan");
        check::<repro::Args>("repro");
        check::<run::Args>("run");
        check::<extract::Args>("extract");
        check::<compare::Args>("compare");
        check::<bless::Args>("bless");
        check::<calibrate::Args>("calibrate");
        check::<power::Args>("power");
        check::<history_args::Args>("history");
        check::<report::Args>("report");
        check::<comment::Args>("comment");
    }

    #[test]
    fn the_cli_default_interval_is_the_samplers() {
        let cmd = <super::ExecArgs as clap::Args>::augment_args(clap::Command::new("run"));
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "sample_interval")
            .unwrap();
        let default = arg.get_default_values()[0].to_str().unwrap();
        assert_eq!(
            goldgate_core::duration::parse_duration(default).unwrap(),
            goldgate_record::observe::sample::DEFAULT_INTERVAL
        );
    }

    #[test]
    fn case_scripts_run_locally_only_when_asked_and_under_slurm_unless_refused() {
        use clap::{FromArgMatches as _, Parser};
        use goldgate_core::config::{Config, ExecutorChoice::*};
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            exec: super::ExecArgs,
        }
        let exec = |flags: &[&str]| {
            let m = <Cli as clap::CommandFactory>::command()
                .try_get_matches_from(std::iter::once("run").chain(flags.iter().copied()))
                .unwrap();
            Cli::from_arg_matches(&m).unwrap().exec
        };
        let config = Config::parse(
            "platforms:\n  box: {gpus_per_node: 1}\n  \
             container: {gpus_per_node: 1, scripts: true}\n  \
             shared: {gpus_per_node: 1, executor: slurm, scripts: false}\n",
            std::path::Path::new("goldgate.yaml"),
        )
        .unwrap();
        let p = |name: &str| config.platform(Some(name)).unwrap();
        let on = |flags: &[&str], name: &str, executor| exec(flags).scripts_on(p(name), executor);
        assert!(
            !on(&[], "box", Local),
            "a local machine: not without --scripts"
        );
        assert!(on(&["--scripts"], "box", Local));
        assert!(on(&[], "box", Slurm), "a Slurm job's node runs them");
        assert!(!on(&["--no-scripts"], "box", Slurm));
        assert!(on(&[], "container", Local), "the platform says so");
        assert!(!on(&["--no-scripts"], "container", Local));
        assert!(!on(&[], "shared", Slurm), "the platform says no");
        assert!(on(&["--scripts"], "shared", Slurm));
        let both = <Cli as clap::CommandFactory>::command().try_get_matches_from([
            "run",
            "--scripts",
            "--no-scripts",
        ]);
        assert!(both.is_err());
    }
}
