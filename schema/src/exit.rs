//! Exit codes: the documented outcomes of a goldgate command and what each means (`--help` and
//! the man pages print [`Exit::meaning`]); goldgate's errors get theirs in one place, the
//! runner's `AppError::exit`.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every job passed (or the command succeeded) |
//! | 1 | at least one regression (or, under `--strict`, an unstable metric) |
//! | 2 | usage or configuration error: bad flags, bad YAML or JSON, missing golden file |
//! | 3 | a job or the infrastructure failed: crash, timeout, out of memory, GitHub API refusal |
//!
//! A regression is data (a verdict), not an error: `compare` turns verdicts into an [`Exit`];
//! errors are mapped by `cmd::error::AppError::exit`.

use std::process::ExitCode;

/// The documented outcome of a goldgate command.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Exit {
    /// 0: all good.
    Pass,
    /// 1: a regression was found.
    Regression,
    /// 2: usage or configuration error.
    Usage,
    /// 3: a job or the infrastructure failed.
    Failure,
}

impl Exit {
    /// Every exit code, in the order `--help`, the man pages and the book list them.
    pub const ALL: [Exit; 4] = [Exit::Pass, Exit::Regression, Exit::Usage, Exit::Failure];

    /// What the code means, as `--help`'s and the man pages' EXIT STATUS say it (the same
    /// words as README's and the book's exit-code tables; a test checks README's).
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Pass => {
                "pass: every job ran and matched its golden values (or the command succeeded)"
            }
            Exit::Regression => {
                "regression: a metric is beyond its tolerance in the bad direction (or, with --strict, unstable)"
            }
            Exit::Usage => {
                "usage or configuration error: bad flags, malformed YAML or JSON, a missing or corrupt golden file"
            }
            Exit::Failure => {
                "a job or the infrastructure failed: crash, timeout, out of memory, NCCL timeout, GitHub API refusal"
            }
        }
    }

    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Pass => 0,
            Exit::Regression => 1,
            Exit::Usage => 2,
            Exit::Failure => 3,
        }
    }

    /// Combines two outcomes: a failure outranks a usage error, which outranks a regression.
    pub fn worst(self, other: Exit) -> Exit {
        fn rank(e: Exit) -> u8 {
            match e {
                Exit::Pass => 0,
                Exit::Regression => 1,
                Exit::Usage => 2,
                Exit::Failure => 3,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(Exit::ALL.map(Exit::code), [0, 1, 2, 3]);
        let meanings = Exit::ALL.map(Exit::meaning);
        assert!(meanings[0].starts_with("pass:") && meanings[1].starts_with("regression:"));
        assert!(meanings.iter().all(|m| !m.contains('\n')), "{meanings:?}");
    }

    #[test]
    fn worst_prefers_failure_then_usage_then_regression() {
        assert_eq!(Exit::Pass.worst(Exit::Regression), Exit::Regression);
        assert_eq!(Exit::Regression.worst(Exit::Usage), Exit::Usage);
        assert_eq!(Exit::Failure.worst(Exit::Usage), Exit::Failure);
        assert_eq!(Exit::Pass.worst(Exit::Pass), Exit::Pass);
    }
}
