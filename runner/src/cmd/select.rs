//! Arguments shared by the commands that pick cases and expand them into jobs
//! (`plan`, `repro`, `run`), and the loading they share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::case::{TestCase, discover, load_case};
use crate::config::Config;
use crate::exit::AppError;
use crate::plan::{Job, PlanInputs, VariantRequest, plan_case};

/// Where the cases are and which jobs to make of them.
#[derive(clap::Args, Debug, Clone)]
pub struct Selection {
    /// Root of the test-case tree (`<root>/<model>/<case>/model_config.yaml`).
    #[arg(long, default_value = "test_cases")]
    pub root: PathBuf,
    /// Repository configuration (platforms, variant axes, rules); the built-in one when the
    /// default `goldgate.yaml` does not exist.
    #[arg(long, default_value = "goldgate.yaml")]
    pub config: PathBuf,
    /// Choose one value of a variant axis, e.g. `--variant allocator=gc80`. Repeatable.
    #[arg(long = "variant", value_name = "AXIS=VALUE")]
    pub variants: Vec<String>,
    /// Expand every value of these axes (comma-separated), e.g. `--matrix allocator,checkpoint`.
    #[arg(long, value_name = "AXIS,...", value_delimiter = ',')]
    pub matrix: Vec<String>,
    /// Platform from goldgate.yaml (GPUs per node, launcher, paths).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
}

/// Where a plan's jobs write: `OUT/<run-id>/<case>/<variant>/<repeat>/`.
#[derive(Clone, Debug)]
pub struct Output {
    /// `OUT`, absolute.
    pub out_dir: PathBuf,
    pub run_id: String,
}

/// Loads the cases called `names` (`<model>/<case>`), or every case under `root` when empty.
pub fn load_cases(root: &Path, names: &[String]) -> Result<Vec<TestCase>, AppError> {
    let found = discover(root)?;
    let picked: Vec<_> = if names.is_empty() {
        found.iter().collect()
    } else {
        let mut picked = Vec::new();
        for name in names {
            let name = name.trim_end_matches('/');
            let case = found.iter().find(|c| c.name == name).ok_or_else(|| {
                AppError::usage(format!(
                    "no case `{name}` under {} (hint: `goldgate list --root {}` shows the cases)",
                    root.display(),
                    root.display()
                ))
            })?;
            picked.push(case);
        }
        picked
    };
    let mut cases = Vec::new();
    for case in picked {
        cases.push(load_case(root, &case.config_path)?);
    }
    Ok(cases)
}

/// The caller's environment as a map (variables that are not UTF-8 are left out).
pub fn caller_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Plans every job of `cases` under the selection and `config` (the selection's goldgate.yaml,
/// loaded once by the caller), `repeats` times each.
pub fn plan_jobs(
    config: &Config,
    selection: &Selection,
    cases: &[TestCase],
    repeats: u32,
    output: &Output,
) -> Result<Vec<Job>, AppError> {
    let platform = config.platform(selection.platform.as_deref())?;
    let request = VariantRequest::parse(config, &selection.variants, &selection.matrix)?;
    let base_dir = std::env::current_dir()
        .map_err(|e| AppError::failure(format!("cannot read the current directory: {e}")))?;
    let caller_env = caller_env();
    let inputs = PlanInputs {
        config,
        platform,
        out_dir: &output.out_dir,
        run_id: &output.run_id,
        base_dir: &base_dir,
        caller_env: &caller_env,
    };
    let mut jobs = Vec::new();
    for case in cases {
        jobs.extend(plan_case(&inputs, case, &request, repeats)?);
    }
    Ok(jobs)
}

/// `dir` made absolute against the current directory (job folders must not depend on the
/// folder a job runs in).
pub fn absolute(dir: &Path) -> Result<PathBuf, AppError> {
    std::path::absolute(dir)
        .map_err(|e| AppError::usage(format!("cannot use {}: {e}", dir.display())))
}
