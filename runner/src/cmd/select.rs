//! Arguments shared by the commands that pick cases and expand them into jobs
//! (`plan`, `repro`, `run`): the flags of a selection, turned into `plan`'s [`plan::Selection`]
//! (the planning itself is `plan::plan_selection`), and the jobs `--rerun-failed` takes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::error::{AppError, CmdError};
use goldgate_core::config::{Config, ExecutorChoice, Platform};
use goldgate_record::plan::{self, CaseFilter, Partition};

/// Where the cases are and which jobs to make of them.
#[derive(clap::Args, Debug, Clone)]
pub struct Selection {
    #[command(flatten)]
    pub root: super::args::CaseRoot,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Choose one value of a variant axis, e.g. `--variant allocator=gc80`. Repeatable.
    #[arg(long = "variant", value_name = "AXIS=VALUE")]
    pub variants: Vec<String>,
    /// Expand every value of these axes (comma-separated), e.g. `--matrix allocator,checkpoint`.
    #[arg(long, value_name = "AXIS,...", value_delimiter = ',')]
    pub matrix: Vec<String>,
    /// Platform (GPUs per node, nodes, launcher, paths): goldgate.yaml's, or Megatron's built-in
    /// `dgx_a100`, `dgx_h100`, `dgx_gb200`. With `--scope`, also picks the recipe rows.
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
    #[command(flatten)]
    pub recipes: RecipeArgs,
    /// Nodes per job, replacing the recipe's and the platform's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub nodes: Option<u32>,
    /// GPUs (ranks) per node, replacing the recipe's and the platform's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: Option<u32>,
    /// What runs the jobs: `local` (process groups on this machine, one node) or `slurm` (one
    /// batch job per job, one launcher per node); default: the platform's `executor`.
    #[arg(long, value_parser = super::args::executor_name)]
    pub executor: Option<ExecutorChoice>,
    /// Refuse a case with a `${NAME}` placeholder nothing sets (else it stays as written, with
    /// one warning per name).
    #[arg(long)]
    pub strict_placeholders: bool,
}

impl Selection {
    /// The selection as `plan` takes it.
    pub fn plan(&self) -> plan::Selection {
        plan::Selection {
            root: self.root.path.clone(),
            variants: self.variants.clone(),
            matrix: self.matrix.clone(),
            platform: self.platform.clone(),
            recipes: self.recipes.query(),
            nodes: self.nodes,
            gpus_per_node: self.gpus_per_node,
            executor: self.executor,
        }
    }

    /// The executor that runs this selection's jobs on `platform`: `--executor`, else the
    /// platform's.
    pub fn executor_on(&self, platform: &Platform) -> ExecutorChoice {
        self.executor.unwrap_or(platform.executor)
    }

    /// The selection's platform (`--platform`, else the default) and its executor.
    pub fn executor<'c>(
        &self,
        config: &'c Config,
    ) -> Result<(&'c Platform, ExecutorChoice), AppError> {
        let platform = config.platform(self.platform.as_deref())?;
        Ok((platform, self.executor_on(platform)))
    }

    /// Where jobs' folders go: `--out` when given, else the platform's `slurm.job_root` for
    /// Slurm jobs when it has one (a folder every node sees), else `default` (absolute).
    pub fn out_dir(
        &self,
        config: &Config,
        out: Option<&Path>,
        default: &str,
    ) -> Result<PathBuf, AppError> {
        if let Some(out) = out {
            return absolute(out);
        }
        let (platform, executor) = self.executor(config)?;
        match (&platform.slurm.job_root, executor) {
            (Some(root), ExecutorChoice::Slurm) => Ok(root.clone()),
            _ => absolute(Path::new(default)),
        }
    }
}

/// Megatron's recipes and the filters of its recipe parser.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RecipeArgs {
    /// Megatron's recipe folder; default: goldgate.yaml's `recipes`, else
    /// `<root>/../../test_utils/recipes` (beside a Megatron-LM checkout's test cases).
    #[arg(long)]
    pub recipes: Option<PathBuf>,
    /// Run what Megatron runs for a scope (`mr`, `nightly`, `L1` ...): the recipe rows, each
    /// on its own platform and environment.
    #[arg(long)]
    pub scope: Option<String>,
    /// Only recipe rows of this cadence (`pr`, `nightly`, `mergegroup`, `weekly`).
    #[arg(long)]
    pub cadence: Option<String>,
    /// Megatron's environment (`dev` or `lts`): recipe rows and the golden file
    /// (`golden_values_<environment>_<platform>.json`). Default `dev`.
    #[arg(long, value_parser = super::args::environment_name)]
    pub environment: Option<String>,
}

impl RecipeArgs {
    /// The recipe flags as `plan` takes them.
    pub fn query(&self) -> plan::RecipeQuery {
        plan::RecipeQuery {
            recipes: self.recipes.clone(),
            scope: self.scope.clone(),
            cadence: self.cadence.clone(),
            environment: self.environment.clone(),
        }
    }
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

/// `dir` made absolute against the current directory (job folders must not depend on the
/// folder a job runs in).
pub(crate) fn absolute(dir: &Path) -> Result<PathBuf, AppError> {
    std::path::absolute(dir).map_err(|source| {
        CmdError::BadDir {
            dir: dir.to_path_buf(),
            source,
        }
        .into()
    })
}

/// The jobs of `selection` under `config`: `plan::plan_selection` on its flags.
pub(crate) fn plan_selection(
    config: &Config,
    selection: &Selection,
    filter: &CaseFilter,
    repeat: Option<u32>,
    warmup: u32,
    output: &plan::Output,
) -> Result<plan::Selected, AppError> {
    let selection = selection.plan();
    Ok(plan::plan_selection(
        config, &selection, filter, repeat, warmup, output,
    )?)
}

/// `--rerun-failed`: the newest run under `out` (by the start time in its `run.json`), and the
/// `(case, variant)` of every job in it that failed or never finished (interrupted, killed).
pub(crate) fn failed_in_newest_run(
    out: &Path,
) -> Result<(String, BTreeSet<(String, String)>), AppError> {
    let newest =
        goldgate_judge::compare::runs::newest_run(out).ok_or_else(|| CmdError::NoEarlierRun {
            out: out.to_path_buf(),
        })?;
    let failed = goldgate_judge::compare::runs::failed_pairs(&newest);
    Ok((newest.run_id, failed))
}
