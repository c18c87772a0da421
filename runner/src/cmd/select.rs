//! Arguments shared by the commands that pick cases and expand them into jobs
//! (`plan`, `repro`, `run`), and the loading they share.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::case::{TestCase, discover, load_case};
use crate::config::Config;
use crate::exit::AppError;
use crate::plan::{CaseFilter, Job, Partition, PlanInputs, VariantRequest, plan_case};

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

/// Which cases of the root a command takes (`plan`, `run`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CaseArgs {
    /// Cases (`<model>/<case>`) or globs of case names (`gpt/*`, `*resume*`); every case under
    /// the root when none. A name or glob that matches nothing is an error.
    #[arg(value_name = "CASE")]
    pub cases: Vec<String>,
    /// Only cases whose name matches this regular expression (as `goldgate list --filter`).
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// Only this share of the selected cases, for one of N CI runners: `hash:K/N` (a case stays
    /// in its partition when others are added) or `count:K/N` (even shares). A case's variants
    /// and repeats stay together.
    #[arg(long, value_name = "KIND:K/N")]
    pub partition: Option<Partition>,
}

impl CaseArgs {
    /// The validated filter.
    pub fn filter(&self) -> Result<CaseFilter, AppError> {
        Ok(CaseFilter::new(
            &self.cases,
            self.filter.as_deref(),
            self.partition,
        )?)
    }
}

/// Loads the cases the filter selects under `root`.
pub fn load_cases(root: &Path, filter: &CaseFilter) -> Result<Vec<TestCase>, AppError> {
    let found = discover(root)?;
    let picked = filter.select(&found, &root.display().to_string())?;
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

/// `--rerun-failed`: the newest run under `out` (by the start time in its `run.json`), and the
/// `(case, variant)` of every job in it that failed or never finished (interrupted, killed).
pub fn failed_in_newest_run(out: &Path) -> Result<(String, BTreeSet<(String, String)>), AppError> {
    let newest = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| crate::metrics::record::load_index(&e.path().join("run.json")).ok())
        .max_by_key(|index| {
            let started = index.started_at.parse::<jiff::Timestamp>().ok();
            (started, index.run_id.clone())
        })
        .ok_or_else(|| {
            AppError::usage(format!(
                "--rerun-failed: no earlier run under {} (hint: --out names the folder of runs)",
                out.display()
            ))
        })?;
    let failed = newest
        .jobs
        .iter()
        .filter(|j| j.outcome.as_ref().is_none_or(|o| !o.passed()))
        .filter_map(|j| {
            let (job, _repeat) = j.job_id.rsplit_once('#')?;
            let (case, variant) = job.split_once('@')?;
            Some((case.to_owned(), variant.to_owned()))
        })
        .collect();
    Ok((newest.run_id, failed))
}
