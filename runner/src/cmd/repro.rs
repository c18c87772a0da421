//! `goldgate repro`: prints a self-contained bash script that reproduces one job exactly.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{err, out};
use super::select::{Output, Selection, absolute, plan_selection};
use crate::exit::Exit;
use crate::plan::{Launcher, render_repro, resolve_program};

/// Arguments of `goldgate repro`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The case to reproduce (`<model>/<case>`).
    pub case: String,
    #[command(flatten)]
    pub select: Selection,
    /// Output folder the script writes to (`OUT/<run-id>/...`).
    #[arg(long, default_value = "goldgate-out")]
    pub out: PathBuf,
    /// Run id used in the job folders.
    #[arg(long, default_value = "repro")]
    pub run_id: String,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let output = Output {
        out_dir: absolute(&args.out)?,
        run_id: args.run_id,
    };
    let config = args.select.config.load()?;
    let filter = crate::plan::CaseFilter::new(std::slice::from_ref(&args.case), None, None)?;
    let selected = plan_selection(&config, &args.select, &filter, Some(1), 0, &output)?;
    let strict = args.select.strict_placeholders;
    err!("{}", selected.render_problems(strict));
    if selected.refused(strict) {
        return Ok(Exit::Usage);
    }
    let jobs = selected.jobs;
    let [job] = jobs.as_slice() else {
        let names: Vec<String> = jobs.iter().map(|j| j.variant.name()).collect();
        return Err(super::error::CmdError::NotOneJob {
            count: jobs.len(),
            names: names.join("; "),
        }
        .into());
    };
    let program = entry_program(
        job.launcher,
        job.runs.first().and_then(|r| r.entry_argv.first()),
    );
    out!("{}", render_repro(job, program.as_deref()));
    Ok(Exit::Pass)
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
