//! Stage "plan": resolving `${NAME}` and `$NAME` placeholders in MODEL_ARGS, ENV_VARS and entry words.
//!
//! Megatron runs `envsubst` over the whole `model_config.yaml` and leaves unset names literal, so
//! a typo reaches the training script as `${DATA_PATH}`. goldgate resolves every name from the
//! job's own paths, then the caller's environment, and collects the names it cannot resolve so
//! that one error lists them all with their place.

use std::collections::BTreeMap;

use crate::case::placeholders;

/// Where names are looked up: the job's variables first, then the caller's environment.
pub(crate) struct Lookup<'a> {
    pub(crate) job: &'a BTreeMap<String, String>,
    pub(crate) caller: &'a BTreeMap<String, String>,
}

/// A placeholder that resolved from the caller's environment (repro refers to secrets by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FromCaller {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// The result of resolving one text.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub(crate) text: String,
    /// Names not found anywhere.
    pub(crate) missing: Vec<String>,
    /// Names taken from the caller's environment.
    pub(crate) from_caller: Vec<FromCaller>,
}

/// Replaces every placeholder of `text` (found by [`crate::case::placeholders`], envsubst's
/// rules). Unresolved names stay literal in `text` and are listed in `missing`.
pub(crate) fn resolve(text: &str, lookup: &Lookup<'_>) -> Resolved {
    let mut out = Resolved::default();
    let mut copied = 0;
    for (name, range) in placeholders(text) {
        out.text.push_str(&text[copied..range.start]);
        if let Some(value) = lookup.job.get(&name) {
            out.text.push_str(value);
        } else if let Some(value) = lookup.caller.get(&name) {
            out.text.push_str(value);
            let found = FromCaller {
                name,
                value: value.clone(),
            };
            if !out.from_caller.contains(&found) {
                out.from_caller.push(found);
            }
        } else {
            out.text.push_str(&text[range.clone()]);
            out.missing.push(name);
        }
        copied = range.end;
    }
    out.text.push_str(&text[copied..]);
    out
}

/// Whether `name` is a shell variable name.
pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Resolved {
        let job = BTreeMap::from([("DATA_PATH".to_owned(), "/data".to_owned())]);
        let caller = BTreeMap::from([("HF_TOKEN".to_owned(), "s3cret".to_owned())]);
        resolve(
            text,
            &Lookup {
                job: &job,
                caller: &caller,
            },
        )
    }

    #[test]
    fn resolves_both_spellings_and_keeps_other_dollars() {
        let cases = [
            ("${DATA_PATH}/x", "/data/x"),
            ("$DATA_PATH/x", "/data/x"),
            ("a$DATA_PATH", "a/data"),
            ("cost: $5 and $", "cost: $5 and $"),
            ("${not closed", "${not closed"),
            ("${}", "${}"),
            ("${HF_TOKEN}", "s3cret"),
        ];
        for (text, want) in cases {
            let got = run(text);
            assert_eq!(got.text, want, "{text}");
            assert!(got.missing.is_empty(), "{text}");
        }
    }

    #[test]
    fn job_values_win_over_the_callers() {
        let job = BTreeMap::from([("X".to_owned(), "job".to_owned())]);
        let caller = BTreeMap::from([("X".to_owned(), "caller".to_owned())]);
        assert_eq!(
            resolve(
                "$X",
                &Lookup {
                    job: &job,
                    caller: &caller
                }
            )
            .text,
            "job"
        );
    }

    #[test]
    fn lists_missing_names_and_caller_values() {
        let got = run("${DATA_BLEND} $TOKENIZER_MODEL ${HF_TOKEN}");
        assert_eq!(got.missing, ["DATA_BLEND", "TOKENIZER_MODEL"]);
        assert_eq!(
            got.from_caller,
            [FromCaller {
                name: "HF_TOKEN".into(),
                value: "s3cret".into()
            }]
        );
    }
}
