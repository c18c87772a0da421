//! The report files a gate writes — `--markdown`, `--junit`, `--json` (atomic writes, `-`:
//! stdout) — and, under GitHub Actions, the markdown appended to `$GITHUB_STEP_SUMMARY`; one
//! way for `goldgate compare` (and `run`) and `goldgate ab`.

use std::path::Path;

use super::error::{AppError, CmdError};
use super::output::{append_step_summary, is_stdout, write_report};
use goldgate_judge::report::ReportError;

/// The report files asked for.
pub(crate) struct ReportFiles<'a> {
    pub(crate) markdown: Option<&'a Path>,
    pub(crate) junit: Option<&'a Path>,
    pub(crate) json: Option<&'a Path>,
}

impl ReportFiles<'_> {
    /// Whether one of them goes to stdout (the terminal report then goes to stderr).
    pub(crate) fn stdout_taken(&self) -> bool {
        [self.markdown, self.junit, self.json]
            .into_iter()
            .any(|p| p.is_some_and(is_stdout))
    }

    /// Writes each file asked for (JUnit and JSON rendered only then) and appends `markdown`
    /// to the step summary.
    pub(crate) fn write(
        &self,
        markdown: &str,
        junit: impl FnOnce() -> Result<String, ReportError>,
        json: impl FnOnce() -> Result<String, ReportError>,
    ) -> Result<(), AppError> {
        if let Some(path) = self.markdown {
            write(path, markdown)?;
        }
        if let Some(path) = self.junit {
            write(path, &junit()?)?;
        }
        if let Some(path) = self.json {
            write(path, &json()?)?;
        }
        append_step_summary(markdown).map_err(|(path, source)| CmdError::Write { path, source })?;
        Ok(())
    }
}

fn write(path: &Path, text: &str) -> Result<(), CmdError> {
    write_report(path, text).map_err(|source| CmdError::Write {
        path: path.to_path_buf(),
        source,
    })
}
