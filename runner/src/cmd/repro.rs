//! `goldgate repro`: prints a self-contained bash script that reproduces one job exactly.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{err, out, stderr_color};
use super::select::{Selection, plan_selection};
use goldgate_core::config::{Config, ExecutorChoice};
use goldgate_record::plan::{
    BatchSpec, Job, Launcher, Output, batch_time_limit, render_batch, render_repro, resolve_program,
};
use goldgate_schema::Exit;

/// Arguments of `goldgate repro`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The case to reproduce (`<model>/<case>`).
    pub case: String,
    #[command(flatten)]
    pub select: Selection,
    /// Output folder the script writes to (`OUT/<run-id>/<case>/<variant>/<repeat>/`); the
    /// same default as `run`'s and `plan`'s (`results`, or the platform's `slurm.job_root` under
    /// Slurm), so the job's folder is the one `run` gives it, but for the run id.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run id used in the job folders (`goldgate run` makes a fresh one; `repro` keeps its
    /// script's files apart from every run's).
    #[arg(long, default_value = "repro")]
    pub run_id: String,
    /// Which repeat to reproduce (1-based): its folder and `REPEAT`, as a run with
    /// `--repeat N` or more gives that repeat.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Extra environment for the job (`NAME=VALUE`, repeatable): what an arm of `goldgate ab`
    /// adds (`ab` prints each arm's repro line).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = super::ab::parse_env)]
    pub env: Vec<(String, String)>,
    /// The folder the case's relative entry words resolve in (an `ab` arm's `--a-dir`/`--b-dir`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write the case's BEFORE_SCRIPT and AFTER_SCRIPT into the script, as `goldgate run
    /// --scripts` runs them. They may change the machine (MR-scope cases `pip uninstall`
    /// packages), so for the local executor the script leaves them out unless this flag or a
    /// platform with `scripts: true` asks; a Slurm batch script has them (the node runs them).
    #[arg(long, conflicts_with = "no_scripts")]
    pub scripts: bool,
    /// Never write the case's BEFORE_SCRIPT and AFTER_SCRIPT into the script.
    #[arg(long)]
    pub no_scripts: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let config = args.select.config.load()?;
    let output = Output {
        out_dir: args
            .select
            .out_dir(&config, args.out.as_deref(), "results")?,
        run_id: args.run_id,
        base_dir: args
            .dir
            .as_deref()
            .map(super::select::absolute)
            .transpose()?,
        env: args.env.clone(),
    };
    let filter =
        goldgate_record::plan::CaseFilter::new(std::slice::from_ref(&args.case), None, None)?;
    let repeats = Some(args.repeat);
    let selected = plan_selection(&config, &args.select, &filter, repeats, 0, &output)?;
    let strict = args.select.strict_placeholders;
    err!("{}", selected.render_problems(strict, stderr_color()));
    if selected.refused(strict) {
        return Ok(Exit::Usage);
    }
    let mut jobs = selected.jobs;
    jobs.retain(|j| j.repeat == args.repeat);
    for job in &mut jobs {
        for (k, v) in &args.env {
            job.env_unset.retain(|u| u != k);
            job.env.insert(k.clone(), v.clone());
        }
    }
    let (platform, executor) = args.select.executor(&config)?;
    let scripts = super::args::scripts_on(args.scripts, args.no_scripts, platform, executor);
    if !args.no_scripts {
        err!("{}", scripts_note(&jobs, scripts));
    }
    if !scripts {
        for job in &mut jobs {
            job.before_script = None;
            job.after_script = None;
        }
    }
    let [job] = jobs.as_slice() else {
        let names: Vec<String> = jobs.iter().map(|j| j.variant.name()).collect();
        return Err(super::error::CmdError::NotOneJob {
            count: jobs.len(),
            names: names.join("; "),
        }
        .into());
    };
    let program = job_entry_program(job);
    match executor {
        ExecutorChoice::Local => out!("{}", render_repro(job, program.as_deref())),
        ExecutorChoice::Slurm => out!("{}", batch_script(&config, job)?),
    }
    Ok(Exit::Pass)
}

/// What `repro` says on stderr about the case's scripts: left out, and how to have them; or
/// written in (once per script text), so nobody runs a `pip uninstall` unawares.
pub(crate) fn scripts_note(jobs: &[Job], written: bool) -> String {
    let mut scripts: Vec<(&str, &str, String)> = Vec::new();
    for job in jobs {
        let hooks = [
            ("BEFORE_SCRIPT", &job.before_script),
            ("AFTER_SCRIPT", &job.after_script),
        ];
        for (field, text) in hooks {
            if let Some(text) = text.as_deref() {
                let entry = (
                    job.case.as_str(),
                    field,
                    goldgate_record::plan::redact_text(job, text),
                );
                if !scripts.contains(&entry) {
                    scripts.push(entry);
                }
            }
        }
    }
    let Some((case, _, _)) = scripts.first() else {
        return String::new();
    };
    if !written {
        let fields: Vec<&str> = scripts.iter().map(|(_, f, _)| *f).collect();
        return format!(
            "note: the script leaves out the {} of {case} (`--scripts` writes them in, as \
             `goldgate run --scripts` runs them; `goldgate plan` shows them)\n",
            fields.join(" and ")
        );
    }
    let mut s = format!("goldgate: the script runs the scripts of {case} (bash -euo pipefail):\n");
    for (_, field, text) in scripts {
        s.push_str(&format!("  {field}:\n"));
        for line in text.lines() {
            s.push_str(&format!("    | {line}\n"));
        }
    }
    s
}

/// The batch script `sbatch` would get for `job` (console log `logs/console.log`, the time
/// limit of the job's case, platform or recipe), as `plan` and `repro` print it.
pub(super) fn batch_script(config: &Config, job: &Job) -> Result<String, AppError> {
    let platform = config.platform(Some(&job.platform))?;
    let program = job_entry_program(job);
    let log = job.dirs.logs.join("console.log");
    let spec = BatchSpec {
        slurm: &platform.slurm,
        time_limit: batch_time_limit(job, None, &platform.slurm),
        log: &log,
        entry_program: program.as_deref(),
        sampler: None,
        attempt_options: &[],
    };
    Ok(render_batch(job, &spec))
}

/// The job's bare entry resolved as `launch` would (see [`entry_program`]).
pub(super) fn job_entry_program(job: &Job) -> Option<String> {
    entry_program(
        job.launcher,
        job.runs.first().and_then(|r| r.entry_argv.first()),
    )
}

/// For a direct launch, the bare entry name resolved as `launch` would (next to goldgate's
/// executable, then PATH), so the script does not depend on goldgate's folder being on PATH.
fn entry_program(launcher: Launcher, first: Option<&String>) -> Option<String> {
    let name = first?;
    if launcher != Launcher::Direct || name.contains('/') {
        return None;
    }
    let exe = std::env::current_exe().ok();
    let exe_dir = exe.as_deref().and_then(Path::parent);
    let path_var = std::env::var_os("PATH");
    resolve_program(name, exe_dir, path_var.as_deref()).map(|p| p.display().to_string())
}
