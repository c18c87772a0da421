//! Stage "report": the markdown report of a comparison (step summary and PR comment body) and
//! [`escape_md`], which every markdown renderer applies to text from logs, cases and variants.

/// Escapes text for a GitHub markdown table cell: table pipes, HTML, emphasis, links, code
/// spans and `@` mentions (a zero-width space after `@` keeps GitHub from pinging anyone).
/// Line breaks become spaces so a log line cannot end the table row.
pub fn escape_md(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("@&#8203;"),
            '\r' | '\n' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_github_would_interpret() {
        let cases = [
            ("gpt/gpt3_mcore", r"gpt/gpt3\_mcore"),
            ("a|b", r"a\|b"),
            ("<img src=x>", "&lt;img src=x&gt;"),
            ("`rm -rf`", r"\`rm -rf\`"),
            ("ping @org/team", "ping @&#8203;org/team"),
            ("[x](http://e)", r"\[x\](http://e)"),
            ("**bold** #12 ~~s~~", r"\*\*bold\*\* \#12 \~\~s\~\~"),
            ("a\\b & c", r"a\\b &amp; c"),
            ("line1\nline2\r", "line1 line2 "),
        ];
        for (input, want) in cases {
            assert_eq!(escape_md(input), want, "{input:?}");
        }
    }
}
