//! Test support every goldgate crate's tests share, so that each crate's tests sit with the
//! crate (`core/tests/`, `record`'s unit tests, `runner/tests/integration/`) and still follow
//! one rule: a dev-dependency only, below every goldgate crate (it depends on none of them).
//!
//! - [`prereq`]: what a test does when something it needs is not on this machine (skip with a
//!   `skipped:` line; under `CI=true` fail);
//! - [`corpus`]: where Megatron-LM's functional-test corpus is.

pub mod corpus;
pub mod prereq;
