//! Command-line argument groups shared by several subcommands (`#[command(flatten)]`), and the
//! value parsers they use. Each flag and its default is written once here.

pub use crate::duration::parse_duration;

use std::path::PathBuf;

/// `--root`: where the test cases are.
#[derive(clap::Args, Debug, Clone)]
pub struct CaseRoot {
    /// Root of the test-case tree (`<root>/<model>/<case>/model_config.yaml`; goldens beside a
    /// case are found too).
    #[arg(
        id = "root",
        long = "root",
        value_name = "ROOT",
        default_value = "test_cases"
    )]
    pub path: PathBuf,
}

/// `--golden-root`: goldgate's tree of golden files.
#[derive(clap::Args, Debug, Clone)]
pub struct GoldenRoot {
    /// Golden root (`<golden-root>/<model>/<case>/golden_values_*.json`, other variants under
    /// `variants/`); written by `bless`, read by the comparison.
    #[arg(
        id = "golden_root",
        long = "golden-root",
        value_name = "GOLDEN_ROOT",
        default_value = "golden"
    )]
    pub path: PathBuf,
}

/// `--config`: the repository's `goldgate.yaml`.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigFile {
    /// Repository configuration (platforms, variant axes, rules, check.ignore); the built-in
    /// one when the default `goldgate.yaml` does not exist.
    #[arg(
        id = "config",
        long = "config",
        value_name = "CONFIG",
        default_value = "goldgate.yaml"
    )]
    pub path: PathBuf,
}

/// How a comparison gates and where its reports go (`compare`, `run`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Unstable metrics fail the gate (exit 1).
    #[arg(long)]
    pub strict: bool,
    /// Improvements beyond tolerance fail the gate, so goldens get refreshed.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Compare even when the GPU model or driver differs from the golden platform.
    #[arg(long)]
    pub allow_env_mismatch: bool,
    /// Write the comparison as JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the comparison as markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// A platform name given on the command line: it becomes part of a golden file's name, so it
/// must be one plain path component (`--platform '../..'` is refused).
pub fn platform_name(text: &str) -> Result<String, String> {
    crate::fsio::check_component("platform", text)?;
    Ok(text.to_owned())
}

/// An environment name (`dev`, `lts`) given on the command line: also part of a golden file's
/// name.
pub fn environment_name(text: &str) -> Result<String, String> {
    crate::fsio::check_component("environment", text)?;
    Ok(text.to_owned())
}

/// The most retries `--retries` takes: a job retried more often than this is broken, not flaky.
pub const MAX_RETRIES: u32 = 100;

#[cfg(test)]
mod tests {
    /// clap checks a command's arguments only when it is built: build every subcommand's.
    #[test]
    fn every_subcommand_has_distinct_well_formed_arguments() {
        fn check<A: clap::Args>(name: &'static str) {
            A::augment_args(clap::Command::new(name)).debug_assert();
        }
        use crate::cmd::*;
        check::<list::Args>("list");
        check::<check::Args>("check");
        check::<plan::Args>("plan");
        check::<repro::Args>("repro");
        check::<run::Args>("run");
        check::<extract::Args>("extract");
        check::<compare::Args>("compare");
        check::<bless::Args>("bless");
        check::<calibrate::Args>("calibrate");
        check::<power::Args>("power");
        check::<report::Args>("report");
        check::<comment::Args>("comment");
    }
}
