//! Stage "case" (golden): reading Megatron golden JSON in every shape the corpus holds.
//!
//! Shapes: `{"metric": {"start_step", "end_step", "step_interval", "values": {"1": 10.9,
//! "2": "nan"}}}` with dense or sparse steps; the legacy list form (`"values": [..]`, steps
//! `start_step + i * step_interval`) with a top-level `iteration_timing_avg`; both written
//! indented (`json.dumps(x, indent=4)`) or on one line. Inference goldens (keyed by request
//! id) are recognised and refused with their own error kind. A series whose `values` is a list
//! of lists (Megatron's 2025-01 tree has an `lm loss` like that, which its reader loads as a 2-D
//! array) reads as an unsupported metric: kept for a rewrite, listed in `unsupported`, never
//! compared.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;

use super::error::GoldenError;
use super::raw::{Entry, Item, RawValues, StepKey, TopLevel, kind_of};
use super::types::{GoldenFile, GoldenStyle, Series, Value};
use crate::case::{Span, position};
use crate::fsio::read_limited;

/// Largest golden file goldgate reads: 16 MiB (the corpus' largest is well under 1 MiB). A
/// golden takes about 11 times its size in memory while it is read and judged (measured with
/// `benches/memory.sh`: an 8-million-value list of 40 MB took 600 MiB to check), so the limit is
/// what bounds goldgate's memory on one: under 200 MiB.
pub const MAX_GOLDEN_BYTES: u64 = 16 << 20;

/// Reads and validates one golden file.
pub fn read_golden(path: &Path) -> Result<GoldenFile, GoldenError> {
    let read = |source| GoldenError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match read_limited(path, MAX_GOLDEN_BYTES).map_err(read)? {
        Ok(bytes) => bytes,
        Err(bytes) => {
            let limit = MAX_GOLDEN_BYTES;
            return Err(GoldenError::TooLarge {
                path: path.to_path_buf(),
                bytes,
                limit,
            });
        }
    };
    if bytes.is_empty() {
        return Err(GoldenError::Empty {
            path: path.to_path_buf(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|e| GoldenError::NotUtf8 {
        path: path.to_path_buf(),
        at: position(e.as_bytes(), e.utf8_error().valid_up_to()),
    })?;
    parse_golden(path, &text)
}

/// Parses golden JSON text; `path` is only used in errors.
pub fn parse_golden(path: &Path, text: &str) -> Result<GoldenFile, GoldenError> {
    if text.is_empty() {
        return Err(GoldenError::Empty {
            path: path.to_path_buf(),
        });
    }
    let top: TopLevel = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    let shape = |location: &str, message: String| GoldenError::Shape {
        path: path.to_path_buf(),
        location: location.to_string(),
        message,
    };
    let entries = match top {
        TopLevel::Object(entries) => entries,
        TopLevel::NotObject(kind) => {
            return Err(shape(
                "(top level)",
                format!("expected an object, found {kind}"),
            ));
        }
    };
    // `{}` occurs in the corpus (4 files): a golden with no metrics, not an inference one.
    let any_series = entries
        .iter()
        .any(|(_, e)| matches!(e, Entry::Series { .. }));
    if !entries.is_empty() && !any_series {
        return Err(GoldenError::Inference {
            path: path.to_path_buf(),
        });
    }
    let mut file = GoldenFile {
        style: if text.starts_with("{\n") {
            GoldenStyle::Indented
        } else {
            GoldenStyle::Compact
        },
        trailing_newline: text.ends_with('\n'),
        duplicates: super::dupes::duplicate_keys(text),
        ..GoldenFile::default()
    };
    for (name, entry) in entries {
        match entry {
            Entry::Series {
                fields,
                values: RawValues::List(rows),
            } if nested(&rows) => {
                let (json, shape) = nested_series(fields, rows);
                replace_or_push(&mut file.unsupported, name.clone(), shape);
                replace_or_push(&mut file.extra, name, json);
            }
            Entry::Series { fields, values } => {
                let series =
                    series(&name, &fields, values).map_err(|(loc, msg)| shape(&loc, msg))?;
                replace_or_push(&mut file.metrics, name, series);
            }
            Entry::Other(value) => replace_or_push(&mut file.extra, name, value),
        }
    }
    Ok(file)
}

/// Whether a list of values is a list of lists (and not one list among numbers: an error).
fn nested(rows: &[Item]) -> bool {
    !rows.is_empty() && rows.iter().all(|r| matches!(r, Item::List(_)))
}

/// A list-of-lists series as the JSON it was, and a description of its shape.
fn nested_series(fields: Vec<(String, Json)>, rows: Vec<Item>) -> (Json, String) {
    let rows: Vec<Json> = rows
        .into_iter()
        .filter_map(|r| match r {
            Item::List(items) => Some(Json::Array(items)),
            _ => None,
        })
        .collect();
    let mut widths: Vec<usize> = rows
        .iter()
        .map(|r| r.as_array().map_or(0, Vec::len))
        .collect();
    widths.sort_unstable();
    widths.dedup();
    let values = match widths.as_slice() {
        [one] => format!("{one} values"),
        _ => "different numbers of values".to_string(),
    };
    let shape = format!("a list of lists ({} rows of {values})", rows.len());
    let mut object: serde_json::Map<String, Json> = fields.into_iter().collect();
    object.insert("values".into(), Json::Array(rows));
    (Json::Object(object), shape)
}

/// JSON semantics for a repeated key: the last value wins, at the first position.
fn replace_or_push<T>(list: &mut Vec<(String, T)>, name: String, value: T) {
    match list.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => list.push((name, value)),
    }
}

fn json_error(path: &Path, e: &serde_json::Error) -> GoldenError {
    let full = e.to_string();
    let message = full
        .rfind(" at line ")
        .map_or(full.as_str(), |i| &full[..i])
        .to_string();
    let at = Span {
        line: u32::try_from(e.line()).unwrap_or(u32::MAX),
        column: u32::try_from(e.column().max(1)).unwrap_or(u32::MAX),
    };
    GoldenError::Json {
        path: path.to_path_buf(),
        at,
        message,
    }
}

type ShapeError = (String, String);

const SERIES_KEYS: [&str; 3] = ["start_step", "end_step", "step_interval"];

fn series(name: &str, fields: &[(String, Json)], raw: RawValues) -> Result<Series, ShapeError> {
    let loc = |key: &str| format!("{name:?}.{key}");
    if let Some((key, _)) = fields
        .iter()
        .find(|(k, _)| !SERIES_KEYS.contains(&k.as_str()))
    {
        return Err((loc(key), "unknown key in a metric series".into()));
    }
    let step = |key: &str| -> Result<u64, ShapeError> {
        let (_, v) = fields
            .iter()
            .find(|(k, _)| k == key)
            .ok_or_else(|| (format!("{name:?}"), format!("missing `{key}`")))?;
        v.as_u64().ok_or_else(|| {
            (
                loc(key),
                format!("expected a step number, found {}", kind_of(v)),
            )
        })
    };
    let (start_step, end_step, step_interval) = (
        step("start_step")?,
        step("end_step")?,
        step("step_interval")?,
    );
    if step_interval == 0 {
        // Megatron's steps are `start_step + i * step_interval`: 0 names one step only.
        return Err((loc("step_interval"), "must be at least 1, found 0".into()));
    }
    let (values, list_form) = series_values(name, raw, start_step, step_interval)?;
    Ok(Series {
        start_step,
        end_step,
        step_interval,
        values,
        list_form,
    })
}

/// A series' values by step, and whether the file wrote them as a list (steps
/// `start_step + i * step_interval`) rather than an object keyed by step.
fn series_values(
    name: &str,
    raw: RawValues,
    start_step: u64,
    step_interval: u64,
) -> Result<(BTreeMap<u64, Value>, bool), ShapeError> {
    // Collected then bulk-built: steps arrive sorted, and `collect` builds a BTreeMap from a
    // sorted run in one pass (inserting one by one was the largest cost of `goldgate check`).
    let mut values = Vec::new();
    let list_form = match raw {
        RawValues::Map(items) => {
            for (key, item) in items {
                let step = match key {
                    StepKey::Step(step) => step,
                    StepKey::Invalid(key) => {
                        let message = "a step key must be a whole number".to_string();
                        return Err((format!("{name:?}.values.{key:?}"), message));
                    }
                };
                let value =
                    read_value(item).map_err(|m| (format!("{name:?}.values.\"{step}\""), m))?;
                values.push((step, value));
            }
            false
        }
        RawValues::List(items) => {
            for (i, item) in items.into_iter().enumerate() {
                let at = || format!("{name:?}.values[{i}]");
                let step = u64::try_from(i)
                    .ok()
                    .and_then(|i| i.checked_mul(step_interval)?.checked_add(start_step))
                    .ok_or_else(|| (at(), "step number overflows".to_string()))?;
                let value = read_value(item).map_err(|m| (at(), m))?;
                values.push((step, value));
            }
            true
        }
        RawValues::Other(found) => {
            return Err((
                format!("{name:?}.values"),
                format!("expected an object or a list, found {found}"),
            ));
        }
    };
    Ok((values.into_iter().collect(), list_form))
}

fn read_value(item: Item) -> Result<Value, String> {
    match item {
        Item::Float(x) => Ok(Value::Float(x)),
        Item::Int(i) => Ok(Value::Int(i)),
        Item::Nan => Ok(Value::Nan),
        Item::Str(s) => Err(format!(
            "expected a number or \"nan\", found the string {s:?}"
        )),
        Item::List(_) => Err("expected a number or \"nan\", found a list".to_string()),
        Item::Other(kind) => Err(format!("expected a number or \"nan\", found {kind}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GoldenFile, GoldenError> {
        parse_golden(Path::new("g.json"), text)
    }

    #[test]
    fn reads_sparse_steps_and_nan() {
        let g = parse(r#"{"lm loss": {"start_step": 1, "end_step": 10, "step_interval": 5, "values": {"1": 10.9, "5": "nan", "10": 7}}}"#).unwrap();
        let s = g.metric("lm loss").unwrap();
        assert_eq!((s.start_step, s.end_step, s.step_interval), (1, 10, 5));
        let values: Vec<_> = s.values.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(
            values,
            [
                (1, Value::Float(10.9)),
                (5, Value::Nan),
                (10, Value::Int(7))
            ]
        );
        assert_eq!(g.style, GoldenStyle::Compact);
    }

    #[test]
    fn reads_the_legacy_list_form_and_keeps_extras() {
        let g = parse(r#"{"lm loss": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [1.5, 2.5, 3.5]}, "iteration_timing_avg": 0.11905411764705882}"#).unwrap();
        let s = g.metric("lm loss").unwrap();
        assert!(s.list_form);
        assert_eq!(s.values.keys().copied().collect::<Vec<_>>(), [0, 5, 10]);
        assert_eq!(g.extra[0].0, "iteration_timing_avg");
    }

    #[test]
    fn a_list_of_lists_is_an_unsupported_metric_kept_for_a_rewrite() {
        let text = r#"{"lm loss": {"start_step": 0, "end_step": 4, "step_interval": 2, "values": [[10.1, 10.0], [9.9, 9.8], [9.7, 9.6]]}, "num-zeros": {"start_step": 0, "end_step": 4, "step_interval": 2, "values": [1, 2, 3]}}"#;
        let g = parse(text).unwrap();
        assert_eq!(
            g.unsupported,
            [(
                "lm loss".to_owned(),
                "a list of lists (3 rows of 2 values)".to_owned()
            )]
        );
        assert!(g.metric("lm loss").is_none());
        assert_eq!(g.metric("num-zeros").unwrap().values.len(), 3);
        assert_eq!(g.extra[0].1["values"][2][1], 9.6);
        let ragged = parse(r#"{"lm loss": {"start_step": 0, "end_step": 1, "step_interval": 1, "values": [[1.0], [2.0, 3.0]]}}"#).unwrap();
        assert_eq!(
            ragged.unsupported[0].1,
            "a list of lists (2 rows of different numbers of values)"
        );
        // A list among numbers is still a malformed file.
        let mixed = parse(r#"{"lm loss": {"start_step": 0, "end_step": 1, "step_interval": 1, "values": [1.0, [2.0]]}}"#).unwrap_err();
        assert!(mixed.to_string().contains("found a list"), "{mixed}");
    }

    #[test]
    fn repeated_metric_keeps_first_position_and_last_value() {
        let g = parse(r#"{"a": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": 1.0}}, "b": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {}}, "a": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": 2.0}}}"#).unwrap();
        let names: Vec<_> = g.metrics.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            g.metric("a").unwrap().values.get(&1),
            Some(&Value::Float(2.0))
        );
    }

    #[test]
    fn repeated_step_takes_the_last_value() {
        let g = parse(r#"{"a": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"2": 5.0, "1": 1.0, "2": 2.0}}}"#).unwrap();
        let values: Vec<_> = g
            .metric("a")
            .unwrap()
            .values
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(values, [(1, Value::Float(1.0)), (2, Value::Float(2.0))]);
    }

    #[test]
    fn large_values_parse_exactly() {
        // Found by the write/read property test: best-effort float parsing was 1 ULP off
        // here, which changes the 5-decimal text; serde_json's `float_roundtrip` fixes it.
        let g = parse(r#"{"a": {"start_step": 0, "end_step": 0, "step_interval": 1, "values": {"0": -920482431760.6709}}}"#).unwrap();
        assert_eq!(
            g.metric("a").unwrap().values.get(&0),
            Some(&Value::Float(-920482431760.6709))
        );
    }

    #[test]
    fn empty_object_is_a_golden_without_metrics() {
        let g = parse("{}").unwrap();
        assert!(g.metrics.is_empty() && g.extra.is_empty());
    }

    #[test]
    fn inference_goldens_are_their_own_kind() {
        let e = parse(r#"{"0": {"input_prompt": "hi", "generated_text": "x"}}"#).unwrap_err();
        assert!(e.is_unsupported(), "{e}");
        assert_eq!(
            e.to_string(),
            "g.json: unsupported: inference golden (keyed by request id, not a metric series)"
        );
    }

    #[test]
    fn errors_name_the_place() {
        let cases = [
            ("", "g.json: empty golden file (0 bytes)"),
            (
                "{\n  \"a\": [1,\n",
                "g.json:3:1: invalid JSON: EOF while parsing a value",
            ),
            (
                "[1]",
                "g.json: (top level): expected an object, found a list",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"x": 1.0}}}"#,
                "g.json: \"m\".values.\"x\": a step key must be a whole number",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": "inf"}}}"#,
                "g.json: \"m\".values.\"1\": expected a number or \"nan\", found the string \"inf\"",
            ),
            (
                r#"{"m": {"start_step": -1, "end_step": 1, "step_interval": 1, "values": {}}}"#,
                "g.json: \"m\".start_step: expected a step number, found a number",
            ),
            (
                r#"{"m": {"end_step": 1, "step_interval": 1, "values": {}}}"#,
                "g.json: \"m\": missing `start_step`",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": [1, [1]]}}"#,
                "g.json: \"m\".values[1]: expected a number or \"nan\", found a list",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": null}}}"#,
                "g.json: \"m\".values.\"1\": expected a number or \"nan\", found null",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {}, "x": 1}}"#,
                "g.json: \"m\".x: unknown key in a metric series",
            ),
            (
                r#"{"m": {"start_step": 18446744073709551615, "end_step": 1, "step_interval": 2, "values": [1.0, 2.0]}}"#,
                "g.json: \"m\".values[1]: step number overflows",
            ),
            (
                "\"text\"",
                "g.json: (top level): expected an object, found a string",
            ),
            (
                r#"{"m": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": 3}}"#,
                "g.json: \"m\".values: expected an object or a list, found a number",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), message, "{text}");
        }
    }
}
