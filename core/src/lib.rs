//! goldgate's base crate: what both sides of goldgate read.
//!
//! - [`case`]: test cases and recipes (`TestCase`, discovery, the YAML reader with spans);
//! - [`golden`]: golden files, their names and layout;
//! - [`config`] and [`rules`]: `goldgate.yaml` and its metric rules;
//! - [`log`]: the one stream from a job's bytes to its `LogSummary` and the Megatron log parser;
//! - [`tensorboard`]: TensorBoard event files, read without TensorFlow;
//! - [`records`]: loading `results.json` and `run.json` back (names checked, size-limited);
//! - [`fsio`], [`printable`], [`redact`], [`hash`], [`duration`], [`units`]: the one file I/O
//!   layer, terminal-safe text, secret scrubbing, the stable hash, durations, byte and time
//!   figures;
//! - `fixtures` (tests only, and other crates' tests through the `fixtures` feature): the
//!   prerequisite rule (`fixtures::prereq`) and the Megatron-LM corpus lookup
//!   (`fixtures::corpus`).
//!
//! The record and comparison types and the metric names are `goldgate_schema`'s. This crate
//! depends on no recording code (no NVML, no rustix, no process launching): `goldgate_record`
//! and `goldgate_judge` build on it (see `docs/book/src/reference/architecture.md`).

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod case;
pub mod config;
pub mod duration;
/// What every crate's tests share: the prerequisite rule and where the Megatron-LM corpus is
/// (the `fixtures` feature, for other crates' tests).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod fsio;
pub mod golden;
pub mod hash;
pub mod log;
pub mod printable;
pub mod records;
pub mod redact;
pub mod rules;
pub mod tensorboard;
pub mod units;
