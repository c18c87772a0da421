//! goldgate's base crate: what both sides of goldgate read.
//!
//! - [`case`]: test cases and recipes (`TestCase`, discovery, the YAML reader with spans);
//! - [`golden`]: golden files, their names and layout;
//! - [`config`] and [`rules`]: `goldgate.yaml` and its metric rules;
//! - [`observe`]: the streaming Megatron log parser (`observe::log`) and the TensorBoard reader
//!   (`observe::tensorboard`);
//! - [`metrics`]: loading `results.json` and `run.json` (`metrics::record`), `downsample`, the
//!   TensorBoard merge;
//! - [`fsio`], [`printable`], [`redact`], [`hash`], [`duration`], [`exit`], [`units`]: the one
//!   file I/O layer, terminal-safe text, secret scrubbing, the stable hash, durations, exit-code
//!   texts, byte figures.
//!
//! The record and comparison types and the metric names are `goldgate_schema`'s. This crate
//! depends on no recording code (no NVML, no rustix, no process launching): `goldgate_record`
//! and `goldgate_judge` build on it (see `docs/book/src/reference/architecture.md`).

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod case;
pub mod config;
pub mod duration;
pub mod exit;
pub mod fsio;
pub mod golden;
pub mod hash;
pub mod metrics;
pub mod observe;
pub mod printable;
pub mod redact;
pub mod rules;
pub mod units;
