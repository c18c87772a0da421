//! Stage "case": loading Megatron `model_config.yaml` files, discovering cases, MODEL_ARGS → argv.

mod argv;
mod discover;
mod error;
mod load;
mod placeholder;
mod recipe;
mod types;
mod yaml;

pub use argv::{ArgvError, EvalError, Expansion, Lookups, ModelArgv, eval_words, model_argv};
pub use discover::{CONFIG_FILE, Discovery, discover, discover_all, holds_scripts};
pub use error::CaseError;
#[cfg(any(test, feature = "fixtures"))]
pub use load::case_from_yaml;
pub(crate) use load::position;
pub use load::{
    CaseWarning, MAX_CONFIG_BYTES, case_file_sha256, load_case, load_case_checked,
    load_case_noting_duplicates, sha256_hex,
};
pub use placeholder::placeholders;
pub use recipe::{
    CaseRecipe, DEFAULT_CADENCE, RecipeError, RecipeFilter, RecipeRow, Runner, ScriptFacts,
    for_case, load_recipe, load_recipes, resolve_scope, select,
};
pub use types::{
    CaseExtras, CaseRef, DEFAULT_METRICS, LauncherKind, Mode, ModelArgs, Scalar, ScalarKind, Span,
    TestCase, TestType, Word,
};
