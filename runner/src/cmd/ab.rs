//! `goldgate ab CASE`: baseline (A) against candidate (B) on one machine. Each arm is the case
//! with its own variant choices (`--a-variant`/`--b-variant`), extra environment
//! (`--a-env`/`--b-env`) and workload folder (`--a-dir`/`--b-dir`: where the case's relative
//! entry resolves, e.g. checkouts of the merge base and the PR head). After `--warmup N`
//! discarded jobs (alternating arms) the jobs run one at a time in ABBA/BAAB blocks, in a
//! seeded random order; each job is one run of the run stage (`OUT/<id>/<id>-<NN>-<arm>/`, with
//! its `run.json` and `results.json` as `goldgate run` records them, marked as an A/B arm). After every pair the
//! timing metrics are judged sequentially (`compare::ab::across_jobs`) and the sequence stops once they are
//! decided or at `--max-pairs`; then B's other metrics are judged against the goldens, the
//! reports are written and the exit code follows `compare::ab::outcome`'s rule. `ab.json` in the
//! A/B folder is rewritten after every job (a crash loses nothing).
//!
//! `--within-job` (implied by `--a-switch`/`--b-switch`) runs both arms inside every job: the
//! probe switches a setting that can change while the process runs (`compare::ab::within_job`'s
//! switches) save by save, in a seeded order per pair of saves, and each job is judged with
//! the ones before it until decided or `--max-jobs`. What is fixed when a process starts (a
//! variant, the environment, a workload folder) is refused there: job-level `ab` compares it.
//! `ab.json`'s `mode` says which mode ran and why.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::args::{ExecArgs, GateArgs};
use super::error::{AppError, CmdError};
use super::output::{err, errln, out, stderr_color};
use super::select::{Selection, plan_selection};
use goldgate_core::config::Sequential;
use goldgate_core::config::{Config, ExecutorChoice};
use goldgate_judge::compare::ab::across_jobs;
use goldgate_judge::compare::ab::covariate::{self, Covariate, CovariateUse};
use goldgate_judge::compare::ab::metric::{self, AbMetric};
use goldgate_judge::compare::ab::outcome::{
    AB_SCHEMA_VERSION, AbJob, AbMode, AbModeKind, AbReport, ArmSpec,
};
use goldgate_judge::compare::ab::precision::{self, Precision};
use goldgate_judge::compare::ab::within_job::{self, InJobTest, InJobUnit, Switch};
use goldgate_record::plan::{Job, Output};
use goldgate_record::run::{Progress, ResultsWriter, RunOptions};
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

/// Where `ab` writes without `--out`: not `run`'s `results/`, so `compare`, `bless` and
/// `report` of `results/` never meet an A/B's jobs (they leave them out wherever they are).
pub const DEFAULT_OUT: &str = "ab-results";

/// Arguments of `goldgate ab`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The case (`<model>/<case>`); one platform, GPU and node throughout.
    pub case: String,
    #[command(flatten)]
    pub select: Selection,
    /// Arm A's variant choice (`AXIS=VALUE`, on top of `--variant`). Repeatable.
    #[arg(long = "a-variant", value_name = "AXIS=VALUE")]
    pub a_variants: Vec<String>,
    /// Arm B's variant choice, e.g. `--b-variant empty_cache=level2`. Repeatable.
    #[arg(long = "b-variant", value_name = "AXIS=VALUE")]
    pub b_variants: Vec<String>,
    /// Extra environment for arm A's jobs (`NAME=VALUE`). Repeatable.
    #[arg(long = "a-env", value_name = "NAME=VALUE", value_parser = parse_env)]
    pub a_env: Vec<(String, String)>,
    /// Extra environment for arm B's jobs, e.g. `--b-env GOLDGATE_PLANT_SAVE_DELAY_S=0.04`.
    #[arg(long = "b-env", value_name = "NAME=VALUE", value_parser = parse_env)]
    pub b_env: Vec<(String, String)>,
    /// Arm A's workload folder: the case's relative entry words resolve there (a checkout of
    /// the base). Point `MEGATRON_LM_DIR` at a Megatron-LM tree with `--a-env`.
    #[arg(long = "a-dir", value_name = "DIR")]
    pub a_dir: Option<PathBuf>,
    /// Arm B's workload folder (a checkout of the head).
    #[arg(long = "b-dir", value_name = "DIR")]
    pub b_dir: Option<PathBuf>,
    /// Both arms in every job, alternating save by save (implied by --a-switch/--b-switch;
    /// alone: an in-job A/A).
    #[arg(long)]
    pub within_job: bool,
    /// A setting arm A's saves run under, switched while the job runs (`save-delay=SECONDS`,
    /// `empty-cache=remove|add`, `gc-threshold=SHARE`). Repeatable.
    #[arg(long = "a-switch", value_name = "NAME=VALUE", value_parser = parse_switch)]
    pub a_switches: Vec<Switch>,
    /// A setting arm B's saves run under, e.g. `--b-switch empty-cache=remove`. Repeatable.
    #[arg(long = "b-switch", value_name = "NAME=VALUE", value_parser = parse_switch)]
    pub b_switches: Vec<Switch>,
    /// Within-job: jobs at most (each a look; the alpha is split over them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_jobs: u32,
    /// Within-job: save pairs each job's schedule holds (a job with fewer saves uses the first
    /// ones; saves past them run under arm A, outside the design).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub schedule_pairs: u32,
    /// Job-level: judge checkpoint-blocking-time adjusted by each job's iteration time (the
    /// platform's measured `ab.platforms.<p>.covariate`), for a B that leaves iteration time
    /// alone; switched off at the first look whose iteration-time interval excludes 0.
    #[arg(long)]
    pub covariate: bool,
    /// Discarded warm-up jobs before the first block, alternating A and B.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub warmup: u32,
    /// Most pairs, 1 to 1000 (default: goldgate.yaml's `ab.max_pairs`); the last look ends
    /// `inconclusive` if undecided. Looks are Bonferroni-corrected over this many.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(goldgate_core::config::MAX_PAIRS)))]
    pub max_pairs: Option<u32>,
    /// The change that counts (default `ab.min_effect`; 0.05 = 5 %).
    #[arg(long)]
    pub min_effect: Option<f64>,
    /// Run until every timing interval is this narrow (half-width, `3%` or `0.03`), not only
    /// until the gate's question is decided; within the jobs (`--max-jobs`) or pairs
    /// (`--max-pairs`) allowed. For "how much faster is B?".
    #[arg(long, value_name = "HALF-WIDTH", value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// One job's spread floor (default: the platform's `ab.platforms.<p>.spread`, else
    /// `ab.spread`).
    #[arg(long)]
    pub spread: Option<f64>,
    /// Time limit of the whole sequence (e.g. `500s`): no pair starts that would not end
    /// before it, by the slowest job so far; undecided metrics are then `inconclusive`.
    #[arg(long, value_parser = goldgate_core::duration::parse_duration)]
    pub budget: Option<std::time::Duration>,
    /// Seed of the block order (default: from the clock; recorded in `ab.json`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the A/B folder goes: `OUT/<id>/` (default `ab-results`, apart from `run`'s
    /// `results`: an A/B's jobs are arms of a comparison, not runs to gate or bless).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    #[command(flatten)]
    pub gate: GateArgs,
}

/// `NAME=VALUE` with a plain variable name.
pub(crate) fn parse_env(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!("`{name}` is not an environment variable name"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

fn parse_switch(text: &str) -> Result<Switch, String> {
    Switch::parse(text)
}

fn parse_precision(text: &str) -> Result<f64, String> {
    precision::parse(text)
}

/// One arm: its selection (variants), extra environment and workload folder.
struct Arm {
    name: &'static str,
    select: Selection,
    env: Vec<(String, String)>,
    dir: Option<PathBuf>,
}

impl Arm {
    fn new(args: &Args, name: &'static str) -> Result<Arm, AppError> {
        let (variants, env, dir) = match name {
            "a" => (&args.a_variants, &args.a_env, &args.a_dir),
            _ => (&args.b_variants, &args.b_env, &args.b_dir),
        };
        let mut select = args.select.clone();
        select.variants.extend(variants.iter().cloned());
        let dir = dir.as_deref().map(super::args::absolute).transpose()?;
        if let Some(dir) = &dir {
            check_folder(&format!("--{name}-dir"), dir)?;
        }
        Ok(Arm {
            name,
            select,
            env: env.clone(),
            dir,
        })
    }

    fn spec(&self, switches: &[Switch]) -> ArmSpec {
        let shown = |(k, v): &(String, String)| {
            let v = if goldgate_core::redact::is_secret_name(k) {
                goldgate_core::redact::REDACTED
            } else {
                v
            };
            format!("{k}={v}")
        };
        ArmSpec {
            arm: self.name.to_owned(),
            variants: self.select.variants.clone(),
            env: self.env.iter().map(shown).collect(),
            dir: self.dir.as_ref().map(|d| d.display().to_string()),
            switches: switches.iter().map(Switch::render).collect(),
        }
    }
}

/// An arm's workload folder must be a folder before any job runs: found after the first
/// jobs, a typo would cost their GPU time and read as a job failure.
fn check_folder(flag: &str, dir: &Path) -> Result<(), AppError> {
    let problem = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => "is not a folder".to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(e) => format!("cannot be read: {e}"),
    };
    Err(CmdError::NotAFolder {
        flag: flag.to_owned(),
        path: dir.to_path_buf(),
        problem,
    }
    .into())
}

/// Everything a job of the sequence is planned and run with.
struct Bench<'a> {
    args: &'a Args,
    config: &'a Config,
    opts: RunOptions,
    ab_dir: PathBuf,
    arms: [Arm; 2],
    stop: &'a goldgate_record::launch::StopFlag,
    command: Vec<String>,
    /// The case's METRICS (from the plan).
    metrics: Vec<String>,
    /// When the command started (`--budget` counts from here).
    started: std::time::Instant,
    /// Warnings the jobs' progress showed so far: each once per `ab`, not once per job.
    shown: Mutex<std::collections::HashSet<String>>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let stop = goldgate_record::launch::install_signal_handlers()?;
    args.gate.check()?;
    if !args.select.matrix.is_empty() {
        return Err(CmdError::BadValue {
            message: "ab compares two arms of one job: use --a-variant/--b-variant, not --matrix",
        }
        .into());
    }
    let config = args.select.config.load()?;
    let (opts, platform, choice) = options(&args, &config)?;
    let seq = sequential(&args, &config, &platform)?;
    let switched = !args.a_switches.is_empty() || !args.b_switches.is_empty();
    let asked_covariate = covariate(&args, &config, &platform, args.within_job || switched)?;
    let ab_dir = opts.out_dir.join(&opts.run_id);
    let mut bench = Bench {
        arms: [Arm::new(&args, "a")?, Arm::new(&args, "b")?],
        args: &args,
        config: &config,
        ab_dir,
        opts,
        stop: &stop,
        command: std::env::args().collect(),
        metrics: Vec::new(),
        started: std::time::Instant::now(),
        shown: Mutex::default(),
    };
    // Both arms are planned before any job runs: a bad variant or entry fails at once.
    bench.metrics = bench.plan(0, "00-plan", 0, 0, false)?.metrics;
    let b = bench.plan(1, "00-plan", 0, 0, false)?;
    err!(
        "{}",
        super::run_notes::scripts_notice(&[b], bench.opts.scripts, choice)
    );
    let seed = args.seed.unwrap_or_else(clock_seed);
    let within = within_job(&args)?;
    let mut report = bench.report(&platform, seed, seq);
    report.covariate = asked_covariate;
    let out_of_time = if let Some(mode) = within {
        report.mode = mode;
        bench.sequence_within(&mut report)?;
        false
    } else {
        bench.sequence(&mut report)?
    };
    if out_of_time && report.pairs == 0 && !report.job_failed() {
        return bench.fits_no_pair(report);
    }
    bench.finish(report)
}

/// The run stage's options (one job at a time; the platform's script rule), the platform's
/// name and its executor.
fn options(args: &Args, config: &Config) -> Result<(RunOptions, String, ExecutorChoice), AppError> {
    let mut opts = args
        .exec
        .options(args.out.as_deref().unwrap_or(Path::new(DEFAULT_OUT)))?;
    goldgate_record::launch::check_settle(opts.settle)?;
    opts.workers = 1;
    let (platform, choice) = args.select.executor(config)?;
    opts.scripts = args.exec.scripts_on(platform, choice);
    Ok((opts, platform.name.clone(), choice))
}

fn sequential(args: &Args, config: &Config, platform: &str) -> Result<Sequential, AppError> {
    let mut seq = config.ab.on(platform);
    if let Some(n) = args.max_pairs {
        seq.max_pairs = n;
        seq.min_pairs = seq.min_pairs.min(n);
    }
    if let Some(m) = args.min_effect {
        if !(m.is_finite() && (0.0..10.0).contains(&m)) {
            return Err(CmdError::BadValue {
                message: "--min-effect takes a share from 0 to below 10 (0.05 = 5 %)",
            }
            .into());
        }
        seq.min_effect = m;
    }
    if let Some(s) = args.spread {
        if !(s.is_finite() && s > 0.0) {
            return Err(CmdError::BadValue {
                message: "--spread takes a share above 0 (0.05 = 5 % between jobs)",
            }
            .into());
        }
        seq.spread = s;
    }
    Ok(seq)
}

/// `--covariate`'s settings on `platform`; refused within a job (the saves of a pair share
/// their job's level already) and where the platform has none measured.
fn covariate(
    args: &Args,
    config: &Config,
    platform: &str,
    within: bool,
) -> Result<Option<CovariateUse>, AppError> {
    if !args.covariate {
        return Ok(None);
    }
    if within {
        return Err(CmdError::NoCovariate {
            message: "within-job A/B pairs saves of one job, which share its level already; the covariate is for job-level ab".into(),
        }
        .into());
    }
    let settings = Covariate::on(&config.ab, platform).ok_or_else(|| CmdError::NoCovariate {
        message: format!("no ab.platforms.{platform}.covariate in goldgate.yaml"),
    })?;
    Ok(Some(CovariateUse::new(settings)))
}

/// The within-job mode when asked for (`--within-job`, or a switch given), and why; refuses
/// what a running process cannot switch.
fn within_job(args: &Args) -> Result<Option<AbMode>, AppError> {
    let switched = !args.a_switches.is_empty() || !args.b_switches.is_empty();
    if !(args.within_job || switched) {
        return Ok(None);
    }
    let mut fixed = Vec::new();
    if !args.a_variants.is_empty() || !args.b_variants.is_empty() {
        fixed.push("--a-variant/--b-variant");
    }
    if !args.a_env.is_empty() || !args.b_env.is_empty() {
        fixed.push("--a-env/--b-env");
    }
    if args.a_dir.is_some() || args.b_dir.is_some() {
        fixed.push("--a-dir/--b-dir");
    }
    if args.warmup > 0 {
        fixed.push("--warmup");
    }
    if !fixed.is_empty() {
        return Err(CmdError::NotSwitchable {
            message: format!(
                "{} set what a job fixes when its process starts; within-job A/B switches only what the probe changes while it runs (--a-switch/--b-switch)",
                fixed.join(", ")
            ),
        }
        .into());
    }
    within_job::check_arms(&args.a_switches, &args.b_switches)
        .map_err(|message| CmdError::NotSwitchable { message })?;
    let names: Vec<String> = args
        .a_switches
        .iter()
        .chain(&args.b_switches)
        .map(Switch::render)
        .collect();
    let reason = if names.is_empty() {
        "an in-job A/A (--within-job, no switch): both arms the case as is".to_owned()
    } else {
        format!(
            "the arms differ only in settings the probe switches while the job runs ({}): both arms in every job, save by save",
            names.join(", ")
        )
    };
    Ok(Some(AbMode {
        kind: AbModeKind::WithinJob,
        reason,
    }))
}

/// Job-level, and why: what the arms differ in is fixed when a process starts.
fn job_mode(arms: &[Arm; 2]) -> AbMode {
    let [a, b] = arms;
    let mut fixed = Vec::new();
    if a.select.variants != b.select.variants {
        fixed.push("variants");
    }
    if a.env != b.env {
        fixed.push("environment");
    }
    if a.dir != b.dir {
        fixed.push("workload folder");
    }
    let reason = if fixed.is_empty() {
        "an A/A of whole jobs (the arms are the same)".to_owned()
    } else {
        format!(
            "the arms differ in {}, fixed when the process starts: only whole jobs can compare them",
            fixed.join(", ")
        )
    };
    AbMode {
        kind: AbModeKind::Job,
        reason,
    }
}

fn clock_seed() -> u64 {
    let now = jiff::Timestamp::now();
    (now.as_nanosecond() as u64) ^ u64::from(std::process::id())
}

impl Bench<'_> {
    fn report(&self, platform: &str, seed: u64, seq: Sequential) -> AbReport {
        AbReport {
            schema_version: AB_SCHEMA_VERSION,
            id: self.opts.run_id.clone(),
            case: self.args.case.clone(),
            platform: platform.to_owned(),
            mode: job_mode(&self.arms),
            seed,
            sequential: seq,
            within_job: None,
            arms: [
                self.arms[0].spec(&self.args.a_switches),
                self.arms[1].spec(&self.args.b_switches),
            ],
            jobs: Vec::new(),
            pairs: 0,
            metrics: Vec::new(),
            goldens: Vec::new(),
            golden_note: None,
            covariate: None,
            warnings: Vec::new(),
            finished: false,
            job_seconds: 0.0,
            gpus: 0,
            exit_code: None,
            precision: None,
            checks: None,
        }
    }

    /// The warm-up jobs, then blocks until the timing metrics are decided or `max_pairs`;
    /// whether `--budget` ended it.
    fn sequence(&self, report: &mut AbReport) -> Result<bool, AppError> {
        let seq = report.sequential;
        for i in 0..self.args.warmup {
            let arm = (i % 2) as usize;
            self.one_job(report, arm, 0, 0, true)?;
            if self.halted(report) {
                return Ok(false);
            }
        }
        let mut out_of_time = false;
        let order = across_jobs::block_order(seq.max_pairs.div_ceil(2), report.seed);
        let (mut a, mut b): (Vec<RunRecord>, Vec<RunRecord>) = (Vec::new(), Vec::new());
        let mut blocks = Vec::new();
        for (i, is_b) in order.iter().enumerate() {
            let block = (i / 4 + 1) as u32;
            let pair = (a.len().max(b.len()) + usize::from(a.len() == b.len())) as u32;
            // A pair's first job starts only if its partner fits too.
            if self.out_of_time(report, if a.len() == b.len() { 2 } else { 1 }) {
                out_of_time = true;
                break;
            }
            let record = self.one_job(report, usize::from(*is_b), block, pair, false)?;
            if self.halted(report) {
                return Ok(false);
            }
            match is_b {
                true => b.extend(record),
                false => a.extend(record),
            }
            if a.len() != b.len() {
                continue;
            }
            blocks.push(block);
            report.pairs = a.len();
            report.metrics = self.judge(&a, &b, &blocks, &seq, report.covariate.as_mut());
            let done = self.done(report);
            self.save(report);
            if done || report.pairs as u32 >= seq.max_pairs {
                break;
            }
        }
        metric::close(&mut report.metrics);
        report.finished = true;
        Ok(out_of_time)
    }

    /// `--budget` ended the sequence before one pair: the budget was the mistake, not the
    /// change (an `inconclusive` of 0 pairs would pass the gate on nothing). `ab.json` keeps
    /// the jobs that ran.
    fn fits_no_pair(&self, mut report: AbReport) -> Result<Exit, AppError> {
        report.exit_code = Some(i32::from(Exit::Usage.code()));
        self.write_json(&report)?;
        let slowest = (report.jobs.iter())
            .filter_map(|j| j.wall_seconds)
            .reduce(f64::max);
        Err(CmdError::BudgetFitsNoPair {
            budget: self.args.budget.unwrap_or_default().as_secs_f64(),
            job_seconds: slowest,
        }
        .into())
    }

    /// Within-job: one job after another, both arms in each (`within_job::schedule`), judged
    /// after each until decided or `--max-jobs`.
    fn sequence_within(&self, report: &mut AbReport) -> Result<(), AppError> {
        let rules = goldgate_core::rules::RuleSet::from_config(&self.config.rules);
        let skip = rules
            .find(goldgate_schema::metric_names::CHECKPOINT_BLOCKING)
            .map_or(1, |r| r.skip_first_saves as usize);
        let test = InJobTest {
            alpha: report.sequential.alpha,
            min_effect: report.sequential.min_effect,
            max_jobs: self.args.max_jobs,
            metrics: 2,
        };
        report.within_job = Some(test);
        let switches = |v: &[Switch]| v.iter().map(Switch::render).collect::<Vec<_>>().join(",");
        let mut jobs: Vec<Vec<(InJobUnit, InJobUnit)>> = Vec::new();
        for j in 0..self.args.max_jobs {
            if self.out_of_time(report, 1) {
                break;
            }
            let schedule =
                within_job::schedule(report.seed, j, skip, self.args.schedule_pairs as usize);
            let env = [
                ("GOLDGATE_INJOB_SCHEDULE", schedule),
                ("GOLDGATE_INJOB_A", switches(&self.args.a_switches)),
                ("GOLDGATE_INJOB_B", switches(&self.args.b_switches)),
            ];
            let index = report.jobs.len() as u32 + 1;
            let run_id = format!("{}-{index:02}-ab", report.id);
            let record = self.one_within(report, &run_id, j + 1, &env)?;
            if self.halted(report) {
                return Ok(());
            }
            let Some(record) = record else { break };
            let pairs = within_job::job_pairs(&run_id, &record).map_err(|e| CmdError::InJob {
                message: e.to_string(),
            })?;
            jobs.push(pairs);
            report.pairs = jobs.iter().map(Vec::len).sum();
            report.metrics = within_job::judge(&jobs, &test);
            report.checks = within_job::checks::checks(&jobs);
            let done = self.done(report);
            self.save(report);
            if done {
                break;
            }
        }
        metric::close(&mut report.metrics);
        report.finished = true;
        Ok(())
    }

    /// Plans, runs and records one within-job job (arm `ab`, its schedule in `env`).
    fn one_within(
        &self,
        report: &mut AbReport,
        run_id: &str,
        block: u32,
        env: &[(&str, String)],
    ) -> Result<Option<RunRecord>, AppError> {
        let mut job = self.plan(0, run_id, block, 0, false)?;
        for (k, v) in env {
            job.env_unset.retain(|u| u != k);
            job.env.insert((*k).to_owned(), v.clone());
        }
        job.env
            .insert(goldgate_schema::AB_ARM_VARIABLE.into(), "ab".into());
        if let Some(member) = &mut job.ab {
            member.arm = "ab".into();
        }
        let results = job.dirs.job.join("results.json");
        report.jobs.push(AbJob {
            index: report.jobs.len() as u32 + 1,
            run_id: run_id.to_owned(),
            arm: "ab".into(),
            block,
            pair: 0,
            warmup: false,
            results: relative(&results, &self.ab_dir),
            outcome: None,
            wall_seconds: None,
            failure: None,
        });
        self.save(report);
        errln!("goldgate ab: job {run_id} (both arms, save by save; job {block})");
        let record = self.execute(job, run_id)?;
        if let (Some(entry), Some(r)) = (report.jobs.last_mut(), &record) {
            entry.outcome = Some(r.outcome.label());
            entry.wall_seconds = Some(r.wall_seconds);
            report.job_seconds += r.wall_seconds;
            report.gpus = report.gpus.max(r.fingerprint.gpu_count.unwrap_or(0));
        }
        self.save(report);
        Ok(record)
    }

    /// Whether `jobs` more jobs, at the slowest job's time so far (plus a fifth), would end
    /// past `--budget`; said once in the report.
    fn out_of_time(&self, report: &mut AbReport, jobs: u32) -> bool {
        let Some(budget) = self.args.budget else {
            return false;
        };
        let slowest = report
            .jobs
            .iter()
            .filter_map(|j| j.wall_seconds)
            .fold(0.0, f64::max);
        let needed = f64::from(jobs) * slowest * 1.2;
        let left = budget.as_secs_f64() - self.started.elapsed().as_secs_f64();
        if needed <= left {
            return false;
        }
        report.warnings.push(format!(
            "time budget: {} of --budget left, the next pair needs about {}; stopped after {} pair(s)",
            goldgate_core::units::seconds(left.max(0.0)),
            goldgate_core::units::seconds(needed),
            report.pairs
        ));
        true
    }

    /// Whether the sequence may stop after this look: the timing metrics are decided or, with
    /// `--precision`, every timing interval is that narrow (`report.precision` says where they
    /// stand).
    fn done(&self, report: &mut AbReport) -> bool {
        match self.args.precision {
            Some(target) => {
                let p = Precision::of(&report.metrics, target, report.pairs);
                let reached = p.reached;
                report.precision = Some(p);
                reached
            }
            None => metric::settled(&report.metrics),
        }
    }

    /// A failed job or Ctrl-C ends the sequence.
    fn halted(&self, report: &AbReport) -> bool {
        report.job_failed() || self.stop.is_requested()
    }

    /// The case's METRICS, the timing metrics, and every recorded metric a rule of its own
    /// names (goldgate's probe counters: they need no statistics), in that order.
    fn judge(
        &self,
        a: &[RunRecord],
        b: &[RunRecord],
        blocks: &[u32],
        seq: &Sequential,
        covariate: Option<&mut CovariateUse>,
    ) -> Vec<AbMetric> {
        let rules = goldgate_core::rules::RuleSet::from_config(&self.config.rules);
        let mut names: Vec<String> = self.metrics.clone();
        let own_rule = |m: &str| rules.find(m).is_some_and(|r| r.pattern != "*");
        let recorded = a.iter().chain(b).flat_map(|r| r.metrics.keys());
        for m in self.config.ab.metrics.iter().chain(recorded) {
            if !names.contains(m) && (self.config.ab.metrics.contains(m) || own_rule(m)) {
                names.push(m.clone());
            }
        }
        let ra: Vec<&RunRecord> = a.iter().collect();
        let rb: Vec<&RunRecord> = b.iter().collect();
        let mut metrics = across_jobs::judge_all(
            &names,
            &self.config.ab.metrics,
            &rules,
            (&ra, &rb),
            blocks,
            seq,
        );
        if let Some(state) = covariate {
            covariate::apply(&mut metrics, &rules, (&ra, &rb), blocks, seq, state);
        }
        metrics
    }

    /// Plans, runs and records one job of `arm`; returns its record.
    fn one_job(
        &self,
        report: &mut AbReport,
        arm: usize,
        block: u32,
        pair: u32,
        warmup: bool,
    ) -> Result<Option<RunRecord>, AppError> {
        let index = report.jobs.len() as u32 + 1;
        let name = self.arms[arm].name;
        // The A/B's id leads: every job folder's run id is unique across `ab` runs, so no
        // store or selection mistakes one A/B's `01-a` for another's.
        let run_id = match warmup {
            true => format!("{}-{index:02}-{name}-warmup", report.id),
            false => format!("{}-{index:02}-{name}", report.id),
        };
        let job = self.plan(arm, &run_id, block, pair, warmup)?;
        let results = job.dirs.job.join("results.json");
        report.jobs.push(AbJob {
            index,
            run_id: run_id.clone(),
            arm: name.to_owned(),
            block,
            pair,
            warmup,
            results: relative(&results, &self.ab_dir),
            outcome: None,
            wall_seconds: None,
            failure: None,
        });
        self.save(report);
        errln!("goldgate ab: job {index} ({run_id}, block {block}, pair {pair})");
        let record = self.execute(job, &run_id)?;
        if let (Some(entry), Some(r)) = (report.jobs.last_mut(), &record) {
            entry.outcome = Some(r.outcome.label());
            entry.wall_seconds = Some(r.wall_seconds);
            entry.failure = (!r.outcome.passed())
                .then(|| r.attempts.last().and_then(|a| a.failure_line.clone()))
                .flatten();
            report.job_seconds += r.wall_seconds;
            report.gpus = report.gpus.max(r.fingerprint.gpu_count.unwrap_or(0));
        }
        self.save(report);
        Ok(record.filter(|_| !warmup))
    }

    fn plan(
        &self,
        arm: usize,
        run_id: &str,
        block: u32,
        pair: u32,
        warmup: bool,
    ) -> Result<Job, AppError> {
        let arm = &self.arms[arm];
        let output = Output {
            out_dir: self.ab_dir.clone(),
            run_id: run_id.to_owned(),
            base_dir: arm.dir.clone(),
            env: arm.env.clone(),
        };
        let filter = goldgate_record::plan::CaseFilter::new(
            std::slice::from_ref(&self.args.case),
            None,
            None,
        )?;
        let selected = plan_selection(self.config, &arm.select, &filter, Some(1), 0, &output)?;
        let strict = arm.select.strict_placeholders;
        err!("{}", selected.render_problems(strict, stderr_color()));
        if selected.refused(strict) {
            return Err(CmdError::NotPlanned.into());
        }
        let mut jobs = selected.jobs;
        if jobs.len() != 1 {
            let names: Vec<String> = jobs.iter().map(|j| j.variant.name()).collect();
            return Err(CmdError::NotOneJob {
                count: jobs.len(),
                names: names.join("; "),
            }
            .into());
        }
        let mut job = jobs.remove(0);
        job.warmup = warmup;
        job.ab = Some(goldgate_schema::AbMember {
            ab_id: self.opts.run_id.clone(),
            arm: arm.name.to_owned(),
            block,
            pair,
        });
        if !self.opts.scripts {
            job.before_script = None;
            job.after_script = None;
        }
        let marks = [
            (goldgate_schema::AB_ARM_VARIABLE, arm.name.to_owned()),
            ("GOLDGATE_AB_BLOCK", block.to_string()),
            ("GOLDGATE_AB_PAIR", pair.to_string()),
        ];
        for (k, v) in arm
            .env
            .iter()
            .cloned()
            .chain(marks.map(|(k, v)| (k.to_owned(), v)))
        {
            job.env_unset.retain(|u| *u != k);
            job.env.insert(k, v);
        }
        Ok(job)
    }

    /// One run of the run stage for one job (its own `run.json`), as `goldgate run` does it.
    fn execute(&self, job: Job, run_id: &str) -> Result<Option<RunRecord>, AppError> {
        let mut opts = self.opts.clone();
        opts.out_dir = self.ab_dir.clone();
        opts.run_id = run_id.to_owned();
        let jobs = vec![job];
        let executor = super::run::executor(&self.arms[0].select, self.config, &opts, &jobs)?;
        let mut writer = ResultsWriter::create(&opts, &jobs, self.command.clone())?;
        let shown = std::mem::take(&mut *self.shown.lock().unwrap_or_else(|p| p.into_inner()));
        let progress = Mutex::new(
            Progress::stderr()
                .with_heartbeat(super::args::heartbeat_interval())
                .with_shown(shown),
        );
        let summary = goldgate_record::run::beside_heartbeat(&progress, |progress| {
            goldgate_record::run::run_jobs(&jobs, &*executor, &opts, self.stop, &mut |event| {
                writer.event(&event);
                progress
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .event(&event);
            })
        })?;
        *self.shown.lock().unwrap_or_else(|p| p.into_inner()) = progress
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_shown();
        writer.finish()?;
        Ok(summary.records.into_iter().next())
    }

    /// `ab.json`, rewritten after every job; a failed write is said once per job, not fatal
    /// until the end (the final write's error is returned by `finish`).
    fn save(&self, report: &AbReport) {
        if let Err(e) = self.write_json(report) {
            errln!("warning: {e} (written again after the next job)");
        }
    }

    fn write_json(&self, report: &AbReport) -> Result<(), AppError> {
        let text = goldgate_judge::report::ab::render_json(report)?;
        let path = self.ab_dir.join("ab.json");
        goldgate_core::fsio::write_atomic(&path, text.as_bytes())
            .map_err(|source| CmdError::Write { path, source })?;
        Ok(())
    }

    /// B against the goldens (metrics not timed), the reports, the exit code.
    fn finish(&self, mut report: AbReport) -> Result<Exit, AppError> {
        let within = report.mode.kind == AbModeKind::WithinJob;
        if within {
            report.golden_note = Some(
                "within-job: every job ran both arms, so none is judged against the goldens (goldgate run does that)".into(),
            );
        } else if !report.job_failed() && report.pairs > 0 {
            self.goldens(&mut report)?;
        }
        if self.stop.is_requested() {
            report
                .warnings
                .push("interrupted: the sequence did not finish".into());
        }
        let gate = &self.args.gate;
        let mut exit = report.exit(gate.strict, gate.fail_on_improvement);
        if self.stop.is_requested() {
            exit = exit.worst(Exit::Failure);
        }
        report.exit_code = Some(i32::from(exit.code()));
        self.write_json(&report)?;
        super::ab_reports::emit(&report, gate)?;
        out!("a/b folder: {}\n", self.ab_dir.display());
        // A within-job job holds both arms: its run.json's environment repeats it.
        if !within {
            for arm in &self.arms {
                out!("{}", self.repro_line(arm));
            }
        }
        Ok(exit)
    }

    /// `repro arm b: goldgate repro CASE …`: every word after the colon quoted for bash, so
    /// the line pasted into a shell runs `repro` and nothing else (a folder named
    /// `x $(touch y)` stays one word).
    fn repro_line(&self, arm: &Arm) -> String {
        let mut words = vec![
            "goldgate".to_owned(),
            "repro".into(),
            self.args.case.clone(),
        ];
        if let Some(p) = &self.args.select.platform {
            words.extend(["--platform".into(), p.clone()]);
        }
        for v in &arm.select.variants {
            words.extend(["--variant".into(), v.clone()]);
        }
        for e in arm.spec(&[]).env {
            words.extend(["--env".into(), e]);
        }
        if let Some(dir) = &arm.dir {
            words.extend(["--dir".into(), dir.display().to_string()]);
        }
        repro_line(arm.name, &words)
    }

    fn goldens(&self, report: &mut AbReport) -> Result<(), AppError> {
        let mut records = Vec::new();
        for job in report.jobs.iter().filter(|j| j.arm == "b" && !j.warmup) {
            let path = self.ab_dir.join(&job.results);
            let record = goldgate_core::records::load_record(&path)?;
            records.push((path, record));
        }
        let opts = goldgate_judge::compare::CompareOptions::from_config(
            self.config,
            self.args.golden_root.path.clone(),
            self.args.select.root.path.clone(),
            self.args.select.platform.clone(),
            self.args.gate.allow_env_mismatch,
        );
        let comparison = goldgate_judge::compare::compare_records(records, &opts)?;
        let timed = &self.config.ab.metrics;
        for job in comparison.jobs {
            if job.verdict == goldgate_schema::Verdict::MissingGolden && job.metrics.is_empty() {
                report.golden_note = Some(format!(
                    "no golden file for B ({} @ {}): its untimed metrics were judged against A only",
                    job.case, job.variant
                ));
            }
            report.goldens.extend(
                job.metrics
                    .into_iter()
                    .filter(|m| !timed.contains(&m.metric)),
            );
        }
        report.warnings.extend(comparison.warnings);
        Ok(())
    }
}

/// `repro arm NAME: WORD …` with each word quoted for bash.
fn repro_line(arm: &str, words: &[String]) -> String {
    let quoted: Vec<String> = (words.iter())
        .map(|w| goldgate_record::plan::shell_quote(w))
        .collect();
    format!("repro arm {arm}: {}\n", quoted.join(" "))
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The printed line pasted into bash runs `goldgate repro` with exactly these words: a
    /// folder named with `$(…)`, quotes and spaces is one word, and nothing in it runs.
    #[test]
    fn the_repro_line_pasted_into_bash_passes_each_word_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("planted");
        let arm_dir = format!(
            "{}/arm $(touch {}) it's \"here\"",
            dir.path().display(),
            planted.display()
        );
        let words: Vec<String> = [
            "goldgate",
            "repro",
            "demo/ckpt-power",
            "--env",
            "GOLDGATE_PLANT_EMPTY_CACHE=1",
            "--dir",
            &arm_dir,
        ]
        .map(str::to_owned)
        .to_vec();
        let line = repro_line("b", &words);
        let command = line.strip_prefix("repro arm b: ").unwrap().trim_end();
        // bash parses the pasted words as the arguments of printf instead of running goldgate.
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {command}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}");
        let parsed: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_owned)
            .collect();
        assert_eq!(parsed, words, "{line}");
        assert!(
            !planted.exists(),
            "pasting the line ran the $(touch …) in {line}"
        );
        let shown = line.replace(&dir.path().display().to_string(), "[TMP]");
        insta::assert_snapshot!(shown);
    }
}
