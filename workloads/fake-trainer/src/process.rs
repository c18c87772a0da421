//! Process behaviour for launcher tests: ignoring SIGTERM, a forked child that outlives its parent,
//! workers forked to share memory with the trainer, hanging, and the planted failures with the
//! exact markers Megatron's CI looks for.

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

/// Set by [`on_sigterm`]; read by the training loop under `--exit-signal-handler`.
static SIGTERM_RECEIVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigterm(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGTERM_RECEIVED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Catches SIGTERM (Megatron's `--exit-signal-handler`): the training loop sees it through
/// [`sigterm_received`] after the current step.
pub(crate) fn catch_sigterm() -> bool {
    let handler = on_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores into an atomic (async-signal-safe); it is installed
    // before any thread of ours starts.
    let previous = unsafe { libc::signal(libc::SIGTERM, handler) };
    previous != libc::SIG_ERR
}

/// Whether SIGTERM arrived since [`catch_sigterm`].
pub(crate) fn sigterm_received() -> bool {
    SIGTERM_RECEIVED.load(std::sync::atomic::Ordering::SeqCst)
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

const PAGE: usize = 4096;

/// Workers made by [`fork_workers`]; dropping this kills and reaps them.
#[derive(Debug)]
pub(crate) struct Workers(Vec<libc::pid_t>);

/// Forks `n` workers that map `shared` (written before the fork, never after) as the trainer
/// does: each reads one byte per page, so every page is resident in all `n + 1` processes and
/// shared by them (copy-on-write, never copied). Workers do nothing else until the trainer ends
/// them, or dies (`PR_SET_PDEATHSIG`).
pub(crate) fn fork_workers(n: u64, shared: &[u8]) -> std::io::Result<Workers> {
    let mut workers = Workers(Vec::new());
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    for _ in 0..n {
        // SAFETY: the child runs only `worker`, which makes async-signal-safe calls (prctl,
        // getppid, pause, _exit) and reads memory, so it is sound even if other threads of the
        // parent hold locks at the fork; it never returns into Rust code of the parent.
        match unsafe { libc::fork() } {
            -1 => return Err(std::io::Error::last_os_error()),
            0 => worker(parent, shared),
            pid => workers.0.push(pid),
        }
    }
    Ok(workers)
}

/// A forked worker's whole life.
fn worker(parent: libc::pid_t, shared: &[u8]) -> ! {
    // SAFETY: prctl, getppid and _exit are async-signal-safe and take no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
    }
    let mut sum = 0u8;
    for i in (0..shared.len()).step_by(PAGE) {
        sum = sum.wrapping_add(std::hint::black_box(shared[i]));
    }
    std::hint::black_box(sum);
    loop {
        // SAFETY: pause is async-signal-safe; the default action of the signal that ends the
        // worker terminates it.
        unsafe { libc::pause() };
    }
}

impl Workers {
    pub(crate) fn pids(&self) -> &[libc::pid_t] {
        &self.0
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for &pid in &self.0 {
            // SAFETY: `pid` is our own child, not yet reaped, so it cannot have been reused.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Never returns (until a signal ends the process).
pub(crate) fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Waits while `file` exists (`--hold-at-step`): a test keeps the job running for as long as
/// it needs, whatever the machine's load, and lets it go on by removing the file.
pub(crate) fn hold_while_exists(file: &std::path::Path) {
    while file.exists() {
        std::thread::sleep(Duration::from_millis(50));
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
