//! fake-trainer: a stand-in Megatron training job for goldgate's integration tests and demo.
//!
//! It prints real Megatron-format log lines (iterations, memory reports, checkpoint lines, timers),
//! holds host memory in a training-like pattern, writes real fsynced checkpoints (sync, or async
//! from a persistent worker, optionally staged through `/dev/shm`) and can plant failures.
//! Exit codes: 0 done, 1 the job failed (planted crash/OOM/NaN, I/O error), 2 bad flags.
//!
//! A library so that two programs run it: the `fake-trainer` binary (goldgate's tests) and
//! goldgate's hidden `goldgate fake-trainer` subcommand, which ships the demo's workload inside
//! an installed `goldgate` (`cargo install --path runner` installs one binary).

// The workspace denies unsafe code; this crate needs `libc::signal(SIGTERM, SIG_IGN)` for
// `--ignore-sigterm` (std has no API for signal dispositions) and `fork` for `--fork-workers`
// (a spawned process cannot share a parent's anonymous memory). See `process.rs`.
#![allow(unsafe_code)]

mod args;
mod checkpoint;
mod curve;
mod emit;
mod format;
mod injob;
mod memory;
mod probe;
mod process;
mod tensorboard;
mod train;

use std::process::ExitCode;

use args::Command;

/// Runs fake-trainer with `argv` (its own arguments, without the program name).
/// `reexec_prefix`: the words that must follow this executable to start fake-trainer again
/// (`--fork-child` does): none for the `fake-trainer` binary, `["fake-trainer"]` for goldgate.
pub fn run(argv: &[String], reexec_prefix: &[&str]) -> ExitCode {
    let cmd = match args::parse(argv) {
        Ok(cmd) => cmd,
        Err(e) => {
            emit::err(&format!("fake-trainer: error: {e}"));
            emit::err("(hint: fake-trainer --help lists the flags)");
            return ExitCode::from(2);
        }
    };
    let cfg = match cmd {
        Command::Help => {
            emit::out(args::USAGE.trim_end());
            return ExitCode::SUCCESS;
        }
        Command::ChildSleep => {
            process::ignore_sigterm();
            process::sleep_forever()
        }
        Command::Train(mut cfg) => {
            cfg.reexec_prefix = reexec_prefix.iter().map(|w| (*w).to_owned()).collect();
            cfg
        }
    };
    let planted = std::env::var("GOLDGATE_PLANT_SAVE_DELAY_S").ok();
    let empty_cache = std::env::var("GOLDGATE_PLANT_EMPTY_CACHE").ok();
    let mut cfg = match args::with_planted_delay(*cfg, planted)
        .and_then(|cfg| args::with_planted_empty_cache(cfg, empty_cache))
    {
        Ok(cfg) => cfg,
        Err(e) => {
            emit::err(&format!("fake-trainer: error: {e}"));
            return ExitCode::from(2);
        }
    };
    cfg.injob = match injob::InJob::from_env() {
        Ok(j) => j,
        Err(e) => {
            emit::err(&format!("fake-trainer: error: {e}"));
            return ExitCode::from(2);
        }
    };
    if cfg.ignore_sigterm && !process::ignore_sigterm() {
        emit::err("fake-trainer: error: cannot ignore SIGTERM");
        return ExitCode::from(1);
    }
    if cfg.exit_signal_handler && !process::catch_sigterm() {
        emit::err("fake-trainer: error: cannot catch SIGTERM");
        return ExitCode::from(1);
    }
    match train::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(train::TrainError::Planted(code)) => ExitCode::from(code as u8),
        Err(e) => {
            emit::err(&format!("fake-trainer: error: {e}"));
            ExitCode::from(1)
        }
    }
}
