//! `goldgate ab`'s outputs: the terminal report (stdout, or stderr when a report file goes to
//! stdout), `--markdown`, `--junit`, `--json` (atomic writes, `-` = stdout) and, under GitHub
//! Actions, the markdown appended to `$GITHUB_STEP_SUMMARY`. The renderers are `report::ab`'s.

use std::path::Path;

use super::args::GateArgs;
use super::error::{AppError, CmdError};
use super::output::{err, out};
use goldgate_judge::compare::ab::outcome::AbReport;
use goldgate_judge::report::ab;

/// Prints and writes every requested form of `report`.
pub(crate) fn emit(report: &AbReport, gate: &GateArgs) -> Result<(), AppError> {
    let files = [&gate.markdown, &gate.junit, &gate.json];
    let stdout_taken = files
        .iter()
        .any(|p| p.as_deref().is_some_and(super::output::is_stdout));
    let text = ab::render_terminal(report);
    if stdout_taken {
        err!("{text}");
    } else {
        out!("{text}");
    }
    let markdown = ab::render_markdown(report);
    let write = |path: &Path, text: &str| {
        super::output::write_report(path, text).map_err(|source| CmdError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    if let Some(path) = &gate.markdown {
        write(path, &markdown)?;
    }
    if let Some(path) = &gate.junit {
        write(path, &ab::render_junit(report)?)?;
    }
    if let Some(path) = &gate.json {
        write(path, &ab::render_json(report)?)?;
    }
    super::output::append_step_summary(&markdown)
        .map_err(|(path, source)| CmdError::Write { path, source })?;
    Ok(())
}
