//! goldgate's integration tests, as one test binary (the layout of nextest's own
//! `integration-tests`): each former `runner/tests/<name>.rs` is the module `<name>` here and
//! `common` is compiled once, so `cargo test` links the whole crate into one binary instead of
//! one per file. Run one file's tests with `cargo test -p goldgate --test integration <name>::`
//! (the book's reference/tests.md has the layout and how to add a test).

mod common;

mod ab_e2e;
mod ab_in_job_e2e;
mod action_e2e;
mod architecture;
mod cancel_cli;
mod check_cli;
mod compare_e2e;
mod counters_e2e;
mod docs;
mod extract_cli;
mod faults;
mod github_mock;
mod history_cli;
mod history_site;
mod history_store;
mod launch;
mod layout;
mod megatron_parity;
mod plan_cli;
mod prerequisites;
mod report_cmd;
mod run_e2e;
mod security;
mod settle_warmup_e2e;
mod slurm;
mod tensorboard_megatron;
mod tensorboard_run_e2e;
mod test_types_e2e;
mod two_sample_e2e;
