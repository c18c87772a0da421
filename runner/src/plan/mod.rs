//! Stage "plan": case selection (names, globs, partitions), variants, job expansion, placeholders, the `Job` type and the repro script.

mod build;
mod error;
mod filter;
mod job;
mod placeholder;
mod program;
mod render;
mod repro;
mod shell;
mod variant;

pub use build::{DEFAULT_ENTRY, PlanInputs, plan_case};
pub use error::PlanError;
pub use filter::{CaseFilter, FilterError, Partition};
pub use job::{
    Job, JobDirs, Launcher, REDACTED, RunAction, RunSpec, is_secret_name, mark_warmup, redact_text,
    redacted_env,
};
pub use program::resolve_program;
pub use render::{PORT_PLACEHOLDER, render_plan_json, render_plan_text};
pub use repro::{REPRO_DEFAULT_PORT, render_repro};
pub use shell::shell_quote;
pub use variant::{Variant, VariantRequest};
