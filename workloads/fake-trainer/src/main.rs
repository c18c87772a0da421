//! The `fake-trainer` binary: a stand-in Megatron training job (see the library's docs).

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    fake_trainer::run(&argv, &[])
}
