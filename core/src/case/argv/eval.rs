//! Stage "case": the words bash makes of one piece of the line `_run_training.sh` evals
//! (`eval "TRAINING_PARAMS_ARRAY=($LINE)"`): blanks separate words; `'...'` is literal;
//! `"..."` keeps blanks and expands `$NAME`/`${NAME}`; a backslash outside quotes takes the
//! next character literally (inside double quotes only before `$`, `` ` ``, `"`, `\`); an
//! unquoted expansion is split on blanks. That is how the second placeholder pass happens in
//! Megatron: the ENV_VARS are exported by then, so names they define are expanded here.
//!
//! Anything else the shell would do (command substitution, `${NAME:-x}` and other operators,
//! special parameters, redirections, comments, tilde and brace expansion) is refused with the
//! construct named, rather than guessed. Globs stay literal: bash expands them only when a file
//! in Megatron's checkout matches, which no MODEL_ARGS value in the corpus does.

/// A name the eval met: what it expanded to, or `None` when nothing sets it (the text is then
/// kept as written, where bash would put an empty string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    pub name: String,
    pub value: Option<String>,
}

/// A construct goldgate does not evaluate the way bash would.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("unmatched {0} quote")]
    UnmatchedQuote(&'static str),
    #[error("`{0}` would make bash run or redirect something")]
    Shell(String),
    #[error("`{0}` is a shell expansion goldgate does not perform")]
    Expansion(String),
    #[error("a backslash at the end would join the next argument to this one")]
    TrailingBackslash,
}

/// Bash's words for `text`, expanding names through `lookup`; the names met, in order.
pub fn eval_words(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<String>, Vec<Expansion>), EvalError> {
    let mut e = Evaluator {
        chars: text.chars().collect(),
        at: 0,
        words: Vec::new(),
        current: None,
        expansions: Vec::new(),
        lookup,
    };
    e.run()?;
    e.words.extend(e.current.take());
    Ok((e.words, e.expansions))
}

struct Evaluator<'a> {
    chars: Vec<char>,
    at: usize,
    words: Vec<String>,
    /// The word being built; `None` between words (an empty quoted string makes `Some("")`).
    current: Option<String>,
    expansions: Vec<Expansion>,
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Evaluator<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn push(&mut self, c: char) {
        self.current.get_or_insert_with(String::new).push(c);
    }

    fn push_str(&mut self, s: &str) {
        self.current.get_or_insert_with(String::new).push_str(s);
    }

    fn run(&mut self) -> Result<(), EvalError> {
        while let Some(c) = self.peek(0) {
            self.at += 1;
            match c {
                ' ' | '\t' | '\n' => self.words.extend(self.current.take()),
                '\'' => self.single_quoted()?,
                '"' => self.double_quoted()?,
                '\\' => match self.peek(0) {
                    None => return Err(EvalError::TrailingBackslash),
                    Some('\n') => self.at += 1,
                    Some(next) => {
                        self.at += 1;
                        self.push(next);
                    }
                },
                '$' => self.dollar(false)?,
                '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                    return Err(EvalError::Shell(c.to_string()));
                }
                '#' | '~' if self.current.is_none() => {
                    return Err(EvalError::Expansion(c.to_string()));
                }
                '{' if self.brace_expansion() => {
                    return Err(EvalError::Expansion("{...,...}".to_owned()));
                }
                c => self.push(c),
            }
        }
        Ok(())
    }

    fn single_quoted(&mut self) -> Result<(), EvalError> {
        self.current.get_or_insert_with(String::new);
        loop {
            match self.peek(0) {
                None => return Err(EvalError::UnmatchedQuote("single")),
                Some('\'') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(c) => {
                    self.at += 1;
                    self.push(c);
                }
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), EvalError> {
        self.current.get_or_insert_with(String::new);
        loop {
            let Some(c) = self.peek(0) else {
                return Err(EvalError::UnmatchedQuote("double"));
            };
            self.at += 1;
            match c {
                '"' => return Ok(()),
                '\\' => match self.peek(0) {
                    Some(e @ ('$' | '`' | '"' | '\\')) => {
                        self.at += 1;
                        self.push(e);
                    }
                    Some('\n') => self.at += 1,
                    _ => self.push('\\'),
                },
                '$' => self.dollar(true)?,
                '`' => return Err(EvalError::Shell("`".to_owned())),
                c => self.push(c),
            }
        }
    }

    /// After a `$`: `$NAME` or `${NAME}`; a `$` before anything else is a literal `$`.
    fn dollar(&mut self, quoted: bool) -> Result<(), EvalError> {
        let braced = self.peek(0) == Some('{');
        let start = self.at + usize::from(braced);
        let mut end = start;
        while let Some(c) = self.chars.get(end) {
            let ok = c.is_ascii_alphabetic() || *c == '_' || (end > start && c.is_ascii_digit());
            if !ok {
                break;
            }
            end += 1;
        }
        let name: String = self.chars[start..end].iter().collect();
        let next = self.chars.get(end).copied();
        match (braced, name.is_empty(), next) {
            (true, false, Some('}')) => self.at = end + 1,
            (false, false, _) => self.at = end,
            (false, true, Some(c)) if "@*#?-$!0123456789(".contains(c) => {
                return Err(EvalError::Expansion(format!("${c}")));
            }
            (false, true, Some(c @ ('"' | '\''))) if !quoted => {
                return Err(EvalError::Expansion(format!("${c}")));
            }
            (true, _, _) => {
                let shown: String = self.chars[self.at - 1..].iter().take(12).collect();
                return Err(EvalError::Expansion(shown));
            }
            (false, true, _) => {
                self.push('$');
                return Ok(());
            }
        }
        let value = (self.lookup)(&name);
        self.expansions.push(Expansion {
            name: name.clone(),
            value: value.clone(),
        });
        match value {
            Some(v) if !quoted => self.split_into_words(&v),
            Some(v) => self.push_str(&v),
            None if braced => self.push_str(&format!("${{{name}}}")),
            None => self.push_str(&format!("${name}")),
        }
        Ok(())
    }

    /// An unquoted expansion: its blanks end words, as `IFS` splits them.
    fn split_into_words(&mut self, value: &str) {
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            if matches!(c, ' ' | '\t' | '\n') {
                self.words.extend(self.current.take());
                while chars.next_if(|c| matches!(c, ' ' | '\t' | '\n')).is_some() {}
            } else {
                self.push(c);
            }
        }
    }

    /// Whether an unquoted `{` here starts a brace expansion (`{a,b}` or `{1..3}`).
    fn brace_expansion(&self) -> bool {
        let rest: String = self.chars[self.at..]
            .iter()
            .take_while(|c| !matches!(c, ' ' | '\t' | '\n' | '}'))
            .collect();
        let closed = self.chars.get(self.at + rest.chars().count()) == Some(&'}');
        closed && (rest.contains(',') || rest.contains(".."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Result<Vec<String>, EvalError> {
        let lookup = |name: &str| match name {
            "P" => Some("/data".to_owned()),
            "TWO" => Some("a  b".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        eval_words(text, &lookup).map(|(w, _)| w)
    }

    #[test]
    fn quoting_and_backslashes_follow_bash() {
        let cases: [(&str, &[&str]); 9] = [
            ("--a 1", &["--a", "1"]),
            ("--a \"x  y\"", &["--a", "x  y"]),
            ("--a 'x $P'", &["--a", "x $P"]),
            ("--a \"x\\ny \\$P \\\"q\\\"\"", &["--a", "x\\ny $P \"q\""]),
            ("--a x\\ y", &["--a", "x y"]),
            ("--a \"\"", &["--a", ""]),
            ("--a M-M*-M", &["--a", "M-M*-M"]),
            ("--a cost$", &["--a", "cost$"]),
            ("--a x=y,z", &["--a", "x=y,z"]),
        ];
        assert_eq!(words("--a \"5$ and $\"").unwrap(), ["--a", "5$ and $"]);
        assert!(words("--a $'x'").is_err(), "ANSI-C quoting");
        for (text, want) in cases {
            assert_eq!(words(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn expansions_split_unquoted_and_keep_unset_names() {
        assert_eq!(words("--d ${P}/x").unwrap(), ["--d", "/data/x"]);
        assert_eq!(words("--d $TWO").unwrap(), ["--d", "a", "b"]);
        assert_eq!(words("--d \"$TWO\"").unwrap(), ["--d", "a  b"]);
        assert_eq!(words("--d $EMPTY").unwrap(), ["--d"]);
        assert_eq!(
            words("--d ${NOPE}/x $NOPE").unwrap(),
            ["--d", "${NOPE}/x", "$NOPE"]
        );
        let lookup = |_: &str| None;
        let (_, met) = eval_words("$A \"${B}\"", &lookup).unwrap();
        let names: Vec<_> = met.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["A", "B"]);
    }

    #[test]
    fn what_bash_would_do_differently_is_refused() {
        for text in [
            "--a $(date)",
            "--a `date`",
            "--a x;y",
            "--a ${P:-x}",
            "--a $1",
            "--a #x",
            "--a ~/x",
            "--a {a,b}",
            "--a \"open",
            "--a 'open",
            "--a x\\",
        ] {
            assert!(words(text).is_err(), "{text}");
        }
        assert_eq!(words("--a x#y").unwrap(), ["--a", "x#y"], "# inside a word");
        assert_eq!(words("--a {x}").unwrap(), ["--a", "{x}"]);
    }
}
