//! Stage "plan": quoting words for bash, with secrets from the caller's environment referred
//! to by name (`"${HF_TOKEN:?set HF_TOKEN}"`) instead of written out.

use super::job::Job;

/// `word` as one bash word: as is when it holds only safe characters, else in single quotes
/// with each `'` written as `'\''`.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-+=./:,@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A bash reference that fails with a message when the variable is unset.
pub(crate) fn required_ref(name: &str) -> String {
    format!("\"${{{name}:?set {name}}}\"")
}

/// `text` as one bash word in which every secret value the job took from the caller's
/// environment is replaced by a reference to its variable.
pub(crate) fn quote_with_secrets(job: &Job, text: &str) -> String {
    let secrets = super::job::secrets(job);
    let mut out = String::new();
    let mut rest = text;
    loop {
        let next = secrets
            .iter()
            .filter_map(|s| super::job::find_whole(rest, s.1, 0).map(|at| (at, *s)))
            .min_by_key(|(at, s)| (*at, std::cmp::Reverse(s.1.len())));
        let Some((at, (name, value))) = next else {
            break;
        };
        if at > 0 {
            out.push_str(&shell_quote(&rest[..at]));
        }
        out.push_str(&required_ref(name));
        rest = &rest[at + value.len()..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push_str(&shell_quote(rest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        let cases = [
            ("--num-layers", "--num-layers"),
            ("/a/b.py", "/a/b.py"),
            ("", "''"),
            ("two words", "'two words'"),
            ("it's", r"'it'\''s'"),
            ("$HOME", "'$HOME'"),
            ("a|b", "'a|b'"),
            ("line\nbreak", "'line\nbreak'"),
        ];
        for (word, want) in cases {
            assert_eq!(shell_quote(word), want, "{word:?}");
        }
    }
}
