//! Everything a command prints goes through [`out!`], [`outln!`], [`err!`] and [`errln!`]. A reader that
//! went away (`goldgate list | head`) or a closed stderr ends the printing quietly, never the
//! command: `print!` would panic (exit 101), and a gate whose stdout is cut short must still
//! write its report files and exit with its verdict.

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Set once stdout failed: nothing more is written to it.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes to stdout; a broken pipe stops further output silently, any other error is said once
/// on stderr. What is written passes [`goldgate_core::printable::terminal`]: no control byte, no line
/// that starts a workflow command.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = write_guarded(&mut out, args).and_then(|()| out.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            stderr(format_args!("warning: cannot write to stdout: {e}\n"));
        }
    }
}

/// Writes `args` piece by piece through [`goldgate_core::printable::Guard`], so a large report is
/// never copied whole to be guarded.
fn write_guarded(out: &mut dyn Write, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    struct Sink<'a> {
        out: &'a mut dyn Write,
        guard: goldgate_core::printable::Guard,
        error: Option<std::io::Error>,
    }
    impl std::fmt::Write for Sink<'_> {
        fn write_str(&mut self, piece: &str) -> std::fmt::Result {
            let Sink { out, guard, error } = self;
            guard.push(piece, &mut |text| write_once(out, error, text));
            match error {
                Some(_) => Err(std::fmt::Error),
                None => Ok(()),
            }
        }
    }
    let mut sink = Sink {
        out,
        guard: goldgate_core::printable::Guard::new(false),
        error: None,
    };
    if std::fmt::write(&mut sink, args).is_err() {
        return Err(sink
            .error
            .unwrap_or_else(|| std::io::Error::other("formatting failed")));
    }
    let Sink { out, guard, error } = &mut sink;
    guard.finish(&mut |text| write_once(out, error, text));
    sink.error.map_or(Ok(()), Err)
}

/// Writes `text` unless an earlier write failed, keeping the first error.
fn write_once(out: &mut dyn Write, error: &mut Option<std::io::Error>, text: &str) {
    if error.is_none()
        && let Err(e) = out.write_all(text.as_bytes())
    {
        *error = Some(e);
    }
}

/// Writes goldgate's own workflow commands (the annotations) to `stream`: their lines start
/// with `::` on purpose; control bytes are still escaped.
pub fn commands(stream: Stream, text: &str) {
    match stream {
        Stream::Stdout => write_stdout(text, true),
        Stream::Stderr => write_stderr(text, true),
    }
}

fn write_stdout(text: &str, commands: bool) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = goldgate_core::printable::terminal(text, commands);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            stderr(format_args!("warning: cannot write to stdout: {e}\n"));
        }
    }
}

/// Writes to stderr, through the same guard as [`stdout`]; errors are ignored (there is
/// nowhere left to report them).
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let _ = write_guarded(&mut std::io::stderr().lock(), args);
}

fn write_stderr(text: &str, commands: bool) {
    let text = goldgate_core::printable::terminal(text, commands);
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `--color`: whether goldgate's output has ANSI colours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colours on a terminal, unless `NO_COLOR` is set; `CLICOLOR_FORCE` forces them.
    #[default]
    Auto,
    Always,
    Never,
}

/// The `--color` given on the command line (set once by `main`).
static COLOR: AtomicU8 = AtomicU8::new(ColorChoice::Auto as u8);

/// Records `--color` for [`color`].
pub fn set_color(choice: ColorChoice) {
    COLOR.store(choice as u8, Ordering::Relaxed);
}

/// Which stream a colour decision is for.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Whether to colour what goes to `stream`: `--color`, then the environment, then a terminal.
pub fn color(stream: Stream) -> bool {
    let choice = match COLOR.load(Ordering::Relaxed) {
        x if x == ColorChoice::Always as u8 => ColorChoice::Always,
        x if x == ColorChoice::Never as u8 => ColorChoice::Never,
        _ => ColorChoice::Auto,
    };
    let tty = match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    };
    decide(choice, tty, &|name| std::env::var_os(name))
}

/// Whether to colour stderr ([`color`]), where errors and warnings go.
pub fn stderr_color() -> bool {
    color(Stream::Stderr)
}

/// The decision, as anstream makes it: `always`/`never` win; under `auto` a non-empty
/// `NO_COLOR` (no-color.org) turns colour off, then `CLICOLOR_FORCE` other than `0` turns it
/// on (bixense.com/clicolors), then `CLICOLOR=0` off, else a terminal decides.
pub fn decide(
    choice: ColorChoice,
    tty: bool,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> bool {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto if set("NO_COLOR").is_some() => false,
        ColorChoice::Auto if set("CLICOLOR_FORCE").is_some_and(|v| v != OsStr::new("0")) => true,
        ColorChoice::Auto if set("CLICOLOR").is_some_and(|v| v == OsStr::new("0")) => false,
        ColorChoice::Auto => tty,
    }
}

/// How every command shows an error: [`goldgate_core::printable::error_text`].
pub fn render_error(err: &dyn miette::Diagnostic, context: Option<&str>, color: bool) -> String {
    goldgate_core::printable::error_text(err, context, color)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_reads_as_clap_prints_a_usage_error() {
        use crate::cmd::error::{AppError, CmdError};
        use goldgate_record::run::RunError;
        let denied = || std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let unknown = AppError::from(goldgate_judge::compare::CompareError::UnknownRun {
            run: "nope".into(),
            available: "20261130-070000-beef, 20261130-080000-cafe".into(),
        });
        // The message already ends in its cause: said once.
        let write = AppError::from(CmdError::Write {
            path: "/r/report.md".into(),
            source: denied(),
        });
        let saves = AppError::from(RunError::Saves {
            errors: ["/r/a/results.json", "/r/b/results.json"]
                .map(|p| RunError::Write {
                    path: p.into(),
                    source: denied(),
                })
                .into(),
        });
        let one_job = AppError::from(CmdError::NotOneJob {
            count: 2,
            names: "default; allocator=gc80".into(),
        });
        let text = [
            render_error(&unknown, None, false),
            render_error(&write, None, false),
            render_error(&saves, None, false),
            render_error(&one_job, Some("demo/ckpt"), false),
        ]
        .join("\n");
        assert!(!text.contains("(hint") && !text.contains('×'), "{text}");
        insta::assert_snapshot!(text);
        let coloured = render_error(&unknown, None, true);
        assert!(
            coloured.starts_with("\u{1b}[1;31merror:\u{1b}[0m no run `nope`"),
            "{coloured:?}"
        );
        assert!(
            coloured.contains("  \u{1b}[1;32mhelp:\u{1b}[0m run ids"),
            "{coloured:?}"
        );
    }

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    #[test]
    fn colour_follows_the_flag_then_no_color_then_clicolor_then_the_terminal() {
        use ColorChoice::{Always, Auto, Never};
        let none = with(&[]);
        assert!(decide(Auto, true, &none));
        assert!(!decide(Auto, false, &none));
        assert!(decide(Always, false, &with(&[("NO_COLOR", "1")])));
        assert!(!decide(Never, true, &with(&[("CLICOLOR_FORCE", "1")])));
        assert!(!decide(Auto, true, &with(&[("NO_COLOR", "1")])));
        // An empty NO_COLOR is unset (no-color.org).
        assert!(decide(Auto, true, &with(&[("NO_COLOR", "")])));
        assert!(decide(Auto, false, &with(&[("CLICOLOR_FORCE", "1")])));
        assert!(!decide(Auto, false, &with(&[("CLICOLOR_FORCE", "0")])));
        assert!(!decide(
            Auto,
            false,
            &with(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])
        ));
        assert!(!decide(Auto, true, &with(&[("CLICOLOR", "0")])));
    }
}
