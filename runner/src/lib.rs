//! goldgate: a functional-test harness and CI regression gate for GPU training jobs.
//!
//! This crate is the command line: [`cmd`] holds one module per subcommand, its arguments, the
//! console output and the one mapping from errors to exit codes (`cmd::error::AppError::exit`).
//! The pipeline `case → plan → launch → observe → metrics → compare → report` lives in the
//! library crates, and code names each thing where it lives:
//!
//! - `goldgate_schema`: the files goldgate writes for other tools (`RunRecord`, `RunIndex`,
//!   `Comparison`, `Exit`, `metric_names`);
//! - `goldgate_core`: the base both sides read (`case`, `golden`, `config`, `rules`, `fsio`,
//!   `log`, `tensorboard`, `records`, …);
//! - `goldgate_record`: `plan`, `launch`, the samplers in `observe`, `metrics::build`, `run`;
//! - `goldgate_judge`: `compare`, `report`, `github`, `history`.
//!
//! See the book's architecture page (`docs/book/src/reference/architecture.md`).

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod cmd;
