//! Subcommands: one file each, holding the clap arguments and the function that does the I/O.

pub mod ab;
pub(crate) mod ab_reports;
pub mod ab_study;
pub mod args;
pub mod bless;
pub mod calibrate;
pub mod cancel;
pub mod check;
pub mod comment;
pub mod compare;
pub mod completions;
pub mod error;
pub mod extract;
pub mod history;
pub(crate) mod history_show;
pub(crate) mod history_site;
pub mod list;
pub(crate) mod list_recipes;
pub mod output;
pub mod plan;
pub mod power;
pub mod report;
pub mod repro;
pub mod run;
mod run_notes;
pub mod sample;
pub(crate) mod select;
