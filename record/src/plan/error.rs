//! Stage "plan": errors turning cases into jobs (bad variant choices, unresolved placeholders)
//! and selecting them.

use std::path::PathBuf;

use super::FilterError;
use goldgate_core::case::{CaseError, RecipeError};
use goldgate_core::config::ConfigError;

/// Why a case could not be planned.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PlanError {
    #[error("`--variant {text}` is not of the form AXIS=VALUE")]
    #[diagnostic(help("for example `--variant allocator=gc80`"))]
    VariantSyntax { text: String },
    #[error("unknown variant axis `{axis}` (valid: {valid})")]
    UnknownAxis { axis: String, valid: String },
    #[error("unknown value `{value}` for variant axis `{axis}` (valid: {valid})")]
    UnknownValue {
        axis: String,
        value: String,
        valid: String,
    },
    #[error("variant axis `{axis}` is given more than once")]
    #[diagnostic(help("use `--variant` for one value or `--matrix` for all values, not both"))]
    AxisTwice { axis: String },
    #[error("case {case} does not allow `{axis}={value}` (its GOLDGATE.variants allow: {allowed})")]
    NotAllowed {
        case: String,
        axis: String,
        value: String,
        allowed: String,
    },
    #[error("{path}: GOLDGATE.variants: {message}")]
    CaseVariants { path: String, message: String },
    #[error("placeholders nothing sets in {case}:\n{list}")]
    #[diagnostic(help(
        "set them in the environment or in the platform (data_root, megatron_lm_dir) of goldgate.yaml; without --strict-placeholders they stay as written, with a warning"
    ))]
    Unresolved {
        case: String,
        names: Vec<String>,
        list: String,
    },
    #[error("{case}: run {run} {why} ({nodes} node(s) × {per_node} GPU(s) per node)")]
    #[diagnostic(help(
        "give it at least {min} ranks: --gpus-per-node N, a platform with more GPUs, or --nodes N with the Slurm executor (--executor slurm, or a platform with `executor: slurm`), which runs one launcher per node; `goldgate check` reports this as a warning only"
    ))]
    Ranks {
        case: String,
        run: usize,
        why: String,
        nodes: u32,
        per_node: u32,
        min: u64,
    },
    #[error("{place}: {message}")]
    #[diagnostic(help(
        "Megatron's _run_training.sh passes MODEL_ARGS through `xargs` and `eval`; goldgate refuses values it cannot turn into the same words"
    ))]
    Argv { place: String, message: String },
    #[error("{place}: invalid environment variable name `{name}`")]
    EnvName { place: String, name: String },
    #[error("--repeat must be at least 1")]
    ZeroRepeat,
    #[error("case {case} has no MODEL_ARGS and no entry")]
    NothingToRun { case: String },
}

/// Why a selection, or one of its cases, could not be planned: an earlier stage's error
/// unchanged, or the selection's own.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SelectError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Case(#[from] CaseError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Recipe(#[from] RecipeError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Filter(#[from] FilterError),

    /// `--scope`/`--cadence` without Megatron's recipes.
    #[error(
        "--scope and --cadence need Megatron's recipes, and none were found beside {}",
        root.display()
    )]
    #[diagnostic(help("--recipes DIR, or `recipes:` in goldgate.yaml"))]
    NoRecipes { root: PathBuf },

    /// A selected case could not be loaded (said once per case, with the case's own error).
    #[error("{message}")]
    CaseNotLoaded { message: String },

    /// The current directory cannot be read (relative entries resolve against it).
    #[error("cannot read the current directory: {source}")]
    Cwd { source: std::io::Error },
}
