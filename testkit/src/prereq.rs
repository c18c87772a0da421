//! What a test does when something it needs (python3, PyYAML, the Megatron-LM corpus) is not
//! on this machine, the one place that decides it: on a developer machine it prints one
//! `skipped:` line and the test returns; under `CI=true` the test fails, naming what is
//! missing, since a skip there would pass without checking anything (`.ci/run` installs every
//! prerequisite). Hardware (a GPU, a Slurm cluster) has its own switch, as `.ci/run` can only
//! start a cluster where it has root: `GOLDGATE_SLURM_REQUIRED` (runner/tests/integration/slurm.rs).
//!
//! A skip line goes through [`missing`] only: `runner/tests/integration/prerequisites.rs` fails
//! on any other `"skipped: ` in the workspace's code.

use std::io::Write as _;

/// Whether this is a CI run, where a missing prerequisite fails the test.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// What [`missing`] does about `what` when `ci` says whether this is a CI run: `Err` with the
/// failure message under CI, else `Ok` with the skip line.
pub fn decide(test: &str, what: &str, ci: bool) -> Result<String, String> {
    match ci {
        true => Err(format!(
            "{test}: {what}, and CI=true: a missing prerequisite fails the run (.ci/run \
             installs it)"
        )),
        false => Ok(format!("skipped: {test}: {what}")),
    }
}

/// Reports that `what` is missing: under `CI=true` the calling test fails; otherwise the skip
/// line goes to the real stderr (not through `eprintln!`, which the harness shows only for
/// failures: a skip must be visible in a passing run's output) and the caller returns.
pub fn missing(what: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    match decide(test, what, required()) {
        Ok(line) => {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
        Err(message) => panic!("{message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::decide;

    #[test]
    fn under_ci_a_missing_prerequisite_fails_and_elsewhere_it_skips() {
        let ci = decide("t", "python3 not found", true).unwrap_err();
        assert!(
            ci.contains("python3 not found") && ci.contains("CI=true"),
            "{ci}"
        );
        assert_eq!(
            decide("t", "python3 not found", false).as_deref(),
            Ok("skipped: t: python3 not found")
        );
    }
}
