//! goldgate: a functional-test harness and CI regression gate for GPU training jobs.
//!
//! The pipeline runs one way — `case → plan → launch → observe → metrics → compare → report` —
//! over four crates: `goldgate-core` (the base: cases, goldens, config and rules, the log and
//! TensorBoard readers, records, file I/O), `goldgate-record` (plan, launch, observe, metrics,
//! run), `goldgate-judge` (compare, report, github, history) and this one, the command line
//! (see `docs/architecture.md`). Each stage keeps its old path here.

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod cmd;

pub use goldgate_core::{
    case, config, duration, exit, fsio, golden, metric_names, printable, rules,
};
pub use goldgate_judge::{compare, github, history, report};
pub use goldgate_record::{launch, metrics, observe, plan, run};
