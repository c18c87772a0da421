//! Exit codes: the documented outcomes of a goldgate command, defined in the schema crate
//! (`goldgate_schema::exit`) and re-exported here under their old path. Errors get theirs in
//! one place, `cmd::error::AppError::exit`.

pub use goldgate_schema::exit::Exit;

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
