//! Stage "plan": case selection — which cases of the root, or which rows of Megatron's recipes
//! (`--scope`, `--cadence`, `--environment`, `--platform`), each planned on its platform; a
//! case that cannot be loaded or planned is reported on its own. The command line's
//! `Selection` is turned into the plain [`Selection`] here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::SelectError;
use super::{CaseFilter, Job, PlanInputs, Planned, Unset, VariantRequest, plan_case};
use goldgate_core::case::{
    CaseRecipe, RecipeFilter, RecipeRow, Runner, TestCase, discover, for_case,
    load_case_noting_duplicates, load_recipes, select,
};
use goldgate_core::config::{Config, ExecutorChoice, Platform};

/// Where the cases are and which jobs to make of them (the command line's selection flags).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The case root.
    pub root: PathBuf,
    /// `--variant AXIS=VALUE`, each.
    pub variants: Vec<String>,
    /// `--matrix AXIS,...`: axes expanded to every value.
    pub matrix: Vec<String>,
    /// `--platform`; with a recipe scope it also picks the recipe rows.
    pub platform: Option<String>,
    pub recipes: RecipeQuery,
    /// Nodes per job, replacing the recipe's and the platform's.
    pub nodes: Option<u32>,
    /// GPUs (ranks) per node, replacing the recipe's and the platform's.
    pub gpus_per_node: Option<u32>,
    /// `--executor`, else the platform's.
    pub executor: Option<ExecutorChoice>,
}

impl Selection {
    /// The executor that runs this selection's jobs on `platform`: `--executor`, else the
    /// platform's.
    pub fn executor_on(&self, platform: &Platform) -> ExecutorChoice {
        self.executor.unwrap_or(platform.executor)
    }
}

/// Megatron's recipes and the filters of its recipe parser.
#[derive(Clone, Debug, Default)]
pub struct RecipeQuery {
    /// The recipe folder; default: goldgate.yaml's `recipes`, else
    /// `<root>/../../test_utils/recipes`.
    pub recipes: Option<PathBuf>,
    pub scope: Option<String>,
    pub cadence: Option<String>,
    /// Megatron's environment (`dev` or `lts`); default `dev`.
    pub environment: Option<String>,
}

/// The recipe folder to use, if any.
fn recipe_dir(args: &RecipeQuery, root: &Path, config: &Config) -> Option<PathBuf> {
    if let Some(dir) = args.recipes.clone().or_else(|| config.recipes.clone()) {
        return Some(dir);
    }
    let beside = root.join("../../test_utils/recipes");
    beside.is_dir().then_some(beside)
}

/// Every recipe row (`recipes` and Megatron's `local_recipes` beside it); none without a folder.
pub fn load_rows(
    args: &RecipeQuery,
    root: &Path,
    config: &Config,
) -> Result<Vec<RecipeRow>, SelectError> {
    let Some(dir) = recipe_dir(args, root, config) else {
        if args.scope.is_some() || args.cadence.is_some() {
            return Err(SelectError::NoRecipes {
                root: root.to_path_buf(),
            });
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
    /// Variables set for these jobs on top of the caller's environment (`goldgate ab`'s
    /// `--a-env`/`--b-env`, `goldgate repro --env`): placeholders take them as they take the
    /// caller's, so `--a-env MEGATRON_LM_DIR=../base` moves arm A's training script there.
    pub env: Vec<(String, String)>,
}

/// A case that could not be loaded or planned, and why (an error of its own).
pub struct CaseFailure {
    pub case: String,
    pub error: SelectError,
}

/// What a selection planned.
#[derive(Default)]
pub struct Selected {
    pub jobs: Vec<Job>,
    /// Placeholders nothing sets, one per name.
    pub unset: Vec<Unset>,
    /// Cases that could not be loaded or planned.
    pub failures: Vec<CaseFailure>,
    /// Recipe rows of the selection that Megatron runs by other means (unit tests, perf
    /// scripts) or whose case folder is missing: `(row name, why)`.
    pub skipped: Vec<(String, String)>,
    /// What the case files hold that a reader would misread (a key written twice), as
    /// `path:line:column: message`.
    pub warnings: Vec<String>,
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
pub fn plan_selection(
    config: &Config,
    selection: &Selection,
    filter: &CaseFilter,
    repeat: Option<u32>,
    warmup: u32,
    output: &Output,
) -> Result<Selected, SelectError> {
    selection
        .platform
        .as_deref()
        .map(|name| config.platform(Some(name)))
        .transpose()?;
    let rows = load_rows(&selection.recipes, &selection.root, config)?;
    let found = discover(&selection.root)?;
    let picked = picked_names(filter, &found, &selection.root)?;
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
        caller_env: caller_env()
            .into_iter()
            .chain(output.env.iter().cloned())
            .collect(),
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
            let loaded = load_case_noting_duplicates(&selection.root, &case_ref.config_path);
            loaded.map_err(|e| e.to_string()).map(|(case, duplicates)| {
                (selected.warnings).extend(duplicates.iter().map(ToString::to_string));
                case
            })
        });
        let planned = match case {
            Ok(case) => planner.plan(&target, case),
            Err(message) => Err(SelectError::CaseNotLoaded {
                message: message.clone(),
            }),
        };
        selected.add(&target.name, planned);
    }
    Ok(selected)
}

/// Where relative entry words resolve: the output's folder, else the current one.
fn base_dir(output: &Output) -> Result<PathBuf, SelectError> {
    match &output.base_dir {
        Some(dir) => Ok(dir.clone()),
        None => std::env::current_dir().map_err(|source| SelectError::Cwd { source }),
    }
}

/// The names of the discovered cases `filter` picks.
fn picked_names(
    filter: &CaseFilter,
    found: &[goldgate_core::case::CaseRef],
    root: &Path,
) -> Result<Vec<String>, SelectError> {
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
    fn plan(&self, target: &Target<'_>, case: &TestCase) -> Result<Planned, SelectError> {
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
    fn add(&mut self, case: &str, planned: Result<Planned, SelectError>) {
        match planned {
            Ok(planned) => {
                self.jobs.extend(planned.jobs);
                for u in planned.unset {
                    match self.unset.iter_mut().find(|s| s.name == u.name) {
                        Some(seen) => seen.cases += 1,
                        None => self.unset.push(u),
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
    /// nothing sets (one line per name), and the cases that could not be planned, each written
    /// as every error is (`printable::error_text`, coloured with `color`).
    pub fn render_problems(&self, strict: bool, color: bool) -> String {
        let mut s = String::new();
        for (row, why) in &self.skipped {
            s.push_str(&format!("note: skipped {row}: {why}\n"));
        }
        for w in &self.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        let level = if strict { "error" } else { "warning" };
        for u in &self.unset {
            let what = if strict { "" } else { "; left as written" };
            let cases = match u.cases {
                0 | 1 => format!("case {}", u.case),
                n => format!("{n} cases: {} and {} more", u.case, n - 1),
            };
            s.push_str(&format!(
                "{level}: {}: `${{{}}}` is set by nothing (the environment, the platform, the case's ENV_VARS){what} ({cases})\n",
                u.place, u.name
            ));
        }
        for f in &self.failures {
            s.push_str(&goldgate_core::printable::error_text(
                &f.error,
                Some(&f.case),
                color,
            ));
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
    found: &[goldgate_core::case::CaseRef],
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
                && let Some(why) = not_run_reason(row, found, &selection.root)
            {
                skipped.push((row.name.clone(), why));
            }
            continue;
        }
        if let Some(why) = not_run_reason(row, found, &selection.root) {
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
pub fn not_run_reason(
    row: &RecipeRow,
    found: &[goldgate_core::case::CaseRef],
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
            goldgate_core::case::CONFIG_FILE,
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
