//! Stage "plan": the repository configuration `goldgate.yaml` (platforms, variant axes, metric rules).

mod error;
mod file;
mod named;
mod rules;

pub use error::ConfigError;
pub use file::{
    Axis, AxisValue, BUILTIN_CONFIG, BUILTIN_PLATFORMS, Config, LauncherChoice, Platform,
};
pub use rules::{
    Direction, FailAllowance, MetricKind, MetricRule, RuleOverride, Rules, Statistic, StepRange,
    Window, glob_match,
};
