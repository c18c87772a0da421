//! Stage "case": MODEL_ARGS → argv words, by the rules of Megatron's `_run_training.sh`.
//!
//! Megatron flags (keys starting with `-`):
//! - `--flag: true` → `--flag`. `--flag: false` → dropped (Megatron's yq filter
//!   `select(.value != "false")`; negatives are spelled `--no-x: true`).
//! - null or empty value → dropped.
//! - `"[a b c]"` → `--flag a b c` (brackets stripped, split on whitespace).
//! - a value holding a space, `|`, `(` or `)` → `--flag` and the value as one word (Megatron
//!   quotes these so the shell keeps them whole; goldgate runs no shell).
//! - anything else → `--flag value`, the value's text exactly as written.
//!
//! `true`/`false` are matched on the text, as yq compares it: `True` is passed as `True`.
//!
//! NeMo keys (no leading `-`, e.g. `trainer.max_steps`, the gpt-nemo cases): one word
//! `key=value`, as Megatron's NeMo branch builds them; `key: true` → the bare `key` (that
//! branch strips `=true`), null/empty → dropped. A value with spaces stays inside its one word.

use super::types::{ModelArgs, Scalar, Word};

impl ModelArgs {
    /// The argv words for this map, in file order.
    pub fn argv(&self) -> Vec<Word> {
        let mut words = Vec::new();
        for (i, (key, value)) in self.entries.iter().enumerate() {
            let key_span = self.key_spans.get(i).copied().flatten();
            let flag = Word {
                text: key.clone(),
                span: key_span,
            };
            if key.starts_with('-') {
                megatron_words(flag, value, &mut words);
            } else {
                nemo_word(flag, value, &mut words);
            }
        }
        words
    }

    /// The argv as plain strings (for display and tests).
    pub fn argv_strings(&self) -> Vec<String> {
        self.argv().into_iter().map(|w| w.text).collect()
    }
}

fn megatron_words(flag: Word, value: &Scalar, out: &mut Vec<Word>) {
    if value.is_empty() || value.text == "false" {
        return;
    }
    if value.text == "true" {
        out.push(flag);
        return;
    }
    out.push(flag);
    let text = value.text.trim();
    let word = |t: &str| Word {
        text: t.to_string(),
        span: value.span,
    };
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        out.extend(inner.split_whitespace().map(word));
    } else {
        out.push(word(&value.text));
    }
}

fn nemo_word(key: Word, value: &Scalar, out: &mut Vec<Word>) {
    if value.is_empty() {
        return;
    }
    if value.text == "true" {
        out.push(key);
        return;
    }
    out.push(Word {
        text: format!("{}={}", key.text, value.text),
        span: key.span,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::types::{ScalarKind, Span};

    fn args(entries: &[(&str, &str, ScalarKind)]) -> ModelArgs {
        ModelArgs {
            key: "MODEL_ARGS".into(),
            entries: entries
                .iter()
                .map(|(k, v, kind)| {
                    (
                        k.to_string(),
                        Scalar {
                            text: v.to_string(),
                            kind: *kind,
                            span: None,
                        },
                    )
                })
                .collect(),
            key_spans: vec![None; entries.len()],
        }
    }

    #[test]
    fn megatron_rules() {
        use ScalarKind::*;
        let m = args(&[
            ("--bf16", "true", Bool(true)),
            ("--no-x", "false", Bool(false)),
            ("--empty", "", Null),
            ("--lr", "1e-8", Float),
            ("--split", "949,50,1", Str),
            ("--modules", "[a b  c]", Str),
            ("--freq", "([0]*3+[1]*11)", Str),
            ("--pattern", "M-M|M-M", Str),
            ("--desc", "two words", Str),
            ("--cap", "True", Bool(true)),
        ]);
        assert_eq!(
            m.argv_strings(),
            [
                "--bf16",
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
                "True"
            ]
        );
    }

    #[test]
    fn nemo_rules() {
        use ScalarKind::*;
        let m = args(&[
            ("trainer.max_steps", "50", Int),
            ("trainer.strategy.sequence_parallel", "True", Bool(true)),
            ("model.flag", "true", Bool(true)),
            ("log.dir", "", Null),
            ("model.name", "a b", Str),
        ]);
        assert_eq!(
            m.argv_strings(),
            [
                "trainer.max_steps=50",
                "trainer.strategy.sequence_parallel=True",
                "model.flag",
                "model.name=a b"
            ]
        );
    }

    #[test]
    fn words_keep_spans() {
        let mut m = args(&[("--lr", "0.1", ScalarKind::Float)]);
        m.key_spans = vec![Some(Span { line: 3, column: 3 })];
        m.entries[0].1.span = Some(Span { line: 3, column: 9 });
        let spans: Vec<_> = m.argv().into_iter().map(|w| w.span).collect();
        assert_eq!(
            spans,
            [
                Some(Span { line: 3, column: 3 }),
                Some(Span { line: 3, column: 9 })
            ]
        );
    }
}
