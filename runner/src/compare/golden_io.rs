//! Stage "compare": reading, finding and writing golden files as the compare stage needs them.
//!
//! This is a deliberately small adapter over Megatron's golden JSON (megatron-format.md §3):
//! the `golden` module (case stage) owns the full reader and Megatron's byte-exact writer, and
//! these functions delegate to it once it is available; until then they read every shape the
//! comparison needs (object or legacy list `values`, `"nan"` strings, extra top-level keys
//! ignored) and write 4-space-indented JSON with values rounded to 5 decimals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::judge::Series;

/// Why a golden file could not be read. Messages are completed by the caller with the path.
#[derive(Debug, PartialEq)]
pub enum GoldenProblem {
    /// 0 bytes.
    Empty,
    /// Not JSON.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but no metric series in it (e.g. an inference golden keyed by request id).
    NoSeries,
    /// A series with a value that is neither a number nor a `"nan"`-like string.
    BadValue { metric: String, message: String },
}

impl std::fmt::Display for GoldenProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GoldenProblem::Empty => write!(f, "the file is empty"),
            GoldenProblem::Syntax {
                line,
                column,
                message,
            } => {
                write!(f, "line {line}, column {column}: {message}")
            }
            GoldenProblem::NoSeries => write!(
                f,
                "no metric series (`{{\"metric\": {{\"values\": ...}}}}`) in the file; inference goldens are not compared"
            ),
            GoldenProblem::BadValue { metric, message } => {
                write!(f, "metric `{metric}`: {message}")
            }
        }
    }
}

/// Metric name → per-step values, from the text of a golden file.
pub fn parse_golden(text: &str) -> Result<BTreeMap<String, Series>, GoldenProblem> {
    if text.trim().is_empty() {
        return Err(GoldenProblem::Empty);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| GoldenProblem::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let mut out = BTreeMap::new();
    let Some(top) = value.as_object() else {
        return Err(GoldenProblem::NoSeries);
    };
    for (metric, entry) in top {
        let Some(values) = entry.get("values") else {
            continue;
        };
        let bad = |message: String| GoldenProblem::BadValue {
            metric: metric.clone(),
            message,
        };
        let series = match values {
            Value::Object(_) => {
                serde_json::from_value::<crate::metrics::StepValues>(values.clone())
                    .map_err(|e| bad(e.to_string()))?
                    .0
            }
            Value::Array(list) => legacy_list(entry, list).map_err(bad)?,
            _ => return Err(bad("`values` is neither an object nor a list".into())),
        };
        out.insert(metric.clone(), series);
    }
    if out.is_empty() {
        return Err(GoldenProblem::NoSeries);
    }
    Ok(out)
}

/// Legacy files store `values` as a list starting at `start_step`, `step_interval` apart.
fn legacy_list(entry: &Value, list: &[Value]) -> Result<Series, String> {
    let start = entry.get("start_step").and_then(Value::as_u64).unwrap_or(1);
    let interval = entry
        .get("step_interval")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let mut out = Series::new();
    for (i, v) in list.iter().enumerate() {
        let x = match v {
            Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            Value::String(s) if s.eq_ignore_ascii_case("nan") => f64::NAN,
            other => return Err(format!("list entry {i} is not a number: {other}")),
        };
        out.insert(start + i as u64 * interval, x);
    }
    Ok(out)
}

/// `golden_values_<env>_<platform>.json`.
pub fn golden_file_name(env: &str, platform: &str) -> String {
    format!("golden_values_{env}_{platform}.json")
}

/// The platform part of a golden file name (`golden_values_dev_dgx_h100.json` → `dgx_h100`,
/// `_2nd` dropped); `None` for names without one (`golden_values_lts.json`).
pub fn platform_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("golden_values_")?.strip_suffix(".json")?;
    let stem = stem.strip_suffix("_2nd").unwrap_or(stem);
    let (_env, platform) = stem.split_once('_')?;
    Some(platform.to_string())
}

/// The golden file for `case` on `platform`: env `dev` before `lts`, goldgate's golden tree
/// (`<golden_root>/<case>/`) before the file beside the case (`<root>/<case>/`, Megatron's layout).
pub fn find_golden(golden_root: &Path, root: &Path, case: &str, platform: &str) -> Option<PathBuf> {
    ["dev", "lts"].iter().find_map(|env| {
        let name = golden_file_name(env, platform);
        [golden_root, root]
            .iter()
            .map(|base| base.join(case).join(&name))
            .find(|p| p.is_file())
    })
}

/// Megatron's JSON style: `{"metric": {"start_step", "end_step", "step_interval", "values"}}`,
/// 4-space indent, values rounded to 5 decimals, NaN as `"nan"`, no trailing newline.
pub fn render_golden(metrics: &BTreeMap<String, Series>) -> String {
    let mut top = serde_json::Map::new();
    for (name, series) in metrics {
        let first = series.keys().next().copied().unwrap_or(0);
        let last = series.keys().next_back().copied().unwrap_or(0);
        let interval = series
            .keys()
            .zip(series.keys().skip(1))
            .map(|(a, b)| b - a)
            .min()
            .unwrap_or(1);
        let values: serde_json::Map<String, Value> = series
            .iter()
            .map(|(s, v)| (s.to_string(), rounded(*v)))
            .collect();
        let mut entry = serde_json::Map::new();
        entry.insert("start_step".into(), first.into());
        entry.insert("end_step".into(), last.into());
        entry.insert("step_interval".into(), interval.into());
        entry.insert("values".into(), Value::Object(values));
        top.insert(name.clone(), Value::Object(entry));
    }
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    // Serializing a Value into a Vec cannot fail.
    let _ = serde::Serialize::serialize(&Value::Object(top), &mut ser);
    String::from_utf8_lossy(&buf).into_owned()
}

fn rounded(v: f64) -> Value {
    let r = super::stats::round5(v);
    serde_json::Number::from_f64(r).map_or_else(|| Value::String("nan".into()), Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_object_list_and_nan_shapes() {
        let g = parse_golden(
            r#"{"lm loss": {"start_step": 1, "end_step": 3, "step_interval": 1,
                "values": {"1": 10.5, "2": "nan", "3": 10.25}},
                "iteration-time": {"start_step": 10, "end_step": 30, "step_interval": 10, "values": [0.3, 0.31, "nan"]},
                "iteration_timing_avg": 0.3}"#,
        )
        .unwrap();
        assert_eq!(g["lm loss"][&1], 10.5);
        assert!(g["lm loss"][&2].is_nan());
        assert_eq!(
            g["iteration-time"].keys().copied().collect::<Vec<_>>(),
            [10, 20, 30]
        );
        assert!(!g.contains_key("iteration_timing_avg"));
    }

    #[test]
    fn problems_are_specific() {
        assert_eq!(parse_golden(""), Err(GoldenProblem::Empty));
        assert!(matches!(
            parse_golden("{\n  \"lm loss\": {"),
            Err(GoldenProblem::Syntax { line: 2, .. })
        ));
        assert_eq!(
            parse_golden(r#"{"1": {"input_prompt": "hi", "generated_tokens": [1, 2]}}"#),
            Err(GoldenProblem::NoSeries)
        );
        let e = parse_golden(r#"{"lm loss": {"values": {"1": "x"}}}"#).unwrap_err();
        assert!(e.to_string().contains("`lm loss`"), "{e}");
    }

    #[test]
    fn platform_from_file_names() {
        for (name, want) in [
            ("golden_values_dev_dgx_h100.json", Some("dgx_h100")),
            (
                "golden_values_lts_dgxa100_dracooci-ord.json",
                Some("dgxa100_dracooci-ord"),
            ),
            ("golden_values_dev_dgx_gb200_2nd.json", Some("dgx_gb200")),
            ("golden_values_lts.json", None),
        ] {
            assert_eq!(platform_of(Path::new(name)).as_deref(), want, "{name}");
        }
    }

    #[test]
    fn render_then_parse_round_trips_at_5_decimals() {
        let mut m = BTreeMap::new();
        m.insert(
            "lm loss".to_string(),
            Series::from([(1, 10.123456), (2, f64::NAN), (3, 9.0)]),
        );
        let text = render_golden(&m);
        assert!(
            text.starts_with("{\n    \"lm loss\": {\n        \"start_step\": 1,"),
            "{text}"
        );
        assert!(!text.ends_with('\n'));
        let back = parse_golden(&text).unwrap();
        assert_eq!(back["lm loss"][&1], 10.12346);
        assert!(back["lm loss"][&2].is_nan());
    }
}
