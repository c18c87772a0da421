//! Stage "case" (recipes): what a recipe's `script` says about the job — Python's
//! `str.format` over the recipe's values (as Megatron's `generate_local_jobs.py` fills it), then
//! the `ARGUMENTS=( "KEY=VALUE" ... )` array the script hands to `run_ci_test.sh`, and an
//! exported `GPUS_PER_NODE`.

use serde_json::Value;

/// The values `{name}` fields are filled from, in the recipe's spec order.
pub(crate) type Fields = serde_json::Map<String, Value>;

/// Which test runner a recipe's script calls.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum Runner {
    /// `tests/functional_tests/shell_test_utils/run_ci_test.sh`: a functional test case.
    FunctionalTest,
    /// Anything else (unit tests, performance tests, an inline command): not a case goldgate runs.
    Other(String),
}

/// What a recipe row's formatted script says.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ScriptFacts {
    /// The runner the script calls.
    pub runner: Runner,
    /// `KEY=VALUE` words of the `ARGUMENTS` array, quotes stripped as `run_ci_test.sh` strips
    /// them (values are not expanded).
    pub arguments: Vec<(String, String)>,
    /// `GPUS_PER_NODE` when the script sets it (`export GPUS_PER_NODE=4`).
    pub gpus_per_node: Option<u32>,
}

impl ScriptFacts {
    /// The value of argument `key`, if the script passes it.
    pub fn argument(&self, key: &str) -> Option<&str> {
        self.arguments
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the facts of a formatted script.
pub(crate) fn facts(script: &str) -> ScriptFacts {
    ScriptFacts {
        runner: runner(script),
        arguments: arguments(script),
        gpus_per_node: gpus_per_node(script),
    }
}

fn runner(script: &str) -> Runner {
    if script.contains("functional_tests/shell_test_utils/run_ci_test.sh") {
        return Runner::FunctionalTest;
    }
    let what = if script.contains("run_perf_test.sh") || script.contains("perf_breakdown.sh") {
        "a performance test script"
    } else if script.contains("unit_tests/run_ci_test.sh") {
        "the unit-test runner"
    } else {
        "its own commands"
    };
    Runner::Other(what.to_owned())
}

/// `export GPUS_PER_NODE=N` or `GPUS_PER_NODE=N bash ...` at the start of a line.
fn gpus_per_node(script: &str) -> Option<u32> {
    script.lines().find_map(|line| {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let rest = line.strip_prefix("GPUS_PER_NODE=")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// The words of the first `ARGUMENTS=(` ... `)` block, one double-quoted word per line.
fn arguments(script: &str) -> Vec<(String, String)> {
    let mut lines = script.lines().skip_while(|l| l.trim() != "ARGUMENTS=(");
    if lines.next().is_none() {
        return Vec::new();
    }
    lines
        .take_while(|l| l.trim() != ")")
        .filter_map(|l| double_quoted(l.trim()))
        .filter_map(|word| {
            let (key, value) = word.split_once('=')?;
            Some((key.to_owned(), strip_quotes(value).to_owned()))
        })
        .collect()
}

/// The content of one bash double-quoted word (`"A=\"b c\""` → `A="b c"`); `None` for a
/// line that is not one.
fn double_quoted(line: &str) -> Option<String> {
    let mut chars = line.strip_prefix('"')?.chars();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next() {
                Some(e @ ('"' | '\\' | '$' | '`')) => out.push(e),
                Some(e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => return None,
            },
            c => out.push(c),
        }
    }
    None
}

/// `run_ci_test.sh` removes one `"` from each end, then one `'` from each end.
fn strip_quotes(value: &str) -> &str {
    let v = value.strip_suffix('"').unwrap_or(value);
    let v = v.strip_prefix('"').unwrap_or(v);
    let v = v.strip_suffix('\'').unwrap_or(v);
    v.strip_prefix('\'').unwrap_or(v)
}

/// Python's `template.format(**fields)`: `{name}` → `str(fields[name])`, `{{`/`}}` → braces.
/// Conversions, format specs and attribute access are not used by any recipe and are errors.
pub(crate) fn py_format(template: &str, fields: &Fields) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => return Err("single '}' encountered in format string".to_owned()),
            '{' => {
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(format!("unsupported format field `{{{name}}}`"));
                }
                let value = fields
                    .get(&name)
                    .ok_or_else(|| format!("no value for `{{{name}}}`"))?;
                out.push_str(&py_str(value));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Python's `str()` of a YAML value as PyYAML loads it.
pub(crate) fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.contains('\'') && !s.contains('"') => format!("\"{s}\""),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("'{k}': {}", py_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn format_fills_fields_and_unescapes_braces() {
        let f = fields(json!({"gpus": 4, "test_case": "t", "flag": true, "list": ["a", 1]}));
        assert_eq!(
            py_format("x={gpus} ${{HOME}} {test_case}/{flag} {list}", &f).unwrap(),
            "x=4 ${HOME} t/True ['a', 1]"
        );
        assert_eq!(
            py_format("{nope}", &f).unwrap_err(),
            "no value for `{nope}`"
        );
        assert!(py_format("a } b", &f).is_err());
        assert!(py_format("{gpus:>3}", &f).is_err());
    }

    #[test]
    fn arguments_are_read_as_run_ci_test_reads_them() {
        let script = r#"cd /opt/megatron-lm
export GPUS_PER_NODE=4
ARGUMENTS=(
    "DATA_PATH=/mnt/artifacts"
    "TRAINING_SCRIPT_PATH=\"nemo llm pretrain -y --factory llama3_8b\""
    "DATA_PATH='-'"
    "ENABLE_LIGHTWEIGHT_MODE=${ENABLE_LIGHTWEIGHT_MODE:-}"

)

bash ./tests/functional_tests/shell_test_utils/run_ci_test.sh ${ARGUMENTS[@]}"#;
        let f = facts(script);
        assert_eq!(f.runner, Runner::FunctionalTest);
        assert_eq!(f.gpus_per_node, Some(4));
        assert_eq!(
            f.argument("TRAINING_SCRIPT_PATH"),
            Some("nemo llm pretrain -y --factory llama3_8b")
        );
        assert_eq!(f.argument("DATA_PATH"), Some("-"), "the last one wins");
        assert_eq!(
            f.argument("ENABLE_LIGHTWEIGHT_MODE"),
            Some("${ENABLE_LIGHTWEIGHT_MODE:-}")
        );
    }

    #[test]
    fn other_runners_are_named() {
        let perf = facts(
            "GPUS_PER_NODE=8 bash ./tests/performance_tests/shell_test_utils/run_perf_test.sh",
        );
        assert_eq!(
            perf.runner,
            Runner::Other("a performance test script".into())
        );
        assert_eq!(perf.gpus_per_node, Some(8));
        assert!(perf.arguments.is_empty());
    }
}
