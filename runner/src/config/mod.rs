//! Stage "plan": the repository configuration `goldgate.yaml` (platforms, variant axes, metric rules).

mod ab;
mod discover;
mod error;
mod file;
mod named;
mod rules;
mod slurm;

pub use ab::AbSettings;
pub use discover::{CONFIG_ENV, CONFIG_NAME, ConfigSource, discover};
pub use error::ConfigError;
pub use file::{
    Axis, AxisValue, BUILTIN_CONFIG, BUILTIN_PLATFORMS, Config, LauncherChoice, MAX_CONFIG_BYTES,
    Platform,
};
pub use rules::{
    Alpha, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, Direction, Effect, FailAllowance, MetricKind,
    MetricRule, RuleOverride, Rules, Statistic, StepRange, TestKind, Tolerance, Window, glob_match,
};
pub use slurm::{
    DEFAULT_OUTAGE_LIMIT, DEFAULT_PENDING_LIMIT, DEFAULT_POLL_INTERVAL, ExecutorChoice, SlurmConfig,
};
