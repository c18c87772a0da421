//! Stage "case" (golden): writing golden JSON byte for byte as Megatron's Python does.
//!
//! Megatron writes `json.dumps(golden, indent=4)` with values rounded to 5 decimals
//! (`round(x, 5)`) and no trailing newline. So: 4-space indent, `", "`/`": "` separators in
//! the one-line style, non-ASCII escaped as `\uXXXX`, and floats as Python's `repr` (shortest
//! round-trip digits; `10.0` keeps its `.0`; exponent form `1e-05`, `1.23e+16` outside
//! `1e-4 <= |x| < 1e16`). Extra top-level keys are written unrounded, as read.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value as Json;

use super::error::GoldenError;
use super::types::{GoldenFile, GoldenStyle, Series, Value};

/// Renders a golden file in Megatron's byte style (the file's own style for round-trips).
pub fn render_golden(file: &GoldenFile) -> String {
    let mut top: Vec<(String, Json)> = Vec::with_capacity(file.metrics.len() + file.extra.len());
    for (name, series) in &file.metrics {
        top.push((name.clone(), series_json(series)));
    }
    top.extend(file.extra.iter().cloned());
    let mut out = String::new();
    let indent = match file.style {
        GoldenStyle::Indented => Some(0),
        GoldenStyle::Compact => None,
    };
    write_object(&mut out, &top, indent);
    if file.trailing_newline {
        out.push('\n');
    }
    out
}

/// Writes a golden file under `root` (`--golden-root`) atomically, readable by others like any
/// file goldgate writes; a symbolic link on the way (a linked model folder, a linked golden
/// file) is refused, so nothing outside `root` is written.
pub fn write_golden(root: &Path, path: &Path, file: &GoldenFile) -> Result<(), GoldenError> {
    crate::fsio::write_under(root, path, render_golden(file).as_bytes()).map_err(|source| {
        GoldenError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

fn series_json(s: &Series) -> Json {
    let values: Json = if s.list_form {
        Json::Array(s.values.values().map(|v| value_json(*v)).collect())
    } else {
        Json::Object(
            s.values
                .iter()
                .map(|(k, v)| (k.to_string(), value_json(*v)))
                .collect(),
        )
    };
    let mut obj = serde_json::Map::new();
    obj.insert("start_step".into(), s.start_step.into());
    obj.insert("end_step".into(), s.end_step.into());
    obj.insert("step_interval".into(), s.step_interval.into());
    obj.insert("values".into(), values);
    Json::Object(obj)
}

fn value_json(v: Value) -> Json {
    match v {
        Value::Float(x) => serde_json::Number::from_f64(round5(x)).map_or(Json::Null, Json::Number),
        Value::Int(i) => i.into(),
        Value::Nan => Json::String("nan".into()),
    }
}

/// Python's `round(x, 5)`: correctly rounded to 5 decimals (half to even on the exact value).
pub fn round5(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.5}").parse().unwrap_or(x)
}

fn write_object(out: &mut String, entries: &[(String, Json)], indent: Option<usize>) {
    if entries.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (key, value)) in entries.iter().enumerate() {
        separator(out, i, indent.map(|n| n + 1));
        write_string(out, key);
        out.push_str(": ");
        write_value(out, value, indent.map(|n| n + 1));
    }
    close(out, indent, '}');
}

fn write_value(out: &mut String, value: &Json, indent: Option<usize>) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.is_f64()) {
            (Some(i), _, false) => {
                let _ = write!(out, "{i}");
            }
            (_, Some(u), false) => {
                let _ = write!(out, "{u}");
            }
            _ => out.push_str(&py_float_repr(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => write_string(out, s),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, i, indent.map(|n| n + 1));
                write_value(out, item, indent.map(|n| n + 1));
            }
            close(out, indent, ']');
        }
        Json::Object(map) => {
            let entries: Vec<(String, Json)> =
                map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            write_object(out, &entries, indent);
        }
    }
}

/// Before item `i`: `,` between items, then a newline and indent (indented) or a space (compact).
fn separator(out: &mut String, i: usize, indent: Option<usize>) {
    if i > 0 {
        out.push(',');
    }
    match indent {
        Some(level) => {
            out.push('\n');
            out.push_str(&"    ".repeat(level));
        }
        None if i > 0 => out.push(' '),
        None => {}
    }
}

fn close(out: &mut String, indent: Option<usize>, bracket: char) {
    if let Some(level) = indent {
        out.push('\n');
        out.push_str(&"    ".repeat(level));
    }
    out.push(bracket);
}

/// A JSON string as Python's `json.dumps` writes it (`ensure_ascii=True`).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)` as `json.dumps` prints it.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digit count, like Python's repr; but where two
    // such strings are equally close (an exact tie, e.g. ...959.25 → .2 or .3), Python takes
    // the even one. Re-format with that many digits, correctly rounded (ties to even).
    let shortest = format!("{x:e}");
    let digit_count = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    let sci = format!("{x:.prec$e}", prec = digit_count.saturating_sub(1));
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        format!("{sign}{}", fixed(&digits, exp))
    } else {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{dot}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// Digits `d1d2d3...` with decimal exponent `exp` (value d1.d2d3... × 10^exp) in fixed notation.
fn fixed(digits: &str, exp: i32) -> String {
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("0.{zeros}{digits}");
    }
    let int_len = usize::try_from(exp).unwrap_or(0) + 1;
    if digits.len() <= int_len {
        format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
    } else {
        format!("{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    #[allow(clippy::excessive_precision)] // the tie cases are exact binary values on purpose
    fn floats_print_like_python_repr() {
        let cases = [
            (10.0, "10.0"),
            (10.93341, "10.93341"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1559.0, "1559.0"),
            (12300000000.0, "12300000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (0.0, "0.0"),
            (123456789.125, "123456789.125"),
            (0.11905411764705882, "0.11905411764705882"),
            // Exact ties between two shortest strings: Python takes the even last digit.
            (957205523196959.25, "957205523196959.2"),
            (19352384206741.0625, "19352384206741.062"),
            (-1987057412007801.25, "-1987057412007801.2"),
        ];
        for (x, text) in cases {
            assert_eq!(py_float_repr(x), text, "{x}");
        }
    }

    #[test]
    fn round5_matches_python_round() {
        // Python: round(2.675, 5) == 2.675; round(0.123456, 5) == 0.12346;
        // round(1.000005, 5) == 1.00001 (1.000005 is stored slightly above).
        assert_eq!(round5(2.675), 2.675);
        assert_eq!(round5(0.123456), 0.12346);
        assert_eq!(round5(1.000005), 1.00001);
        assert_eq!(round5(11.020370000000001), 11.02037);
    }

    fn sample(style: GoldenStyle) -> GoldenFile {
        let values = BTreeMap::from([
            (1, Value::Float(10.0)),
            (2, Value::Nan),
            (3, Value::Float(0.1234567)),
        ]);
        GoldenFile {
            metrics: vec![(
                "lm loss".into(),
                Series {
                    start_step: 1,
                    end_step: 3,
                    step_interval: 1,
                    values,
                    list_form: false,
                },
            )],
            extra: vec![],
            unsupported: vec![],
            style,
            trailing_newline: false,
            duplicates: vec![],
        }
    }

    #[test]
    fn indented_style_is_json_dumps_indent_4() {
        let expected = "{\n    \"lm loss\": {\n        \"start_step\": 1,\n        \"end_step\": 3,\n        \"step_interval\": 1,\n        \"values\": {\n            \"1\": 10.0,\n            \"2\": \"nan\",\n            \"3\": 0.12346\n        }\n    }\n}";
        assert_eq!(render_golden(&sample(GoldenStyle::Indented)), expected);
    }

    #[test]
    fn compact_style_is_json_dumps_default() {
        let expected = "{\"lm loss\": {\"start_step\": 1, \"end_step\": 3, \"step_interval\": 1, \"values\": {\"1\": 10.0, \"2\": \"nan\", \"3\": 0.12346}}}";
        assert_eq!(render_golden(&sample(GoldenStyle::Compact)), expected);
    }

    proptest::proptest! {
        /// Whatever goldgate writes, it reads back to the same series (values rounded to 5
        /// decimals), in both styles, and a second write gives the same bytes.
        #[test]
        fn write_then_read_round_trips(
            values in proptest::collection::btree_map(0u64..100_000, proptest::option::of(-1e12f64..1e12), 0..40),
            compact in proptest::bool::ANY,
            list_form in proptest::bool::ANY,
        ) {
            let values: BTreeMap<u64, Value> = values
                .into_iter()
                .map(|(k, v)| (k, v.map_or(Value::Nan, |x| Value::Float(round5(x)))))
                .collect();
            // The list form can only hold consecutive steps from 0 with interval 1.
            let values = if list_form { values.into_values().enumerate().map(|(i, v)| (i as u64, v)).collect() } else { values };
            let series = Series { start_step: 0, end_step: 99_999, step_interval: 1, values, list_form };
            let style = if compact { GoldenStyle::Compact } else { GoldenStyle::Indented };
            let file = GoldenFile { metrics: vec![("lm loss".into(), series)], extra: vec![], unsupported: vec![], style, trailing_newline: false, duplicates: vec![] };
            let text = render_golden(&file);
            let back = crate::golden::parse_golden(Path::new("p.json"), &text).unwrap();
            proptest::prop_assert_eq!(&back.metrics, &file.metrics);
            proptest::prop_assert_eq!(render_golden(&back), text);
        }
    }

    #[test]
    fn strings_are_escaped_like_python() {
        let mut out = String::new();
        write_string(&mut out, "a\"b\\c\nd\u{1}é😀");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001\\u00e9\\ud83d\\ude00\"");
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/golden_values_dev_dgx_h100.json");
        write_golden(tmp.path(), &path, &sample(GoldenStyle::Indented)).unwrap();
        write_golden(tmp.path(), &path, &sample(GoldenStyle::Compact)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("{\"lm loss\""));
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }
}
