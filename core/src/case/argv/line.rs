//! Stage "case": the line `_run_training.sh` builds from a MODEL_ARGS map, and its words.
//!
//! Megatron runs `envsubst` over the whole file (names set in the environment; others stay as
//! written), prints each entry with yq as `key: value` (`key=value` for NeMo cases, whose
//! training script names NeMo), and turns every printed line into a piece of one shell line:
//! - Megatron cases: the value is trimmed by `echo "$value" | xargs` (see `xargs.rs`), then
//!   `true` → the bare flag; `(...)` → `--flag "(...)"`; `[a b]` → `--flag a b`; a value with
//!   a space, `|`, `(` or `)` → `--flag "value"`; anything else → `--flag value`.
//! - NeMo cases: `key=true` → `key`; a value with whitespace → `key="value"`; else `key=value`.
//!
//! yq drops an entry whose value is the empty string; `false` and null are printed as text
//! (`--flag false`; null prints as it was written, an empty null as nothing, so `--flag:`
//! alone is a bare flag). A multi-line value prints as several lines, each read as an entry
//! of its own, as the script's `while read` loop reads them. The line is then `eval`ed
//! (see `eval.rs`), which expands names the case's ENV_VARS define.

use super::eval::{EvalError, Expansion, eval_words};
use super::xargs::{XargsError, xargs_trim};
use crate::case::placeholder::placeholders;
use crate::case::types::{ModelArgs, ScalarKind, Span, Word};

/// Where names come from.
pub struct Lookups<'a> {
    /// The NeMo branch of `_run_training.sh` (the training script names NeMo).
    pub nemo: bool,
    /// Names set in the environment when Megatron runs `envsubst` over the file.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Names the shell knows at the `eval`: the environment and the case's ENV_VARS.
    pub shell: &'a dyn Fn(&str) -> Option<String>,
}

impl Lookups<'static> {
    /// No names set anywhere: placeholders stay as written (for listing and linting).
    pub fn none(nemo: bool) -> Lookups<'static> {
        Lookups {
            nemo,
            env: &|_| None,
            shell: &|_| None,
        }
    }
}

/// The argv of one MODEL_ARGS map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelArgv {
    /// The words, each with the place in `model_config.yaml` it came from.
    pub words: Vec<Word>,
    /// Every name the two passes met, with the value they used and where it was written.
    pub expansions: Vec<(Expansion, Option<Span>)>,
}

/// A MODEL_ARGS entry Megatron's script would not turn into arguments the way goldgate can.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgvError {
    #[error("`{flag}`: {source}")]
    Xargs {
        flag: String,
        span: Option<Span>,
        #[source]
        source: XargsError,
    },
    #[error("`{flag}`: {source}")]
    Eval {
        flag: String,
        span: Option<Span>,
        #[source]
        source: EvalError,
    },
}

impl ArgvError {
    /// Where the entry is written.
    pub fn span(&self) -> Option<Span> {
        match self {
            ArgvError::Xargs { span, .. } | ArgvError::Eval { span, .. } => *span,
        }
    }
}

impl ModelArgs {
    /// Whether these are NeMo-style keys (`trainer.max_steps`), none a `-` flag: how a case is
    /// read when its training script is not known.
    pub fn looks_like_nemo(&self) -> bool {
        !self.entries.is_empty() && self.entries.iter().all(|(k, _)| !k.starts_with('-'))
    }

    /// The argv with no names set (placeholders stay as written), for listing and linting.
    pub fn argv(&self) -> Result<Vec<Word>, ArgvError> {
        model_argv(self, &Lookups::none(self.looks_like_nemo())).map(|a| a.words)
    }

    /// [`ModelArgs::argv`] as plain strings.
    pub fn argv_strings(&self) -> Result<Vec<String>, ArgvError> {
        Ok(self.argv()?.into_iter().map(|w| w.text).collect())
    }
}

/// One printed line and the places its key and value were written.
struct Line {
    text: String,
    key: String,
    key_span: Option<Span>,
    value_span: Option<Span>,
}

/// The argv `_run_training.sh` makes of `args`.
pub fn model_argv(args: &ModelArgs, lookups: &Lookups<'_>) -> Result<ModelArgv, ArgvError> {
    let mut out = ModelArgv::default();
    let sep = if lookups.nemo { "=" } else { ": " };
    for line in printed_lines(args, sep, lookups, &mut out) {
        let piece = if lookups.nemo {
            nemo_piece(&line.text)
        } else {
            megatron_piece(&line.text).map_err(|source| ArgvError::Xargs {
                flag: line.key.clone(),
                span: line.value_span,
                source,
            })?
        };
        let (words, expansions) =
            eval_words(&piece, lookups.shell).map_err(|source| ArgvError::Eval {
                flag: line.key.clone(),
                span: line.value_span,
                source,
            })?;
        for (i, text) in words.into_iter().enumerate() {
            let span = if i == 0 {
                line.key_span
            } else {
                line.value_span
            };
            out.words.push(Word { text, span });
        }
        out.expansions
            .extend(expansions.into_iter().map(|e| (e, line.value_span)));
    }
    Ok(out)
}

/// yq's `key<sep>value` lines after envsubst; entries whose value is the empty string are
/// dropped, multi-line values give one line per line.
fn printed_lines(
    args: &ModelArgs,
    sep: &str,
    lookups: &Lookups<'_>,
    out: &mut ModelArgv,
) -> Vec<Line> {
    let mut lines = Vec::new();
    for (i, (key, value)) in args.entries.iter().enumerate() {
        let key_span = args.key_spans.get(i).copied().flatten();
        let text = envsubst(&value.text, lookups.env, value.span, out);
        if value.kind != ScalarKind::Null && text.is_empty() {
            continue;
        }
        let key = envsubst(key, lookups.env, key_span, out);
        let printed = format!("{key}{sep}{text}");
        for (n, part) in printed.split('\n').enumerate() {
            lines.push(Line {
                text: part.to_owned(),
                key: key.clone(),
                key_span: if n == 0 { key_span } else { value.span },
                value_span: value.span,
            });
        }
    }
    lines
}

/// `envsubst` with the names `env` knows; others stay as written. Records what it used.
fn envsubst(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    span: Option<Span>,
    out: &mut ModelArgv,
) -> String {
    let mut result = String::with_capacity(text.len());
    let mut copied = 0;
    for (name, range) in placeholders(text) {
        let Some(value) = env(&name) else {
            continue;
        };
        result.push_str(&text[copied..range.start]);
        result.push_str(&value);
        copied = range.end;
        let met = Expansion {
            name,
            value: Some(value),
        };
        out.expansions.push((met, span));
    }
    result.push_str(&text[copied..]);
    result
}

/// The Megatron branch: `key: value` → the piece the script appends to its line.
fn megatron_piece(line: &str) -> Result<String, XargsError> {
    if line.is_empty() {
        return Ok(String::new());
    }
    let key = line.split_once(':').map_or(line, |(k, _)| k);
    let value = line.split_once(": ").map_or(line, |(_, v)| v);
    let value = xargs_trim(value)?;
    let spaced = value.contains([' ', '|', '(', ')']);
    let parenthesised = value.len() > 2
        && value.starts_with('(')
        && value.ends_with(')')
        && !value[1..value.len() - 1].contains(')');
    let bracketed = value.len() > 2
        && value.starts_with('[')
        && value.ends_with(']')
        && !value[1..value.len() - 1].contains(']');
    Ok(if value == "true" {
        key.to_owned()
    } else if parenthesised {
        format!("{key} \"{value}\"")
    } else if bracketed {
        format!("{key} {}", &value[1..value.len() - 1])
    } else if spaced {
        format!("{key} \"{value}\"")
    } else {
        format!("{key} {value}")
    })
}

/// The NeMo branch: `key=value` → the piece the script appends to its line.
fn nemo_piece(line: &str) -> String {
    if let Some(key) = line.strip_suffix("=true") {
        return key.to_owned();
    }
    match line.split_once('=') {
        Some((key, value)) if value.contains(char::is_whitespace) => {
            format!("{key}=\"{value}\"")
        }
        _ => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::types::Scalar;

    fn args(entries: &[(&str, &str, ScalarKind)]) -> ModelArgs {
        ModelArgs {
            key: "MODEL_ARGS".into(),
            entries: entries
                .iter()
                .map(|(k, v, kind)| {
                    let scalar = Scalar {
                        text: (*v).to_owned(),
                        kind: *kind,
                        span: Some(Span { line: 3, column: 9 }),
                    };
                    ((*k).to_owned(), scalar)
                })
                .collect(),
            key_spans: vec![Some(Span { line: 3, column: 3 }); entries.len()],
        }
    }

    fn texts(m: &ModelArgs, lookups: &Lookups<'_>) -> Vec<String> {
        let argv = model_argv(m, lookups).unwrap();
        argv.words.into_iter().map(|w| w.text).collect()
    }

    #[test]
    fn megatron_branch() {
        use ScalarKind::*;
        let m = args(&[
            ("--bf16", "true", Bool(true)),
            ("--no-x", "false", Bool(false)),
            ("--quoted-empty", "", Str),
            ("--null", "", Null),
            ("--lr", "1e-8", Float),
            ("--split", "949,50,1", Str),
            ("--modules", "[a b  c]", Str),
            ("--freq", "([0]*3+[1]*11)", Str),
            ("--pattern", "M-M|M-M", Str),
            ("--desc", "two   words", Str),
            ("--cap", "True", Bool(true)),
            ("--stop-words", "\"the\"", Str),
            ("--prompts", "a\\\\nb c", Str),
        ]);
        assert_eq!(
            texts(&m, &Lookups::none(false)),
            [
                "--bf16",
                "--no-x",
                "false",
                "--null",
                "--lr",
                "1e-8",
                "--split",
                "949,50,1",
                "--modules",
                "a",
                "b",
                "c",
                "--freq",
                "([0]*3+[1]*11)",
                "--pattern",
                "M-M|M-M",
                "--desc",
                "two words",
                "--cap",
                "True",
                "--stop-words",
                "the",
                "--prompts",
                "a\\nb c",
            ]
        );
    }

    #[test]
    fn nemo_branch() {
        use ScalarKind::*;
        let m = args(&[
            ("trainer.max_steps", "50", Int),
            ("trainer.strategy.sequence_parallel", "True", Bool(true)),
            ("model.flag", "true", Bool(true)),
            ("log.dir", "", Str),
            ("model.name", "a b", Str),
        ]);
        assert_eq!(
            texts(&m, &Lookups::none(true)),
            [
                "trainer.max_steps=50",
                "trainer.strategy.sequence_parallel=True",
                "model.flag",
                "model.name=a b"
            ]
        );
    }

    #[test]
    fn two_passes_and_what_they_met() {
        use ScalarKind::*;
        let m = args(&[
            ("--data", "${DATA_PATH}/x", Str),
            ("--ckpt", "${FROM_CASE}", Str),
            ("--nope", "${NOPE}", Str),
            ("--two", "${TWO}", Str),
        ]);
        let env = |n: &str| (n == "DATA_PATH").then(|| "/d".to_owned());
        let shell = |n: &str| match n {
            "DATA_PATH" => Some("/d".to_owned()),
            "FROM_CASE" => Some("/d/ckpt".to_owned()),
            "TWO" => Some("a b".to_owned()),
            _ => None,
        };
        let lookups = Lookups {
            nemo: false,
            env: &env,
            shell: &shell,
        };
        assert_eq!(
            texts(&m, &lookups),
            [
                "--data", "/d/x", "--ckpt", "/d/ckpt", "--nope", "${NOPE}", "--two", "a", "b"
            ]
        );
        let argv = model_argv(&m, &lookups).unwrap();
        let unset: Vec<_> = argv
            .expansions
            .iter()
            .filter(|(e, _)| e.value.is_none())
            .map(|(e, _)| e.name.as_str())
            .collect();
        assert_eq!(unset, ["NOPE"]);
        assert_eq!(argv.words[1].span, Some(Span { line: 3, column: 9 }));
    }

    #[test]
    fn refusals_name_the_flag() {
        let m = args(&[("--bad", "it's", ScalarKind::Str)]);
        let err = model_argv(&m, &Lookups::none(false)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`--bad`: xargs rejects it: unmatched single quote"
        );
        assert_eq!(err.span(), Some(Span { line: 3, column: 9 }));
    }
}
