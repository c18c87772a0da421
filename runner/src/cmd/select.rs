//! Arguments shared by the commands that pick cases and expand them into jobs
//! (`plan`, `repro`, `run`), and the loading and planning they share: case names, or the rows
//! of Megatron's recipes (`--scope`, `--cadence`, `--environment`, `--platform`), each planned
//! on its platform; a case that cannot be planned is reported on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::error::{AppError, CmdError};
use crate::case::{
    CaseRecipe, RecipeFilter, RecipeRow, Runner, TestCase, discover, for_case, load_case,
    load_recipes, select,
};
use crate::config::{Config, ExecutorChoice, Platform};
use crate::plan::{
    CaseFilter, Job, Partition, PlanInputs, Planned, Unset, VariantRequest, plan_case,
};

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

/// The recipe folder to use, if any.
fn recipe_dir(args: &RecipeArgs, root: &Path, config: &Config) -> Option<PathBuf> {
    if let Some(dir) = args.recipes.clone().or_else(|| config.recipes.clone()) {
        return Some(dir);
    }
    let beside = root.join("../../test_utils/recipes");
    beside.is_dir().then_some(beside)
}

/// Every recipe row (`recipes` and Megatron's `local_recipes` beside it); none without a folder.
pub(crate) fn load_rows(
    args: &RecipeArgs,
    root: &Path,
    config: &Config,
) -> Result<Vec<RecipeRow>, AppError> {
    let Some(dir) = recipe_dir(args, root, config) else {
        if args.scope.is_some() || args.cadence.is_some() {
            return Err(CmdError::NoRecipes {
                root: root.to_path_buf(),
            }
            .into());
        }
        return Ok(Vec::new());
    };
    let mut rows = load_recipes(&dir)?;
    let local = dir.with_file_name("local_recipes");
    if local.is_dir() {
        rows.extend(load_recipes(&local)?);
    }
    Ok(rows)
}

/// Where a plan's jobs write: `OUT/<run-id>/<case>/<variant>/<repeat>/`.
#[derive(Clone, Debug)]
pub struct Output {
    /// `OUT`, absolute.
    pub out_dir: PathBuf,
    pub run_id: String,
    /// Where relative entry words resolve (default: the current folder); `goldgate ab`'s
    /// `--a-dir`/`--b-dir` (a checkout of the workload per arm).
    pub base_dir: Option<PathBuf>,
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

/// A case that could not be loaded or planned, and why (an error of its own).
pub(crate) struct CaseFailure {
    pub case: String,
    pub error: AppError,
}

/// What a selection planned.
#[derive(Default)]
pub(crate) struct Selected {
    pub jobs: Vec<Job>,
    /// Placeholders nothing sets, one per name.
    pub unset: Vec<Unset>,
    /// Cases that could not be loaded or planned.
    pub failures: Vec<CaseFailure>,
    /// Recipe rows of the selection that Megatron runs by other means (unit tests, perf
    /// scripts) or whose case folder is missing: `(row name, why)`.
    pub skipped: Vec<(String, String)>,
}

/// One case on one platform, with what its recipes say.
struct Target<'a> {
    name: String,
    platform: Option<String>,
    environment: String,
    row: Option<&'a RecipeRow>,
}

/// Plans the selection under `config` (the selection's goldgate.yaml, loaded once by the
/// caller): the cases `filter` picks, or of those the recipe rows of `--scope`/`--cadence`.
/// `repeat` is `--repeat` when given; `warmup` more repeats come first, marked.
pub(crate) fn plan_selection(
    config: &Config,
    selection: &Selection,
    filter: &CaseFilter,
    repeat: Option<u32>,
    warmup: u32,
    output: &Output,
) -> Result<Selected, AppError> {
    selection
        .platform
        .as_deref()
        .map(|name| config.platform(Some(name)))
        .transpose()?;
    let rows = load_rows(&selection.recipes, &selection.root.path, config)?;
    let found = discover(&selection.root.path)?;
    let picked = picked_names(filter, &found, &selection.root.path)?;
    let mut selected = Selected::default();
    let recipe = &selection.recipes;
    let targets = if recipe.scope.is_some() || recipe.cadence.is_some() {
        scope_targets(
            selection,
            &picked,
            &rows,
            &found,
            filter,
            &mut selected.skipped,
        )
    } else {
        case_targets(selection, &picked)
    };
    let planner = Planner {
        config,
        selection,
        request: VariantRequest::parse(config, &selection.variants, &selection.matrix)?,
        base_dir: base_dir(output)?,
        caller_env: caller_env(),
        rows: &rows,
        output,
        repeat,
        warmup,
    };
    let mut cases: BTreeMap<String, Result<TestCase, String>> = BTreeMap::new();
    for target in targets {
        let Some(case_ref) = found.iter().find(|c| c.name == target.name) else {
            continue;
        };
        let case = cases.entry(target.name.clone()).or_insert_with(|| {
            load_case(&selection.root.path, &case_ref.config_path).map_err(|e| e.to_string())
        });
        let planned = match case {
            Ok(case) => planner.plan(&target, case),
            Err(message) => Err(CmdError::CaseNotLoaded {
                message: message.clone(),
            }
            .into()),
        };
        selected.add(&target.name, planned);
    }
    Ok(selected)
}

/// Where relative entry words resolve: the output's folder, else the current one.
fn base_dir(output: &Output) -> Result<PathBuf, AppError> {
    match &output.base_dir {
        Some(dir) => Ok(dir.clone()),
        None => std::env::current_dir().map_err(|source| CmdError::Cwd { source }.into()),
    }
}

/// The names of the discovered cases `filter` picks.
fn picked_names(
    filter: &CaseFilter,
    found: &[crate::case::CaseRef],
    root: &Path,
) -> Result<Vec<String>, AppError> {
    Ok(filter
        .select(found, &root.display().to_string())?
        .into_iter()
        .map(|c| c.name.clone())
        .collect())
}

/// What every target of a selection is planned with.
struct Planner<'a> {
    config: &'a Config,
    selection: &'a Selection,
    request: VariantRequest,
    base_dir: PathBuf,
    caller_env: BTreeMap<String, String>,
    rows: &'a [RecipeRow],
    output: &'a Output,
    repeat: Option<u32>,
    warmup: u32,
}

impl Planner<'_> {
    /// The jobs of one target: its case on its platform, with its recipe row.
    fn plan(&self, target: &Target<'_>, case: &TestCase) -> Result<Planned, AppError> {
        let platform = self.config.platform(target.platform.as_deref())?;
        let recipe = match target.row {
            Some(row) => CaseRecipe {
                exact: Some(row),
                any: Some(row),
            },
            None => for_case(self.rows, &target.name, &target.environment, &platform.name),
        };
        let inputs = PlanInputs {
            config: self.config,
            platform,
            out_dir: &self.output.out_dir,
            run_id: &self.output.run_id,
            base_dir: &self.base_dir,
            caller_env: &self.caller_env,
            environment: &target.environment,
            nodes: self.selection.nodes,
            gpus_per_node: self.selection.gpus_per_node,
            warmup: self.warmup,
            fit_nodes: self.selection.executor_on(platform) == ExecutorChoice::Slurm,
        };
        Ok(plan_case(
            &inputs,
            case,
            recipe,
            &self.request,
            self.repeat,
        )?)
    }
}

impl Selected {
    /// One target's jobs (placeholders nothing sets kept once per name), or why it failed.
    fn add(&mut self, case: &str, planned: Result<Planned, AppError>) {
        match planned {
            Ok(planned) => {
                self.jobs.extend(planned.jobs);
                for u in planned.unset {
                    if !self.unset.iter().any(|s| s.name == u.name) {
                        self.unset.push(u);
                    }
                }
            }
            Err(error) => self.failures.push(CaseFailure {
                case: case.to_owned(),
                error,
            }),
        }
    }

    /// What goes to stderr before the jobs run or print: skipped recipe rows, placeholders
    /// nothing sets (one line per name), and the cases that could not be planned.
    pub fn render_problems(&self, strict: bool) -> String {
        let mut s = String::new();
        for (row, why) in &self.skipped {
            s.push_str(&format!("note: skipped {row}: {why}\n"));
        }
        let level = if strict { "error" } else { "warning" };
        for u in &self.unset {
            let what = if strict { "" } else { "; left as written" };
            s.push_str(&format!(
                "{level}: {}: `${{{}}}` is set by nothing (the environment, the platform, the case's ENV_VARS){what} (case {})\n",
                u.place, u.name, u.case
            ));
        }
        for f in &self.failures {
            s.push_str(&super::output::render_error(&f.error, Some(&f.case), false));
        }
        s
    }

    /// Whether the selection must not run: a case failed, or (strict) a placeholder is unset.
    pub fn refused(&self, strict: bool) -> bool {
        !self.failures.is_empty() || (strict && !self.unset.is_empty())
    }
}

/// The (case, platform, environment) triples to plan without a recipe scope or cadence:
/// each of the filter's cases on the selection's platform and environment (`dev` by default).
fn case_targets<'a>(selection: &Selection, picked: &[String]) -> Vec<Target<'a>> {
    let environment = selection
        .recipes
        .environment
        .clone()
        .unwrap_or_else(|| "dev".to_owned());
    picked
        .iter()
        .map(|name| Target {
            name: name.clone(),
            platform: selection.platform.clone(),
            environment: environment.clone(),
            row: None,
        })
        .collect()
}

/// The recipe rows Megatron's parser selects, each on its own platform and environment; rows
/// Megatron runs by other means, or whose case folder is missing, are noted and skipped.
fn scope_targets<'a>(
    selection: &Selection,
    picked: &[String],
    rows: &'a [RecipeRow],
    found: &[crate::case::CaseRef],
    case_filter: &CaseFilter,
    skipped: &mut Vec<(String, String)>,
) -> Vec<Target<'a>> {
    let recipe = &selection.recipes;
    let named = |case: &str| picked.iter().any(|n| n == case);
    let filter = RecipeFilter {
        scope: recipe.scope.clone(),
        cadence: recipe.cadence.clone(),
        environment: recipe.environment.clone(),
        platform: selection.platform.clone(),
    };
    let mut out = Vec::new();
    for row in select(rows, &filter) {
        if !named(&row.case) {
            // A row of the scope whose case is not among the discovered ones is left out:
            // say so when the case filter would have picked it by name.
            let unlisted = !found.iter().any(|c| c.name == row.case);
            if unlisted
                && case_filter.names(&row.case)
                && let Some(why) = not_run_reason(row, found, &selection.root.path)
            {
                skipped.push((row.name.clone(), why));
            }
            continue;
        }
        if let Some(why) = not_run_reason(row, found, &selection.root.path) {
            skipped.push((row.name.clone(), why));
        } else {
            out.push(Target {
                name: row.case.clone(),
                platform: row.platform.clone(),
                environment: row.environment.clone().unwrap_or_else(|| "dev".to_owned()),
                row: Some(row),
            });
        }
    }
    out
}

/// Why `goldgate run --scope` does not run a recipe row, or `None` when it does: Megatron runs
/// it by other means (its recipe's script is not `run_ci_test.sh`), or its case has no
/// `model_config.yaml` (a folder of Python files or golden files only) or no folder at all.
/// `list --scope` and `plan`/`run --scope` give the same reasons.
pub(crate) fn not_run_reason(
    row: &RecipeRow,
    found: &[crate::case::CaseRef],
    root: &Path,
) -> Option<String> {
    if let Ok(Runner::Other(what)) = row.script.as_ref().map(|s| s.runner.clone()) {
        return Some(format!("its recipe runs {what}, not run_ci_test.sh"));
    }
    if found.iter().any(|c| c.name == row.case) {
        return None;
    }
    Some(if root.join(&row.case).is_dir() {
        format!(
            "no {} in its case folder {}",
            crate::case::CONFIG_FILE,
            row.case
        )
    } else {
        format!("no case folder {}", row.case)
    })
}

/// The caller's environment as a map (variables that are not UTF-8 are left out).
pub fn caller_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// `dir` made absolute against the current directory (job folders must not depend on the
/// folder a job runs in).
pub fn absolute(dir: &Path) -> Result<PathBuf, AppError> {
    std::path::absolute(dir).map_err(|source| {
        CmdError::BadDir {
            dir: dir.to_path_buf(),
            source,
        }
        .into()
    })
}

/// The `run.json` of the newest run under `out` (by its start time), if there is one.
pub(crate) fn newest_run(out: &Path) -> Option<crate::metrics::RunIndex> {
    std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| crate::metrics::record::load_index(&e.path().join("run.json")).ok())
        .max_by_key(|index| {
            let started = index.started_at.parse::<jiff::Timestamp>().ok();
            (started, index.run_id.clone())
        })
}

/// `--rerun-failed`: the newest run under `out` (by the start time in its `run.json`), and the
/// `(case, variant)` of every job in it that failed or never finished (interrupted, killed).
pub(crate) fn failed_in_newest_run(
    out: &Path,
) -> Result<(String, BTreeSet<(String, String)>), AppError> {
    let newest = newest_run(out).ok_or_else(|| CmdError::NoEarlierRun {
        out: out.to_path_buf(),
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
