//! `goldgate completions SHELL` and `goldgate man`: shell completion scripts (clap_complete)
//! and man pages (clap_mangen), rendered from the clap definition the parser uses, so they
//! never drift from the real flags.

use std::path::PathBuf;

use super::error::{AppError, CmdError};
use super::output::{errln, out};
use crate::exit::Exit;

/// Arguments of `goldgate completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// Shell to complete for (e.g. `goldgate completions bash > /etc/bash_completion.d/goldgate`).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `goldgate man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write `goldgate.1` and a `goldgate-COMMAND.1` per command into DIR (default: print
    /// `goldgate.1`, e.g. `goldgate man | man -l -`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints the completion script for `args.shell`.
pub fn completions(args: &CompletionsArgs, command: clap::Command) -> Result<Exit, AppError> {
    out!("{}", render_completions(args.shell, command));
    Ok(Exit::Pass)
}

/// The completion script of `command` for `shell` (hidden commands left out).
pub fn render_completions(shell: clap_complete::Shell, command: clap::Command) -> String {
    let mut command = visible(&command);
    let name = command.get_name().to_owned();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Prints `goldgate.1`, or writes it and one page per visible command into `--out`.
pub fn man(args: &ManArgs, command: clap::Command) -> Result<Exit, AppError> {
    let Some(dir) = &args.out else {
        out!("{}", render_man(visible(&command))?);
        return Ok(Exit::Pass);
    };
    let pages = man_pages(command)?;
    for (file, text) in &pages {
        let path = dir.join(file);
        crate::fsio::write_atomic(&path, text.as_bytes())
            .map_err(|source| CmdError::Write { path, source })?;
    }
    errln!("wrote {} man pages to {}", pages.len(), dir.display());
    Ok(Exit::Pass)
}

/// `command` without its hidden subcommands: clap_complete's bash script offers hidden ones
/// (`goldgate fake-trainer` is an implementation detail of the demo).
fn visible(command: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(command.get_name().to_owned())
        .args(command.get_arguments().cloned())
        .subcommands(
            command
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .cloned(),
        );
    if let Some(version) = command.get_version() {
        out = out.version(version.to_owned());
    }
    if let Some(about) = command.get_about() {
        out = out.about(about.clone());
    }
    out
}

/// `(file name, roff text)` for the command and each of its visible subcommands.
pub fn man_pages(command: clap::Command) -> Result<Vec<(String, String)>, AppError> {
    let command = visible(&command);
    let name = command.get_name().to_owned();
    let mut pages = vec![(format!("{name}.1"), render_man(command.clone())?)];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let full = format!("{name}-{}", sub.get_name());
        let mut page = sub
            .clone()
            .name(full.clone())
            .bin_name(full.replace('-', " "));
        if let Some(version) = command.get_version() {
            page = page.version(version.to_owned());
        }
        pages.push((format!("{full}.1"), render_man(page)?));
    }
    Ok(pages)
}

/// One man page in roff.
pub fn render_man(command: clap::Command) -> Result<String, AppError> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut buf)
        .map_err(|source| CmdError::Write {
            path: PathBuf::from("<man page>"),
            source,
        })?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
