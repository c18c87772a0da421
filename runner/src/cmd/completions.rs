//! `goldgate completions SHELL` and `goldgate man`: shell completion scripts (clap_complete)
//! and man pages (clap_mangen), rendered from the clap definition the parser uses, so they
//! never drift from the real flags.

use std::path::PathBuf;

use super::error::{AppError, CmdError};
use super::output::{errln, out};
use goldgate_schema::Exit;

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
    let mut script = String::from_utf8_lossy(&buf).into_owned();
    if shell == clap_complete::Shell::Bash {
        script.push_str(BASH_CASE_NAMES);
    }
    script
}

/// Case names for bash: after clap_complete's `_goldgate` has offered the flags, the words
/// of `run`, `plan`, `repro` and `list` that are not flags also complete to the names
/// `goldgate list --names` prints for the `--root` on the line (default `test_cases`).
const BASH_CASE_NAMES: &str = r#"
_goldgate_cases() {
    _goldgate "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" root=test_cases i
    case "${COMP_WORDS[1]}" in
        run|plan|repro|list) ;;
        *) return 0 ;;
    esac
    [[ "$cur" == -* || "$prev" == -* ]] && return 0
    for ((i = 2; i < COMP_CWORD; i++)); do
        [[ "${COMP_WORDS[i]}" == --root ]] && root="${COMP_WORDS[i+1]}"
    done
    local names
    names="$("${COMP_WORDS[0]}" list --names --root "$root" 2>/dev/null)" || return 0
    COMPREPLY+=($(compgen -W "$names" -- "$cur"))
}
complete -F _goldgate_cases -o nosort -o bashdefault -o default goldgate
"#;

/// Prints `goldgate.1`, or writes it and one page per visible command into `--out`.
pub fn man(args: &ManArgs, command: clap::Command) -> Result<Exit, AppError> {
    let Some(dir) = &args.out else {
        out!("{}", render_man(visible(&command))?);
        return Ok(Exit::Pass);
    };
    let pages = man_pages(command)?;
    for (file, text) in &pages {
        let path = dir.join(file);
        goldgate_core::fsio::write_atomic(&path, text.as_bytes())
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
    if let Some(after) = command.get_after_help() {
        out = out.after_help(after.clone());
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

/// `command` and each of its subcommands with the EXIT STATUS block after their help: what
/// the parser, `--help`, completions and man pages are built from.
pub fn with_exit_status(command: clap::Command) -> clap::Command {
    let text = exit_status_help();
    command
        .after_help(text.clone())
        .mut_subcommands(move |s| s.after_help(text.clone()))
}

/// The EXIT STATUS block `--help` ends with: one line per code and its meaning.
fn exit_status_help() -> String {
    let mut s = String::from("Exit status:\n");
    for exit in Exit::ALL {
        s.push_str(&format!("  {}  {}\n", exit.code(), exit.meaning()));
    }
    s.trim_end().to_owned()
}

/// One man page in roff: clap_mangen's sections, an EXIT STATUS section in place of the
/// EXTRA one it would make of the help's epilogue, then the version.
pub fn render_man(command: clap::Command) -> Result<String, AppError> {
    let man = clap_mangen::Man::new(command.clone());
    let mut buf = Vec::new();
    let write = |buf: &mut Vec<u8>| -> std::io::Result<()> {
        man.render_title(buf)?;
        man.render_name_section(buf)?;
        man.render_synopsis_section(buf)?;
        man.render_description_section(buf)?;
        if command.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(buf)?;
        }
        if command.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(buf)?;
        }
        buf.extend_from_slice(exit_status_roff().as_bytes());
        if command.get_version().is_some() {
            man.render_version_section(buf)?;
        }
        Ok(())
    };
    write(&mut buf).map_err(|source| CmdError::Write {
        path: PathBuf::from("<man page>"),
        source,
    })?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The EXIT STATUS section in roff: one tagged paragraph per code.
fn exit_status_roff() -> String {
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for exit in Exit::ALL {
        let meaning = exit.meaning().replace('-', "\\-");
        s.push_str(&format!(".TP\n{}\n{meaning}\n", exit.code()));
    }
    s
}
