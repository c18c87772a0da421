//! Stage "plan": the metric rules in one room — their schema and built-in checks (`schema`:
//! `goldgate.yaml`'s `rules:`, Megatron's own checks and goldgate's metric rules), the rules in
//! force with their patterns and units (`resolve`: the first match wins), and the text edit
//! `calibrate --write` makes to a `goldgate.yaml`'s `rules:` (`edit`).

mod edit;
mod resolve;
mod schema;

pub use edit::{EditError, set_rtols};
pub use resolve::{Rule, RuleSet};
pub use schema::{
    Alpha, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, Direction, Effect, FailAllowance, MetricKind,
    MetricRule, RuleOverride, Rules, Statistic, StepRange, TestKind, Tolerance, Window, glob_match,
};
