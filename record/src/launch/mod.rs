//! Stage "launch": process groups, launchers, timeouts, signals and outcome classification.

mod error;
mod escape;
mod outcome;
mod process;
mod settle;
mod signals;
mod slice;
mod spec;

pub use error::LaunchError;
pub use escape::TOKEN_VAR;
pub use outcome::{FailureSigns, classify};
pub use process::{
    CHANNEL_CHUNKS, LaunchEvent, LaunchReport, ProcessOutcome, Termination, group_alive, launch,
};
pub use settle::{Settle, SettleError, check as check_settle, settle};
pub use signals::{StopFlag, install_signal_handlers};
pub use slice::{gpu_slices, visible_gpus};
pub use spec::{DEFAULT_GRACE, LaunchSpec, command_line, free_port, resolve_program};
