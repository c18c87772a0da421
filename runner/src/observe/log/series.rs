//! Stage "observe", log parser: per-step metric series keyed by Megatron's golden names,
//! filled from iteration lines and memory reports without allocating per line.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes per MB in Megatron's memory report (`torch.cuda.memory_allocated() / 1024 / 1024`),
/// used to turn the report back into the `mem-*-bytes` golden metrics.
pub(crate) const BYTES_PER_MB: f64 = 1024.0 * 1024.0;

/// An iteration-line field's golden key and the divisor that turns its printed unit into the
/// golden one (ms → s).
fn golden_key(raw: &str) -> (String, f64) {
    let (key, divisor) = match raw {
        "elapsed time per iteration (ms)" => ("iteration-time", 1000.0),
        "num zeros" => ("num-zeros", 1.0),
        "learning rate" => ("learning-rate", 1.0),
        "grad norm" => ("grad-norm", 1.0),
        "throughput per GPU (TFLOP/s/GPU)" => ("throughput", 1.0),
        "loss scale" => ("loss-scale", 1.0),
        "params norm" => ("params-norm", 1.0),
        "global batch size" => ("batch-size", 1.0),
        "consumed samples" => ("consumed-samples", 1.0),
        "number of skipped iterations" => ("skipped-iterations", 1.0),
        "number of nan iterations" => ("nan-iterations", 1.0),
        // Losses (`lm loss`, `mtp_1 loss`, `total loss`, MoE losses) and unknown fields keep
        // the name they are printed with, which is also their golden name.
        other => (other, 1.0),
    };
    (key.to_owned(), divisor)
}

/// One metric: its printed name, golden key, unit divisor and (step, value) points in order.
#[derive(Debug)]
struct Series {
    raw: Box<[u8]>,
    key: String,
    divisor: f64,
    points: Vec<(u64, f64)>,
}

/// All per-step series of a log. Iteration lines print their fields in the same order every
/// time, so the series for field position `i` is remembered and checked with one comparison.
#[derive(Debug, Default)]
pub(crate) struct SeriesSet {
    series: Vec<Series>,
    by_position: Vec<usize>,
}

impl SeriesSet {
    /// Records field number `pos` of the iteration line for `step`.
    pub(crate) fn push_field(&mut self, pos: usize, raw: &[u8], step: u64, value: f64) {
        let idx = match self.by_position.get(pos) {
            Some(&i) if *self.series[i].raw == *raw => i,
            _ => {
                let i = self.find_or_add(raw);
                if pos < self.by_position.len() {
                    self.by_position[pos] = i;
                } else if pos == self.by_position.len() {
                    self.by_position.push(i);
                }
                i
            }
        };
        let s = &mut self.series[idx];
        s.points.push((step, value / s.divisor));
    }

    /// Records a value under a golden key directly (memory metrics).
    pub(crate) fn push_key(&mut self, key: &str, step: u64, value: f64) {
        let idx = match self
            .series
            .iter()
            .position(|s| s.key == key && s.raw.is_empty())
        {
            Some(i) => i,
            None => {
                let raw = Box::default();
                self.series.push(Series {
                    raw,
                    key: key.to_owned(),
                    divisor: 1.0,
                    points: Vec::new(),
                });
                self.series.len() - 1
            }
        };
        self.series[idx].points.push((step, value));
    }

    fn find_or_add(&mut self, raw: &[u8]) -> usize {
        if let Some(i) = self
            .series
            .iter()
            .position(|s| !s.raw.is_empty() && *s.raw == *raw)
        {
            return i;
        }
        let (key, divisor) = golden_key(&String::from_utf8_lossy(raw));
        self.series.push(Series {
            raw: raw.into(),
            key,
            divisor,
            points: Vec::new(),
        });
        self.series.len() - 1
    }

    /// The series by golden key. A step printed twice keeps the later value; for memory
    /// keys (several ranks report the same step) the largest.
    pub(crate) fn finish(self) -> BTreeMap<String, Steps> {
        let mut out: BTreeMap<String, Steps> = BTreeMap::new();
        for s in self.series {
            let max = s.raw.is_empty();
            let points = match out.remove(&s.key) {
                // Two printed names with one golden key (rare): the later series wins.
                Some(prev) => [prev.0, s.points].concat(),
                None => s.points,
            };
            out.insert(s.key, Steps::from_points(points, max));
        }
        out
    }
}

/// One metric's values by step, in step order: a golden file's `values` map. Kept as a
/// sorted vector (building and dropping millions of map nodes would cost more than parsing
/// a long log). Serialized as `{"<step>": value}` with non-finite values as the strings
/// `"nan"`, `"inf"`, `"-inf"` (JSON has no NaN; Megatron's goldens write `"nan"` alike).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Steps(Vec<(u64, f64)>);

impl Steps {
    /// The value at `step`.
    pub fn get(&self, step: u64) -> Option<f64> {
        let i = self.0.binary_search_by_key(&step, |p| p.0).ok()?;
        Some(self.0[i].1)
    }

    /// (step, value) in step order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.0.iter().copied()
    }

    /// Values in step order.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.0.iter().map(|p| p.1)
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No steps.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first (step, value).
    pub fn first(&self) -> Option<(u64, f64)> {
        self.0.first().copied()
    }

    /// The last (step, value).
    pub fn last(&self) -> Option<(u64, f64)> {
        self.0.last().copied()
    }

    fn from_points(points: Vec<(u64, f64)>, max: bool) -> Steps {
        Steps(dedup_steps(points, max))
    }
}

impl FromIterator<(u64, f64)> for Steps {
    /// Points in any order; a step given twice keeps the later value.
    fn from_iter<I: IntoIterator<Item = (u64, f64)>>(iter: I) -> Steps {
        Steps::from_points(iter.into_iter().collect(), false)
    }
}

impl std::ops::Index<u64> for Steps {
    type Output = f64;

    /// The value at `step`; panics when there is none (as `BTreeMap` indexing does).
    fn index(&self, step: u64) -> &f64 {
        match self.0.binary_search_by_key(&step, |p| p.0) {
            Ok(i) => &self.0[i].1,
            Err(_) => panic!("no value for step {step}"),
        }
    }
}

/// A value as JSON: a number, or the text of a non-finite one.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Json {
    Number(f64),
    Text(String),
}

impl Serialize for Steps {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for &(step, v) in &self.0 {
            match v {
                v if v.is_finite() => map.serialize_entry(&step, &v)?,
                v if v.is_nan() => map.serialize_entry(&step, "nan")?,
                v if v > 0.0 => map.serialize_entry(&step, "inf")?,
                _ => map.serialize_entry(&step, "-inf")?,
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Steps {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Steps, D::Error> {
        let raw = BTreeMap::<u64, Json>::deserialize(d)?;
        let value = |j: Json| match j {
            Json::Number(v) => Ok(v),
            Json::Text(t) => match t.as_str() {
                "nan" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(serde::de::Error::custom(format!("not a number: {other:?}"))),
            },
        };
        let points = raw
            .into_iter()
            .map(|(s, j)| Ok((s, value(j)?)))
            .collect::<Result<_, _>>()?;
        Ok(Steps(points))
    }
}

/// Sorts points by step (only when out of order; stable) and keeps one per step: the last
/// printed, or the largest when `max` (several ranks report the same step).
fn dedup_steps(mut points: Vec<(u64, f64)>, max: bool) -> Vec<(u64, f64)> {
    if !points.is_sorted_by_key(|p| p.0) {
        points.sort_by_key(|p| p.0);
    }
    // `dedup_by` passes (later, earlier) and drops the later one: fold it into the earlier.
    points.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            earlier.1 = if max { earlier.1.max(later.1) } else { later.1 };
        }
        same
    });
    points
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_map_to_golden_names_and_units() {
        let mut set = SeriesSet::default();
        for step in 1..=2 {
            set.push_field(0, b"elapsed time per iteration (ms)", step, 321.0);
            set.push_field(1, b"lm loss", step, 2.5 + step as f64);
            set.push_field(2, b"num zeros", step, 7.0);
        }
        set.push_field(1, b"mtp_1 loss", 3, 1.0);
        set.push_field(1, b"lm loss", 2, 99.0);
        set.push_key("mem-allocated-bytes", 2, 1.0);
        set.push_key("mem-allocated-bytes", 2, 3.0);
        let m = set.finish();
        assert_eq!(m["iteration-time"][1], 0.321);
        assert_eq!(m["lm loss"][1], 3.5);
        assert_eq!(
            m["lm loss"][2], 99.0,
            "a step printed again keeps the later value"
        );
        assert_eq!(m["num-zeros"].len(), 2);
        assert_eq!(m["mtp_1 loss"][3], 1.0);
        assert_eq!(m["mem-allocated-bytes"][2], 3.0);
    }
}
