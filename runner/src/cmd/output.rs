//! Everything a command prints goes through [`out!`], [`outln!`], [`err!`] and [`errln!`]. A reader that
//! went away (`goldgate list | head`) or a closed stderr ends the printing quietly, never the
//! command: `print!` would panic (exit 101), and a gate whose stdout is cut short must still
//! write its report files and exit with its verdict.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout failed: nothing more is written to it.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes to stdout; a broken pipe stops further output silently, any other error is said once
/// on stderr.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            stderr(format_args!("goldgate: cannot write to stdout: {e}\n"));
        }
    }
}

/// Writes to stderr; errors are ignored (there is nowhere left to report them).
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that never panics.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cmd::output::stdout(format_args!($($arg)*)) };
}

/// `println!` that never panics.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cmd::output::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics.
macro_rules! err {
    ($($arg:tt)*) => { $crate::cmd::output::stderr(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cmd::output::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {err, errln, out, outln};
