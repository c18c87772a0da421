//! Stage "case" (recipes): Megatron's recipe files expanded into rows, and row selection.

mod error;
mod load;
mod script;
mod select;

pub use error::RecipeError;
pub use load::{DEFAULT_CADENCE, RecipeRow, load_recipe, load_recipes, resolve_scope};
pub use script::{Runner, ScriptFacts};
pub use select::{CaseRecipe, RecipeFilter, for_case, select};
