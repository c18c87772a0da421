//! Exit codes and the top-level error: the one place that maps outcomes to process exit codes.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every job passed (or the command succeeded) |
//! | 1 | at least one regression (or, under `--strict`, an unstable metric) |
//! | 2 | usage or configuration error: bad flags, bad YAML or JSON, missing golden file |
//! | 3 | a job or the infrastructure failed: crash, timeout, out of memory, GitHub API refusal |
//!
//! Stage errors implement [`Classify`] next to their definition, so `?` turns any of them
//! into an [`AppError`] without this module listing their variants.

use std::fmt;
use std::process::ExitCode;

/// The documented outcome of a goldgate command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
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

/// Which exit code an error maps to. Implemented by every stage's error enum.
pub trait Classify {
    /// `Exit::Usage` for bad input, `Exit::Failure` for jobs and infrastructure.
    fn exit(&self) -> Exit;
}

/// A command's failure: a diagnostic to print and the exit code it maps to.
pub struct AppError {
    /// The exit code the process ends with.
    pub exit: Exit,
    /// What to print (with source spans and hints where the stage provides them).
    pub report: miette::Report,
}

impl AppError {
    /// A usage error from a plain message.
    pub fn usage(msg: impl fmt::Display) -> AppError {
        AppError {
            exit: Exit::Usage,
            report: miette::miette!("{msg}"),
        }
    }

    /// An infrastructure failure from a plain message.
    pub fn failure(msg: impl fmt::Display) -> AppError {
        AppError {
            exit: Exit::Failure,
            report: miette::miette!("{msg}"),
        }
    }
}

impl fmt::Debug for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (exit {})", self.report, self.exit.code())
    }
}

impl<E> From<E> for AppError
where
    E: Classify + miette::Diagnostic + Send + Sync + 'static,
{
    fn from(e: E) -> AppError {
        AppError {
            exit: e.exit(),
            report: miette::Report::new(e),
        }
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
