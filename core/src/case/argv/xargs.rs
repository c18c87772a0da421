//! Stage "case": `value="$(echo "$value" | xargs)"`, the trim `_run_training.sh` gives every
//! MODEL_ARGS value. GNU xargs splits its input into words (blanks and newlines separate them;
//! `'...'` and `"..."` group without escapes; a backslash outside quotes takes the next
//! character literally) and runs `echo` with them, which joins them with one space. So the
//! trim also collapses inner runs of blanks and removes quotes: `'"the"'` becomes `the`.

/// Why a value cannot go through xargs and echo the way Megatron's script sends it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XargsError {
    #[error("xargs rejects it: unmatched {0} quote")]
    UnmatchedQuote(&'static str),
    #[error("echo would read `{0}` as its own option")]
    EchoOption(String),
}

/// The value as `echo "$value" | xargs` prints it (without the final newline).
pub(crate) fn xargs_trim(value: &str) -> Result<String, XargsError> {
    let words = split(value)?;
    let options = words.iter().take_while(|w| is_echo_option(w)).count();
    if let Some(option) = words.first().filter(|_| options > 0) {
        // `echo -n x` drops the newline (invisible after `$(...)`), but `-e` would interpret
        // escapes: rather than guess, refuse anything echo takes as an option.
        return Err(XargsError::EchoOption(option.clone()));
    }
    if words.len() == 1 && (words[0] == "--help" || words[0] == "--version") {
        return Err(XargsError::EchoOption(words[0].clone()));
    }
    Ok(words.join(" "))
}

/// `-n`, `-e`, `-E` and their combinations, which GNU echo reads as options.
fn is_echo_option(word: &str) -> bool {
    word.strip_prefix('-')
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| matches!(c, 'n' | 'e' | 'E')))
}

/// xargs' word splitting of `value` followed by the newline `echo` adds.
fn split(value: &str) -> Result<Vec<String>, XargsError> {
    let mut words = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(current.take()),
            '\'' | '"' => {
                let word = current.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some('\n') | None => {
                            let name = if c == '"' { "double" } else { "single" };
                            return Err(XargsError::UnmatchedQuote(name));
                        }
                        Some(other) => word.push(other),
                    }
                }
            }
            '\\' => {
                let word = current.get_or_insert_with(String::new);
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            other => current.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(current);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_collapses_and_unquotes_as_xargs_does() {
        let cases = [
            ("  a  ", "a"),
            ("a   b\tc", "a b c"),
            ("\"the\"", "the"),
            ("'a  b' c", "a  b c"),
            ("x\\\\ny", "x\\ny"),
            ("a\\ b", "a b"),
            ("", ""),
            ("\"\"", ""),
            ("-1", "-1"),
        ];
        for (input, want) in cases {
            assert_eq!(xargs_trim(input).as_deref(), Ok(want), "{input:?}");
        }
    }

    #[test]
    fn unmatched_quotes_and_echo_options_are_refused() {
        assert_eq!(
            xargs_trim("it's"),
            Err(XargsError::UnmatchedQuote("single"))
        );
        assert_eq!(xargs_trim("-n 5"), Err(XargsError::EchoOption("-n".into())));
        assert!(xargs_trim("--help").is_err());
        assert!(
            xargs_trim("--help me").is_ok(),
            "only a lone --help is an option"
        );
    }
}
