//! Stage "plan": the names placeholders resolve from, and the first placeholder pass.
//!
//! Megatron resolves placeholders in two passes. `_run_training.sh` first runs `envsubst` over
//! the whole `model_config.yaml` with the names set in the environment (the job's folders,
//! `DATA_PATH`, the caller's variables), leaving every other name as written; then it exports
//! the case's ENV_VARS and `eval`s the MODEL_ARGS line, which expands the names those define
//! (`case::model_argv` does that pass). A name nobody sets stays as written in goldgate too
//! (bash would make it empty) and the plan warns about it once.

use std::cell::RefCell;
use std::collections::BTreeMap;

use goldgate_core::case::placeholders;

/// A placeholder that resolved from the caller's environment (repro refers to secrets by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FromCaller {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// Where names are looked up: the plan's layers in order, then the caller's environment
/// (unless the variant unsets the name). Records what came from the caller.
pub(crate) struct Names<'a> {
    pub(crate) layers: Vec<&'a BTreeMap<String, String>>,
    pub(crate) caller: &'a BTreeMap<String, String>,
    pub(crate) unset: &'a [String],
    pub(crate) from_caller: &'a RefCell<Vec<FromCaller>>,
}

impl Names<'_> {
    /// The value of `name`, or `None` when nothing sets it.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        if let Some(v) = self.layers.iter().find_map(|l| l.get(name)) {
            return Some(v.clone());
        }
        if self.unset.iter().any(|u| u == name) {
            return None;
        }
        let value = self.caller.get(name)?.clone();
        let found = FromCaller {
            name: name.to_owned(),
            value: value.clone(),
        };
        let mut seen = self.from_caller.borrow_mut();
        if !seen.contains(&found) {
            seen.push(found);
        }
        Some(value)
    }
}

/// The result of resolving one text.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    pub(crate) text: String,
    /// Names not found anywhere (left as written in `text`).
    pub(crate) missing: Vec<String>,
}

/// `envsubst`: replaces every placeholder of `text` (found by [`goldgate_core::case::placeholders`])
/// whose name `names` knows; the others stay as written and are listed in `missing`.
pub(crate) fn resolve(text: &str, names: &Names<'_>) -> Resolved {
    let mut out = Resolved::default();
    let mut copied = 0;
    for (name, range) in placeholders(text) {
        out.text.push_str(&text[copied..range.start]);
        match names.get(&name) {
            Some(value) => out.text.push_str(&value),
            None => {
                out.text.push_str(&text[range.clone()]);
                out.missing.push(name);
            }
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

    fn with_names<T>(unset: &[String], f: impl FnOnce(&Names<'_>) -> T) -> (T, Vec<FromCaller>) {
        let job = BTreeMap::from([("DATA_PATH".to_owned(), "/data".to_owned())]);
        let caller = BTreeMap::from([
            ("HF_TOKEN".to_owned(), "s3cret".to_owned()),
            ("DATA_PATH".to_owned(), "/caller".to_owned()),
        ]);
        let from_caller = RefCell::new(Vec::new());
        let names = Names {
            layers: vec![&job],
            caller: &caller,
            unset,
            from_caller: &from_caller,
        };
        let out = f(&names);
        (out, from_caller.into_inner())
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
            let (got, _) = with_names(&[], |n| resolve(text, n));
            assert_eq!(got.text, want, "{text}");
            assert!(got.missing.is_empty(), "{text}");
        }
    }

    #[test]
    fn lists_missing_names_and_caller_values() {
        let (got, from_caller) = with_names(&[], |n| {
            resolve("${DATA_BLEND} $TOKENIZER_MODEL ${HF_TOKEN}", n)
        });
        assert_eq!(
            got.text, "${DATA_BLEND} $TOKENIZER_MODEL s3cret",
            "kept as written"
        );
        assert_eq!(got.missing, ["DATA_BLEND", "TOKENIZER_MODEL"]);
        assert_eq!(
            from_caller,
            [FromCaller {
                name: "HF_TOKEN".into(),
                value: "s3cret".into()
            }]
        );
        let unset = ["HF_TOKEN".to_owned()];
        let (got, _) = with_names(&unset, |n| resolve("${HF_TOKEN}", n));
        assert_eq!(
            got.missing,
            ["HF_TOKEN"],
            "a variant's unset hides the caller's value"
        );
    }
}
