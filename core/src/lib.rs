//! goldgate's base crate: what both sides of goldgate read — test cases and recipes, golden
//! files, `goldgate.yaml` and its metric rules, the Megatron log parser and the TensorBoard
//! reader, the results records and their loading, and the one file I/O layer. It depends on
//! no recording code (no NVML, no rustix, no process launching): `goldgate-record` and
//! `goldgate-judge` build on it (see `docs/architecture.md`).

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod case;
pub mod config;
pub mod duration;
pub mod exit;
pub mod fsio;
pub mod golden;
pub mod hash;
pub mod metric_names;
pub mod metrics;
pub mod observe;
pub mod printable;
pub mod redact;
pub mod rules;
