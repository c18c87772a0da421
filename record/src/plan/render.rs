//! Stage "plan": rendering a plan for people (a table per job) and for scripts (JSON).
//! Pure functions; secrets are redacted.

use std::fmt::Write as _;

use serde_json::json;

use super::job::{Job, RunAction, redact_text, redacted_env};
use super::shell::shell_quote;

/// The master-port word `plan` shows where `launch` puts a free port.
pub const PORT_PLACEHOLDER: &str = "${MASTER_PORT}";

/// The jobs as text: a summary line, then each job's settings, environment and argv
/// (`0 jobs` alone when nothing planned: no platform to name).
pub fn render_plan_text(jobs: &[Job]) -> String {
    let mut s = String::new();
    if jobs.is_empty() {
        return "0 jobs\n".to_owned();
    }
    let platforms: Vec<&str> = {
        let mut p: Vec<&str> = jobs.iter().map(|j| j.platform.as_str()).collect();
        p.dedup();
        p
    };
    let noun = if jobs.len() == 1 { "job" } else { "jobs" };
    let _ = writeln!(
        s,
        "{} {noun} on platform {}",
        jobs.len(),
        platforms.join(", ")
    );
    for job in jobs {
        render_job(&mut s, job);
    }
    s
}

fn render_job(s: &mut String, job: &Job) {
    render_head(s, job);
    if let Some(recipe) = &job.recipe {
        let env = job.environment.as_deref().unwrap_or("-");
        let fit = if recipe.exact {
            ""
        } else {
            " (training script only: another platform's row)"
        };
        let _ = writeln!(
            s,
            "  recipe   {} · {env} · {}{fit}",
            recipe.file.display(),
            recipe.name
        );
    }
    let _ = writeln!(s, "  folder   {}", job.dirs.job.display());
    let folder_vars = job.dirs.variables(job.repeat);
    let env = redacted_env(job);
    let shown: Vec<String> = env
        .iter()
        .filter(|(k, v)| folder_vars.get(*k) != Some(*v))
        .map(|(k, v)| shell_quote(&format!("{k}={v}")))
        .collect();
    write_list(s, "env", &shown);
    write_list(s, "unset", &job.env_unset);
    if let Some(script) = &job.before_script {
        write_list(s, "before", &script_lines(job, script));
    }
    let site = job.site(PORT_PLACEHOLDER);
    for (i, run) in job.runs.iter().enumerate() {
        for action in &run.before {
            let _ = writeln!(s, "  then     {}", action_text(action));
        }
        let argv: Vec<String> = run
            .argv(&job.launcher, &site)
            .iter()
            .map(|w| display_word(job, w))
            .collect();
        let _ = writeln!(s, "  run {}    {}", i + 1, argv.join(" "));
    }
    if let Some(script) = &job.after_script {
        write_list(s, "after", &script_lines(job, script));
    }
}

/// The job's id, kind, size, recipe and folder.
fn render_head(s: &mut String, job: &Job) {
    let _ = writeln!(s, "\n{}", job.id);
    let launcher = job.launcher.kind().as_str();
    let ranks = if job.nodes > 1 {
        format!("{} nodes × {} ranks", job.nodes, job.nproc)
    } else {
        format!(
            "{} rank{}",
            job.nproc,
            if job.nproc == 1 { "" } else { "s" }
        )
    };
    let _ = writeln!(
        s,
        "  type     {} · {launcher} · {ranks} · metrics: {}",
        job.test_type.as_str(),
        job.metrics.join(", ")
    );
}

/// A script's non-empty lines, secrets redacted.
fn script_lines(job: &Job, script: &str) -> Vec<String> {
    script
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| redact_text(job, l))
        .collect()
}

/// A step between runs, as a person reads it.
pub(crate) fn action_text(action: &RunAction) -> String {
    match action {
        RunAction::RemoveCheckpoint { dir, iteration } => {
            format!("remove {}/iter_{iteration:07}", dir.display())
        }
        RunAction::WriteLatestIteration { dir, iteration } => format!(
            "write {iteration} to {}/latest_checkpointed_iteration.txt",
            dir.display()
        ),
    }
}

/// A word for display: the port placeholder as a shell reference, secrets redacted, quoted.
fn display_word(job: &Job, word: &str) -> String {
    if word == PORT_PLACEHOLDER {
        return format!("\"{PORT_PLACEHOLDER}\"");
    }
    shell_quote(&redact_text(job, word))
}

fn write_list(s: &mut String, label: &str, items: &[String]) {
    for (i, item) in items.iter().enumerate() {
        let head = if i == 0 { label } else { "" };
        let _ = writeln!(s, "  {head:<8} {item}");
    }
}

/// Version of `plan --format json`'s layout (`{"schema_version", "jobs": [...]}`); raised when
/// a field changes meaning or goes away.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// The jobs as JSON: `schema_version` and `jobs`, one object per job (argv with
/// `${MASTER_PORT}` for the port).
pub fn render_plan_json(jobs: &[Job]) -> String {
    let items: Vec<serde_json::Value> = jobs
        .iter()
        .map(|job| {
            let site = job.site(PORT_PLACEHOLDER);
            let runs: Vec<serde_json::Value> = job
                .runs
                .iter()
                .map(|run| {
                    let argv: Vec<String> = run
                        .argv(&job.launcher, &site)
                        .iter()
                        .map(|w| redact_text(job, w))
                        .collect();
                    json!({
                        "argv": argv,
                        "env": run.env,
                        "nproc": run.nproc.unwrap_or(job.nproc),
                        "before": run.before,
                    })
                })
                .collect();
            json!({
                "id": job.id,
                "case": job.case,
                "variant": job.variant.name(),
                "variant_slug": job.variant.slug(),
                "choices": job
                    .variant
                    .choices
                    .iter()
                    .map(|(axis, value)| (axis.clone(), json!(value)))
                    .collect::<serde_json::Map<_, _>>(),
                "repeat": job.repeat,
                "test_type": job.test_type,
                "launcher": job.launcher,
                "nproc": job.nproc,
                "nodes": job.nodes,
                "platform": job.platform,
                "environment": job.environment,
                "recipe": job.recipe,
                "train_iters": job.train_iters,
                "before_script": job.before_script.as_deref().map(|t| redact_text(job, t)),
                "after_script": job.after_script.as_deref().map(|t| redact_text(job, t)),
                "skip_checks": job.skip_checks,
                "expect_failure": job.expect_failure,
                "dirs": job.dirs,
                "env": redacted_env(job),
                "env_unset": job.env_unset,
                "runs": runs,
                "metrics": job.metrics,
            })
        })
        .collect();
    let doc = json!({"schema_version": PLAN_SCHEMA_VERSION, "jobs": items});
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}
