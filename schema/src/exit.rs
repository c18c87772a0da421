//! Exit codes: the documented outcomes of a goldgate command (goldgate's errors get theirs in one
//! place, the runner's `AppError::exit`).
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
        assert_eq!(
            [Exit::Pass, Exit::Regression, Exit::Usage, Exit::Failure].map(Exit::code),
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn worst_prefers_failure_then_usage_then_regression() {
        assert_eq!(Exit::Pass.worst(Exit::Regression), Exit::Regression);
        assert_eq!(Exit::Regression.worst(Exit::Usage), Exit::Usage);
        assert_eq!(Exit::Failure.worst(Exit::Usage), Exit::Failure);
        assert_eq!(Exit::Pass.worst(Exit::Pass), Exit::Pass);
    }
}
