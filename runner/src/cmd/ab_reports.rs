//! `goldgate ab`'s outputs: the terminal report (stdout, or stderr when a report file goes to
//! stdout), `--markdown`, `--junit`, `--json` (atomic writes, `-` = stdout) and, under GitHub
//! Actions, the markdown appended to `$GITHUB_STEP_SUMMARY`. The renderers are `report::ab`'s.

use super::args::GateArgs;
use super::error::AppError;
use super::output::{err, out};
use super::report_files::ReportFiles;
use goldgate_judge::compare::ab::outcome::AbReport;
use goldgate_judge::report::ab;

/// Prints and writes every requested form of `report`.
pub(crate) fn emit(report: &AbReport, gate: &GateArgs) -> Result<(), AppError> {
    let files = ReportFiles {
        markdown: gate.markdown.as_deref(),
        junit: gate.junit.as_deref(),
        json: gate.json.as_deref(),
    };
    let text = ab::render_terminal(report);
    if files.stdout_taken() {
        err!("{text}");
    } else {
        out!("{text}");
    }
    files.write(
        &ab::render_markdown(report),
        || ab::render_junit(report),
        || ab::render_json(report),
    )
}
