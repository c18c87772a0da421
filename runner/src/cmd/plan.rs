//! `goldgate plan`: prints the expanded jobs with their environment changes and argv, without launching anything.

use std::path::PathBuf;

use super::error::AppError;
use super::output::{err, out, stderr_color};
use super::select::{CaseArgs, Selection, plan_selection};
use goldgate_record::plan::{Output, render_plan_json, render_plan_text};
use goldgate_schema::Exit;

/// Arguments of `goldgate plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub which: CaseArgs,
    #[command(flatten)]
    pub select: Selection,
    /// Repeats per job (default: the case's `ENV_VARS.N_REPEAT`, else 1).
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Output folder the jobs would write to (`OUT/<run-id>/...`); the same default as `run`'s
    /// (`results`, or the platform's `slurm.job_root` under Slurm), so the paths shown are the
    /// ones `run` uses, but for the run id.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run id used in the job folders (`goldgate run` makes a fresh one).
    #[arg(long, default_value = "plan")]
    pub run_id: String,
    /// Output format (`json`: `{"schema_version", "jobs": [...]}`, one object per job and
    /// repeat, with each run's argv and environment).
    #[arg(long, value_enum, default_value_t = super::list::Format::Table)]
    pub format: super::list::Format,
}

/// The plan's text with a line after its first: where the job folders shown lie, and where
/// `goldgate run` puts the same jobs (the run id is the only difference).
fn with_folder_note(text: String, run_dir: &std::path::Path) -> String {
    let Some((first, rest)) = text.split_once('\n').filter(|(_, rest)| !rest.is_empty()) else {
        return text;
    };
    let out = run_dir.parent().unwrap_or(run_dir);
    format!(
        "{first}\njob folders under {}/; `goldgate run` puts the same jobs under {}/<run-id>/ \
         (a fresh run id, YYYYMMDD-HHMMSS-xxxx)\n{rest}",
        run_dir.display(),
        out.display()
    )
}

/// Runs the command: every job that plans is printed; a case that does not plan is reported
/// on stderr without stopping the others (exit 2 then).
pub fn run(args: Args) -> Result<Exit, AppError> {
    let config = args.select.config.load()?;
    let output = Output {
        out_dir: args
            .select
            .out_dir(&config, args.out.as_deref(), "results")?,
        run_id: args.run_id,
        base_dir: None,
        env: Vec::new(),
    };
    let filter = args.which.filter()?;
    let selected = plan_selection(&config, &args.select, &filter, args.repeat, 0, &output)?;
    let text = match args.format {
        // Nothing planned because cases failed: the errors below say it, not a `0 jobs` first.
        super::list::Format::Table if selected.jobs.is_empty() && !selected.failures.is_empty() => {
            String::new()
        }
        super::list::Format::Table => with_folder_note(
            render_plan_text(&selected.jobs),
            &output.out_dir.join(&output.run_id),
        ),
        super::list::Format::Json => render_plan_json(&selected.jobs),
    };
    out!("{text}");
    let slurm = args.select.executor(&config)?.1 == goldgate_core::config::ExecutorChoice::Slurm;
    if slurm && matches!(args.format, super::list::Format::Table) {
        for job in &selected.jobs {
            out!(
                "\n── batch script of {} (sbatch) ──\n{}",
                job.id,
                super::repro::batch_script(&config, job)?
            );
        }
    }
    let strict = args.select.strict_placeholders;
    err!("{}", selected.render_problems(strict, stderr_color()));
    Ok(if selected.refused(strict) {
        Exit::Usage
    } else {
        Exit::Pass
    })
}
