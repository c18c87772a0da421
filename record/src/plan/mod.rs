//! Stage "plan": case selection (names, globs, partitions), variants, job expansion, placeholders, the `Job` type and the repro script.

mod build;
mod environment;
mod error;
mod filter;
mod job;
mod megatron;
mod placeholder;
mod program;
mod ranks;
mod render;
mod repro;
mod select;
mod shell;
mod slurm;
mod variant;

pub use build::{DEFAULT_ENTRY, Place, PlanInputs, Planned, Unset, plan_case};
pub use error::{PlanError, SelectError};
pub use filter::{CaseFilter, FilterError, Partition};
pub use job::{
    DEFAULT_MASTER_ADDR, Job, JobDirs, Launcher, MASTER_ADDR_REF, NODE_RANK_REF, RecipeRef,
    RunAction, RunSpec, Site, mark_warmup, redact_text, redact_with, redacted_env, secrets,
};
pub use megatron::{NCCL_DEFAULTS, is_nemo};
pub use program::resolve_program;
pub use ranks::{Layout, Size};
pub use render::{PLAN_SCHEMA_VERSION, PORT_PLACEHOLDER, render_plan_json, render_plan_text};
pub use repro::{REPRO_DEFAULT_PORT, render_repro};
pub use select::{
    CaseFailure, Output, RecipeQuery, Selected, Selection, caller_env, load_rows, not_run_reason,
    plan_selection,
};
pub use shell::shell_quote;
pub use slurm::{
    BatchSpec, EXIT_MARKER, SAMPLER_STOP_FILE, SamplerStep, batch_time_limit, job_name,
    render_batch, slurm_minutes,
};
pub use variant::{Variant, VariantRequest};
