//! Stage "plan": rendering a plan for people (a table per job) and for scripts (JSON).
//! Pure functions; secrets are redacted.

use std::fmt::Write as _;

use serde_json::json;

use super::job::{Job, redact_text, redacted_env};
use super::shell::shell_quote;

/// The master-port word `plan` shows where `launch` puts a free port.
pub const PORT_PLACEHOLDER: &str = "${MASTER_PORT}";

/// The jobs as text: a summary line, then each job's settings, environment and argv.
pub fn render_plan_text(jobs: &[Job]) -> String {
    let mut s = String::new();
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
        let _ = writeln!(s, "\n{}", job.id);
        let launcher = job.launcher.kind().as_str();
        let _ = writeln!(
            s,
            "  type     {} · {launcher} · {} rank{} · metrics: {}",
            job.test_type.as_str(),
            job.nproc,
            if job.nproc == 1 { "" } else { "s" },
            job.metrics.join(", ")
        );
        let _ = writeln!(s, "  folder   {}", job.dirs.job.display());
        let folder_vars = job.dirs.variables(job.repeat);
        let env = redacted_env(job);
        let shown: Vec<String> = env
            .iter()
            .filter(|(k, v)| folder_vars.get(*k) != Some(*v))
            .map(|(k, v)| shell_quote(&format!("{k}={v}")))
            .collect();
        write_list(&mut s, "env", &shown);
        write_list(&mut s, "unset", &job.env_unset);
        for (i, run) in job.runs.iter().enumerate() {
            let argv: Vec<String> = run
                .argv(&job.launcher, PORT_PLACEHOLDER)
                .iter()
                .map(|w| display_word(job, w))
                .collect();
            let _ = writeln!(s, "  run {}    {}", i + 1, argv.join(" "));
        }
    }
    s
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

/// The jobs as a JSON array (one object per job; argv with `${MASTER_PORT}` for the port).
pub fn render_plan_json(jobs: &[Job]) -> String {
    let items: Vec<serde_json::Value> = jobs
        .iter()
        .map(|job| {
            let runs: Vec<serde_json::Value> = job
                .runs
                .iter()
                .map(|run| {
                    let argv: Vec<String> = run
                        .argv(&job.launcher, PORT_PLACEHOLDER)
                        .iter()
                        .map(|w| redact_text(job, w))
                        .collect();
                    json!({ "argv": argv })
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
                "platform": job.platform,
                "dirs": job.dirs,
                "env": redacted_env(job),
                "env_unset": job.env_unset,
                "runs": runs,
                "metrics": job.metrics,
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".to_owned());
    text.push('\n');
    text
}
