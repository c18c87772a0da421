//! Stage "plan": the repository configuration `goldgate.yaml` (platforms, variant axes; its metric
//! rules are `crate::rules`' types).

mod ab;
mod discover;
mod error;
mod file;
mod named;
mod slurm;

pub use ab::{AbCovariate, AbSettings, MAX_PAIRS, Sequential};
pub use discover::{CONFIG_ENV, CONFIG_NAME, ConfigSource, discover};
pub use error::ConfigError;
pub use file::{
    Axis, AxisValue, BUILTIN_CONFIG, BUILTIN_PLATFORMS, Clocks, Config, LauncherChoice,
    MAX_CONFIG_BYTES, Platform,
};
pub use slurm::{
    DEFAULT_OUTAGE_LIMIT, DEFAULT_PENDING_LIMIT, DEFAULT_POLL_INTERVAL, ExecutorChoice, SlurmConfig,
};
