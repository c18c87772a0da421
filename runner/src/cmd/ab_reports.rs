//! `goldgate ab`'s outputs: the terminal report (stdout, or stderr when a report file goes to
//! stdout), `--markdown`, `--junit`, `--json` (atomic writes, `-` = stdout) and, under GitHub
//! Actions, the markdown appended to `$GITHUB_STEP_SUMMARY`. The renderers are `report::ab`'s.

use std::io::Write;
use std::path::Path;

use super::args::GateArgs;
use super::error::{AppError, CmdError};
use super::output::{err, out};
use goldgate_judge::compare::ab_outcome::AbReport;
use goldgate_judge::report::ab;

/// Prints and writes every requested form of `report`.
pub(crate) fn emit(report: &AbReport, gate: &GateArgs) -> Result<(), AppError> {
    let files = [&gate.markdown, &gate.junit, &gate.json];
    let stdout_taken = files
        .iter()
        .any(|p| p.as_deref().is_some_and(super::args::is_stdout));
    let text = ab::render_terminal(report);
    if stdout_taken {
        err!("{text}");
    } else {
        out!("{text}");
    }
    let markdown = ab::render_markdown(report);
    if let Some(path) = &gate.markdown {
        write(path, &markdown)?;
    }
    if let Some(path) = &gate.junit {
        write(path, &ab::render_junit(report)?)?;
    }
    if let Some(path) = &gate.json {
        write(path, &ab::render_json(report)?)?;
    }
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        append(Path::new(&path), &markdown)?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), AppError> {
    if super::args::is_stdout(path) {
        out!("{text}");
        return Ok(());
    }
    goldgate_core::fsio::write_atomic(path, text.as_bytes()).map_err(|source| {
        CmdError::Write {
            path: path.to_path_buf(),
            source,
        }
        .into()
    })
}

/// The step summary is shared by every step of a job: append, never replace.
fn append(path: &Path, text: &str) -> Result<(), AppError> {
    let fail = |source| CmdError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(fail)?;
    f.write_all(text.as_bytes()).map_err(fail)?;
    Ok(())
}
