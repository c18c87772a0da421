//! Process behaviour for launcher tests: ignoring SIGTERM, a forked child that outlives its parent,
//! hanging, and the planted failures with the exact markers Megatron's CI looks for.

use std::process::{Child, Command};
use std::time::Duration;

use crate::args::Planted;
use crate::emit;

/// SIG_IGN for SIGTERM; the disposition survives exec, so a re-spawned child inherits it too.
pub(crate) fn ignore_sigterm() -> bool {
    // SAFETY: `signal` with SIG_IGN installs no handler code, so nothing can run in signal context;
    // it is called before any thread of ours starts.
    let previous = unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    previous != libc::SIG_ERR
}

/// Starts this program again in `--child-sleep` mode (`prefix`: the words before fake-trainer's
/// own arguments, e.g. the `fake-trainer` of `goldgate fake-trainer`); it stays in our process
/// group and keeps our stdout/stderr open, like a dataloader worker, so only a group kill ends it.
pub(crate) fn spawn_child(prefix: &[String]) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    Command::new(exe)
        .args(prefix)
        .args(["--child-sleep", "--ignore-sigterm"])
        .spawn()
}

/// Never returns (until a signal ends the process).
pub(crate) fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Prints the planted failure at `iteration` as Megatron would show it and returns the exit code.
/// A hang never returns.
pub(crate) fn planted(kind: Planted, iteration: u64) -> i32 {
    let (call, error) = match kind {
        Planted::Hang => {
            emit::err(&format!("fake-trainer: hanging at iteration {iteration} (--hang-at-step)"));
            sleep_forever()
        }
        Planted::Crash => (
            "    iteration, num_floating_point_operations_so_far = train(",
            format!("RuntimeError: fake-trainer planted crash at iteration {iteration} (--crash-at-step)"),
        ),
        Planted::Oom => (
            "    losses_reduced = forward_backward_func(",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total \
             capacity of 139.81 GiB of which 2.31 GiB is free."
                .to_string(),
        ),
        Planted::Nan => (
            "    grad_norm = optimizer.step()",
            format!(
                "RuntimeError: Rank 0: found NaN in local grad norm for bucket #0 in backward pass before \
                 data-parallel communication collective (iteration {iteration})"
            ),
        ),
    };
    for line in [
        "Traceback (most recent call last):",
        "  File \"/opt/megatron-lm/pretrain_gpt.py\", line 288, in <module>",
        "    pretrain(",
        "  File \"/opt/megatron-lm/megatron/training/training.py\", line 792, in pretrain",
        call,
        &error,
    ] {
        emit::err(line);
    }
    1
}
