//! Stage "run": orchestrates a run — validated [`RunOptions`], a scheduler that hands jobs to
//! an [`Executor`] from `--jobs N` workers (retries, interruption), and the [`RunEvent`]
//! stream that the progress reporter and the results writer consume; and what a run whose
//! goldgate died left behind, settled by whoever cleans up after it (`leftovers`, and the
//! Slurm executor's own part in `slurm`).

mod actions;
mod error;
mod event;
mod executor;
pub mod leftovers;
pub(crate) mod local;
mod options;
mod progress;
mod provenance;
pub(crate) mod rank_logs;
mod scheduler;
pub mod slurm;
mod watch;
mod writer;

pub use actions::apply as apply_action;
pub use error::RunError;
pub use event::{ExecEvent, RunEvent};
pub use executor::{AttemptContext, AttemptOutput, Executor, Refusal};
pub use local::LocalExecutor;
pub use options::{RunOptions, new_run_id};
pub use progress::{DEFAULT_HEARTBEAT, Progress, beside_heartbeat};
pub use scheduler::{RunSummary, may_retry, run_jobs};
pub use slurm::{SlurmError, SlurmExecutor};
pub use watch::LogWatch;
pub use writer::ResultsWriter;
