//! Command-line argument groups shared by several subcommands (`#[command(flatten)]`), and the
//! value parsers they use.

pub use crate::duration::parse_duration;

use std::path::PathBuf;

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
