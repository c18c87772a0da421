//! Shared by every stage that prints: the last guard on everything goldgate writes to stdout
//! and stderr (the `cmd::output` macros, the run's progress lines, `--no-capture`'s echo). A
//! control character that is not a line break, a tab or one of goldgate's own colour sequences
//! is shown as its escape (`\r`, `\u{1b}`) instead of acting, and no line can start a GitHub
//! workflow command (`::warning::…`, `##[error]…`) unless it is one of goldgate's own
//! annotations. Names and log lines inside a line are made one line at their source
//! (`log::one_line`); this guard holds even where one was missed. [`error_text`] is
//! the one way an error is written (`error:`, `caused by:`, `help:`).

use std::borrow::Cow;

/// A control character as its escape (`\n`, `\u{1b}`), anything else as itself.
fn push_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() => out.extend(c.escape_default()),
        c => out.push(c),
    }
}

/// Whether a line (leading whitespace aside) would be read by a GitHub runner as a workflow
/// command.
fn is_command(line: &str) -> bool {
    let body = line.trim_start();
    body.starts_with("::") || body.starts_with("##[")
}

/// [`terminal`] for text that arrives in pieces (a `format_args!` written piece by piece, so a
/// large report is never copied whole): the start of a line is held back until it shows whether
/// it starts a workflow command, and an unfinished escape sequence until it ends.
#[derive(Debug, Default)]
pub struct Guard {
    commands: bool,
    /// Text held back: an undecided line start or an unfinished escape sequence.
    carry: String,
    /// The text given out so far ended inside a line (the next piece continues it).
    inside_line: bool,
}

impl Guard {
    /// A guard; `commands` as in [`terminal`].
    pub fn new(commands: bool) -> Guard {
        Guard {
            commands,
            ..Guard::default()
        }
    }

    /// Gives `emit` the guarded text of `piece` that can go out now. A piece is never copied
    /// whole: only what is held back (a line start, an escape sequence) is kept.
    pub fn push(&mut self, piece: &str, emit: &mut dyn FnMut(&str)) {
        let mut rest = piece;
        while !self.carry.is_empty() && !rest.is_empty() {
            let mut cut = rest.len().min(256);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let mut text = std::mem::take(&mut self.carry);
            text.push_str(&rest[..cut]);
            rest = &rest[cut..];
            self.take_in(&text, emit);
        }
        if !rest.is_empty() {
            self.take_in(rest, emit);
        }
    }

    /// Gives `emit` what is still held back, guarded: call it once after the last piece.
    pub fn finish(&mut self, emit: &mut dyn FnMut(&str)) {
        let rest = std::mem::take(&mut self.carry);
        self.give(&rest, emit);
    }

    fn take_in(&mut self, text: &str, emit: &mut dyn FnMut(&str)) {
        let keep = held_back(text, self.inside_line, self.commands);
        self.give(&text[..keep], emit);
        self.carry = text[keep..].to_owned();
    }

    fn give(&mut self, text: &str, emit: &mut dyn FnMut(&str)) {
        if text.is_empty() {
            return;
        }
        emit(&guard(text, self.commands, self.inside_line));
        self.inside_line = !text.ends_with('\n');
    }
}

/// Where the part of `text` that must wait for more begins: an unfinished escape sequence at
/// its end, or a last line whose start does not yet show whether it is a command.
fn held_back(text: &str, inside_line: bool, commands: bool) -> usize {
    if let Some(esc) = text.rfind('\u{1b}') {
        let tail = &text[esc + 1..];
        let open = tail.len() < 16
            && tail.strip_prefix('[').map_or(tail.is_empty(), |p| {
                p.bytes().all(|b| b.is_ascii_digit() || b == b';')
            });
        if open {
            return esc;
        }
    }
    let start = text.rfind('\n').map_or(0, |i| i + 1);
    if commands || (start == 0 && inside_line) {
        return text.len();
    }
    let body = text[start..].trim_start();
    let undecided = "::".starts_with(body) || "##[".starts_with(body);
    if undecided { start } else { text.len() }
}

/// A name read from a file (a TensorBoard tag, a path) as one inert line: every control
/// character — ESC of a colour sequence included — shown as its escape (`\u{1b}[31m`), so a
/// name can neither colour the terminal nor pass for another name.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    text.chars().for_each(|c| push_char(&mut out, c));
    Cow::Owned(out)
}

/// Text goldgate prints to stdout or stderr, made safe as a whole: line breaks and tabs stay,
/// colour sequences (`ESC [ … m`, goldgate's own) stay, every other control character is
/// escaped, and a line that would start a workflow command gets a `\` in
/// front. `commands`: the text is goldgate's annotations, whose lines are commands on purpose.
pub fn terminal(text: &str, commands: bool) -> Cow<'_, str> {
    guard(text, commands, false)
}

/// [`terminal`]; `inside_line`: the text continues a line already given out.
fn guard(text: &str, commands: bool, inside_line: bool) -> Cow<'_, str> {
    let continued = |i: usize| commands || (i == 0 && inside_line);
    let starts = |i: usize, line: &str| !continued(i) && is_command(line);
    let clean = !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\u{1b}'))
        && !text.contains('\u{1b}')
        && !text.split('\n').enumerate().any(|(i, l)| starts(i, l));
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if starts(i, line) {
            out.push('\\');
        }
        push_line(&mut out, line);
    }
    Cow::Owned(out)
}

/// One line: SGR colour sequences and tabs kept, other control characters escaped.
fn push_line(out: &mut String, line: &str) {
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}'
            && let Some(len) = sgr_len(rest)
        {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        match c {
            '\t' => out.push('\t'),
            c => push_char(out, c),
        }
        rest = &rest[c.len_utf8()..];
    }
}

/// The length of the colour sequence `ESC [ digits/; m` at the start of `s`, if it is one.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// How goldgate shows an error, on every command and for every case a selection could not
/// plan, in the style of clap's usage errors: `error: <message>`,
/// one `  caused by: …` line per source the message does not already include, each related
/// error indented under it, then `  help: <hint>`. Lines are never wrapped, so a `path:line:col` stays whole for terminals
/// and editors to follow. `context` (a case name) goes before the message unless the message
/// starts with it or with a path. With `color`, the labels are coloured as clap colours them.
pub fn error_text(err: &dyn miette::Diagnostic, context: Option<&str>, color: bool) -> String {
    let paint = |label: &str, sgr: &str| {
        if color {
            format!("\u{1b}[{sgr}m{label}\u{1b}[0m")
        } else {
            label.to_owned()
        }
    };
    let message = err.to_string();
    let message = match context {
        Some(c) if !message.starts_with(c) && !message.starts_with('/') => {
            format!("{c}: {message}")
        }
        _ => message,
    };
    let mut text = format!("{} {message}\n", paint("error:", "1;31"));
    let mut source = err.source();
    while let Some(cause) = source {
        // A message that already ends in its cause's text (`cannot write F: denied`) does not
        // say it twice.
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(&format!("  {} {said}\n", paint("caused by:", "1")));
        }
        source = cause.source();
    }
    for related in err.related().into_iter().flatten() {
        for line in error_text(related, None, color).lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    if let Some(help) = err.help() {
        text.push_str(&format!("  {} {help}\n", paint("help:", "1;32")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_keeps_lines_and_colours_and_breaks_commands() {
        let text = "\u{1b}[31mFAIL\u{1b}[0m a\tb\n::warning::INJECTED\n  ##[error]x\ny\r::error::z\u{1b}]0;t\u{7}";
        assert_eq!(
            terminal(text, false),
            "\u{1b}[31mFAIL\u{1b}[0m a\tb\n\\::warning::INJECTED\n\\  ##[error]x\ny\\r::error::z\\u{1b}]0;t\\u{7}"
        );
        assert_eq!(terminal("::error file=a::m\n", true), "::error file=a::m\n");
        assert!(matches!(
            terminal("plain\nlines\n", false),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_guard_fed_in_pieces_gives_what_terminal_gives_whole() {
        let text = "\u{1b}[31mFAIL\u{1b}[0m a\n::warning::X\n  ##[error]y\nok :: fine\n:\u{1}\n::e";
        let whole = terminal(text, false).into_owned();
        let chars: Vec<char> = text.chars().collect();
        for size in [1, 2, 3, 5, 7] {
            let mut guard = Guard::new(false);
            let mut out = String::new();
            let mut emit = |t: &str| out.push_str(t);
            for piece in chars.chunks(size) {
                guard.push(&piece.iter().collect::<String>(), &mut emit);
            }
            guard.finish(&mut emit);
            assert_eq!(out, whole, "pieces of {size}");
        }
    }
}
