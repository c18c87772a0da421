//! goldgate: a functional-test harness and CI regression gate for GPU training jobs.
//!
//! The pipeline runs one way — `case → plan → launch → observe → metrics → compare → report` —
//! and each module below is one stage (see `docs/architecture.md`).

pub mod case;
pub mod cmd;
pub mod compare;
pub mod config;
pub mod duration;
pub mod exit;
pub mod fsio;
pub mod github;
pub mod golden;
pub mod history;
pub mod launch;
pub mod metric_names;
pub mod metrics;
pub mod observe;
pub mod plan;
pub mod printable;
pub mod report;
pub mod rules;
pub mod run;
