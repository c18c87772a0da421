//! Stage "case" (golden): the in-memory form of a Megatron `golden_values_*.json` file.

use std::collections::BTreeMap;

/// One recorded value of a metric at a step.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Value {
    /// A JSON number written with a fraction or exponent (`10.93341`, `1559.0`).
    Float(f64),
    /// A JSON integer (`1559`); kept apart so a rewrite does not add `.0`.
    Int(i64),
    /// The string `"nan"`: Megatron's placeholder for a step it did not observe.
    Nan,
}

impl Value {
    /// The value as a float; `"nan"` is `f64::NAN`.
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Float(x) => x,
            #[allow(clippy::cast_precision_loss)] // metric values are far below 2^53
            Value::Int(i) => i as f64,
            Value::Nan => f64::NAN,
        }
    }
}

/// One metric's series: `{"start_step", "end_step", "step_interval", "values"}`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Series {
    /// First step of the recorded range.
    pub start_step: u64,
    /// Last step of the recorded range.
    pub end_step: u64,
    /// Step spacing of the recorded range.
    pub step_interval: u64,
    /// Step → value. Newer files hold only observed steps; older ones fill gaps with `"nan"`.
    pub values: BTreeMap<u64, Value>,
    /// The legacy shape: `values` was a list (step = start_step + i * step_interval).
    pub list_form: bool,
}

/// How the file was laid out, so a read-then-write gives the same bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum GoldenStyle {
    /// `json.dumps(x, indent=4)`: what Megatron writes today.
    #[default]
    Indented,
    /// `json.dumps(x)` on one line: older files.
    Compact,
}

/// A Megatron training golden file.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GoldenFile {
    /// Metric name → series, in file order.
    pub metrics: Vec<(String, Series)>,
    /// Other top-level keys (legacy `iteration_timing_avg`, and series of a shape goldgate cannot
    /// compare), kept as read, written after the metrics.
    pub extra: Vec<(String, serde_json::Value)>,
    /// Metrics whose series has a shape goldgate cannot compare (kept in `extra`): name → what
    /// the shape is, e.g. `a list of lists (3 rows of 2 values)`.
    pub unsupported: Vec<(String, String)>,
    /// Layout to write back.
    pub style: GoldenStyle,
    /// Whether the file ended with a newline (Megatron's writer adds none).
    pub trailing_newline: bool,
    /// Keys the file holds twice (the last value is the one kept), for `check`'s and
    /// `compare`'s warnings; never written.
    #[serde(skip)]
    pub duplicates: Vec<super::dupes::DuplicateKey>,
}

impl GoldenFile {
    /// The series of one metric.
    pub fn metric(&self, name: &str) -> Option<&Series> {
        self.metrics.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}
