//! Stage "case": loading Megatron `model_config.yaml` files, discovering cases, MODEL_ARGS → argv.

mod argv;
mod discover;
mod error;
mod load;
mod placeholder;
mod types;
mod yaml;

pub use discover::{CONFIG_FILE, Discovery, discover, discover_all};
pub use error::CaseError;
pub(crate) use load::position;
pub use load::{CaseWarning, MAX_CONFIG_BYTES, load_case, load_case_checked};
pub use placeholder::{KNOWN_PLACEHOLDERS, placeholders};
pub use types::{
    CaseExtras, CaseRef, DEFAULT_METRICS, LauncherKind, Mode, ModelArgs, Scalar, ScalarKind, Span,
    TestCase, TestType, Word,
};
