//! Arguments shared by the commands that pick cases and expand them into jobs
//! (`plan`, `repro`, `run`).

use std::path::PathBuf;

/// Where the cases are and which jobs to make of them.
#[derive(clap::Args, Debug, Clone)]
pub struct Selection {
    /// Root of the test-case tree (`<root>/<model>/<case>/model_config.yaml`).
    #[arg(long, default_value = "test_cases")]
    pub root: PathBuf,
    /// Repository configuration (platforms, variant axes, rules).
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: PathBuf,
    /// Choose one value of a variant axis, e.g. `--variant allocator=gc80`. Repeatable.
    #[arg(long = "variant", value_name = "AXIS=VALUE")]
    pub variants: Vec<String>,
    /// Expand every value of these axes (comma-separated), e.g. `--matrix allocator,checkpoint`.
    #[arg(long, value_name = "AXIS,...", value_delimiter = ',')]
    pub matrix: Vec<String>,
    /// Platform from goldgate.yaml (GPUs per node, launcher, paths).
    #[arg(long)]
    pub platform: Option<String>,
}
