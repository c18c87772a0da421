//! Exit codes: what each documented outcome of a goldgate command means, for `--help` and the
//! man pages. The codes themselves are the schema crate's (`goldgate_schema::Exit`); errors get
//! theirs in one place, `cmd::error::AppError::exit`.

use goldgate_schema::Exit;

/// Every exit code with what it means, as `--help`'s and the man pages' EXIT STATUS say it
/// (the same words as the book's exit-code table).
pub const DOCUMENTED: [(Exit, &str); 4] = [
    (
        Exit::Pass,
        "pass: every job ran and matched its golden values (or the command succeeded)",
    ),
    (
        Exit::Regression,
        "regression: a metric is beyond its tolerance in the bad direction (or, with --strict, unstable)",
    ),
    (
        Exit::Usage,
        "usage or configuration error: bad flags, malformed YAML or JSON, a missing or corrupt golden file",
    ),
    (
        Exit::Failure,
        "a job or the infrastructure failed: crash, timeout, out of memory, NCCL timeout, GitHub API refusal",
    ),
];

/// The EXIT STATUS block `--help` ends with.
pub fn help_text() -> String {
    let mut s = String::from("Exit status:\n");
    for (exit, meaning) in DOCUMENTED {
        s.push_str(&format!("  {}  {meaning}\n", exit.code()));
    }
    s.trim_end().to_owned()
}
