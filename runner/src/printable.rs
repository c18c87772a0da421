//! Shared by every stage that prints: the last guard on everything goldgate writes to stdout
//! and stderr (the `cmd::output` macros, the run's progress lines, `--no-capture`'s echo). A
//! control character that is not a line break, a tab or one of goldgate's own colour sequences
//! is shown as its escape (`\r`, `\u{1b}`) instead of acting, and no line can start a GitHub
//! workflow command (`::warning::…`, `##[error]…`) unless it is one of goldgate's own
//! annotations. Names and log lines inside a line are made one line at their source
//! (`observe::log::one_line`); this guard holds even where one was missed.

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

/// Text goldgate prints to stdout or stderr, made safe as a whole: line breaks and tabs stay,
/// colour sequences (`ESC [ … m`, goldgate's own) stay, every other control character is
/// escaped, and a line that would start a workflow command gets a `\` in
/// front. `commands`: the text is goldgate's annotations, whose lines are commands on purpose.
pub fn terminal(text: &str, commands: bool) -> Cow<'_, str> {
    let clean = !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\u{1b}'))
        && !text.contains('\u{1b}')
        && (commands || !text.split('\n').any(is_command));
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !commands && is_command(line) {
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
}
