//! Stage "observe", log parser: per-step metric series keyed by Megatron's golden names,
//! filled from iteration lines and memory reports without allocating per line.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::column::{StepColumn, Values};
use super::event::Fields;
use goldgate_schema::metric_names as names;

/// Bytes per MB in Megatron's memory report (`torch.cuda.memory_allocated() / 1024 / 1024`),
/// used to turn the report back into the `mem-*-bytes` golden metrics.
pub(crate) const BYTES_PER_MB: f64 = 1024.0 * 1024.0;

/// An iteration-line field's golden key and the power of ten that turns its printed unit into
/// the golden one (ms → s: -3), applied in decimal ([`shift10`]).
fn golden_key(raw: &str) -> (String, i32) {
    let (key, exp) = match raw {
        "elapsed time per iteration (ms)" => (names::ITERATION_TIME, -3),
        "num zeros" => (names::NUM_ZEROS, 0),
        "learning rate" => ("learning-rate", 0),
        "grad norm" => ("grad-norm", 0),
        "throughput per GPU (TFLOP/s/GPU)" => ("throughput", 0),
        "loss scale" => ("loss-scale", 0),
        "params norm" => ("params-norm", 0),
        "global batch size" => ("batch-size", 0),
        "consumed samples" => ("consumed-samples", 0),
        "number of skipped iterations" => ("skipped-iterations", 0),
        "number of nan iterations" => ("nan-iterations", 0),
        // Losses (`lm loss`, `mtp_1 loss`, `total loss`, MoE losses) and unknown fields keep
        // the name they are printed with, which is also their golden name.
        other => (other, 0),
    };
    (key.to_owned(), exp)
}

/// One metric while the log is read: its printed name (empty for memory keys), golden key,
/// unit shift and values in the order they were printed.
#[derive(Debug)]
struct Series {
    raw: Box<[u8]>,
    key: String,
    /// Power of ten from the printed unit to the golden one.
    exp: i32,
    values: Values,
    steps: Column,
}

/// Where a series' steps are kept.
#[derive(Debug)]
enum Column {
    /// `values[i]` was printed on iteration line `first + i`: the series has been on every
    /// iteration line since its first, so its steps are the shared [`SeriesSet::rows`]. This
    /// is the common case, and it stores 8 bytes per value instead of 16.
    Rows { first: usize },
    /// One step per value: a series that skipped an iteration line or was printed twice on
    /// one, and every memory key.
    Own(StepColumn),
}

impl Series {
    fn new(raw: Box<[u8]>, key: String, exp: i32, steps: Column) -> Series {
        Series {
            raw,
            key,
            exp,
            values: Values::default(),
            steps,
        }
    }

    /// Appends the value printed for `step` on iteration line `row`.
    #[inline]
    fn push_row(&mut self, rows: &StepColumn, row: usize, step: u64, value: f64) {
        match &mut self.steps {
            Column::Rows { first } if *first + self.values.len() == row => {}
            Column::Rows { first } => {
                let mut own: StepColumn = rows.iter_from(*first).take(self.values.len()).collect();
                own.push(step);
                self.steps = Column::Own(own);
            }
            Column::Own(steps) => steps.push(step),
        }
        // Most series are kept in the unit they are printed in.
        let value = if self.exp == 0 {
            value
        } else {
            super::scan::shift10(value, self.exp)
        };
        self.values.push(value);
    }

    /// The series by step, sharing `rows` when it can.
    fn finish(self, rows: &Arc<StepColumn>, rows_ordered: bool) -> Steps {
        let max = self.raw.is_empty();
        match self.steps {
            Column::Rows { first } if rows_ordered => Steps {
                steps: Arc::clone(rows),
                start: first,
                values: self.values,
            },
            Column::Rows { first } => {
                let points = rows.iter_from(first).zip(self.values.iter_from(0));
                Steps::from_points(points.collect(), max)
            }
            Column::Own(steps)
                if steps
                    .iter_from(0)
                    .zip(steps.iter_from(1))
                    .all(|(a, b)| a < b) =>
            {
                Steps {
                    steps: Arc::new(steps),
                    start: 0,
                    values: self.values,
                }
            }
            Column::Own(steps) => {
                let points = steps.iter_from(0).zip(self.values.iter_from(0));
                Steps::from_points(points.collect(), max)
            }
        }
    }
}

/// All per-step series of a log. Iteration lines print their fields in the same order every
/// time, so for each field position the set remembers the series and the field's lead (the
/// text before its value), and reads the next line's field at that position with one
/// comparison and a number parse.
#[derive(Debug)]
pub(crate) struct SeriesSet {
    series: Vec<Series>,
    /// The series of `push_key` (no printed name).
    keyed: Vec<usize>,
    layout: Vec<Slot>,
    /// The step of every iteration line, in order.
    rows: StepColumn,
    /// `rows` is strictly increasing (no step printed twice, as after a restart).
    rows_ordered: bool,
}

/// What field position `i` of the last iteration line held.
#[derive(Debug)]
struct Slot {
    series: usize,
    lead: Vec<u8>,
}

impl Default for SeriesSet {
    fn default() -> SeriesSet {
        SeriesSet {
            series: Vec::new(),
            keyed: Vec::new(),
            layout: Vec::new(),
            rows: StepColumn::default(),
            rows_ordered: true,
        }
    }
}

impl SeriesSet {
    /// Records every field of the iteration line for `step`.
    pub(crate) fn push_line(&mut self, step: u64, mut fields: Fields<'_>) {
        let row = self.rows.len();
        self.rows_ordered &= self.rows.last().is_none_or(|last| last < step);
        self.rows.push(step);
        for pos in 0.. {
            let known = self
                .layout
                .get(pos)
                .and_then(|slot| Some((slot.series, fields.next_after(&slot.lead)?)));
            let (idx, value) = match known {
                Some(hit) => hit,
                None => match fields.next_with_lead() {
                    Some((raw, v, lead)) => (self.remember(pos, raw, lead), v),
                    None => break,
                },
            };
            self.series[idx].push_row(&self.rows, row, step, value);
        }
    }

    /// The series named `raw`, remembered with `lead` for field position `pos`.
    fn remember(&mut self, pos: usize, raw: &[u8], lead: &[u8]) -> usize {
        let series = self.find_or_add(raw);
        let slot = Slot {
            series,
            lead: lead.to_vec(),
        };
        if pos < self.layout.len() {
            self.layout[pos] = slot;
        } else if pos == self.layout.len() {
            self.layout.push(slot);
        }
        series
    }

    /// Records a value under a golden key directly (memory metrics).
    pub(crate) fn push_key(&mut self, key: &str, step: u64, value: f64) {
        let keyed = self.keyed.iter().copied();
        let idx = match keyed.clone().find(|&i| self.series[i].key == key) {
            Some(i) => i,
            None => {
                let own = Column::Own(StepColumn::default());
                self.series
                    .push(Series::new(Box::default(), key.to_owned(), 0, own));
                self.keyed.push(self.series.len() - 1);
                self.series.len() - 1
            }
        };
        let s = &mut self.series[idx];
        if let Column::Own(steps) = &mut s.steps {
            steps.push(step);
        }
        s.values.push(value);
    }

    fn find_or_add(&mut self, raw: &[u8]) -> usize {
        if let Some(i) = self
            .series
            .iter()
            .position(|s| !s.raw.is_empty() && *s.raw == *raw)
        {
            return i;
        }
        let (key, exp) = golden_key(&String::from_utf8_lossy(raw));
        let rows = Column::Rows {
            first: self.rows.len() - 1,
        };
        self.series.push(Series::new(raw.into(), key, exp, rows));
        self.series.len() - 1
    }

    /// The series by golden key. A step printed twice keeps the later value; for memory
    /// keys (several ranks report the same step) the largest.
    pub(crate) fn finish(self) -> BTreeMap<String, Steps> {
        let rows = Arc::new(self.rows);
        let mut out: BTreeMap<String, Steps> = BTreeMap::new();
        for s in self.series {
            let max = s.raw.is_empty();
            let key = s.key.clone();
            let steps = s.finish(&rows, self.rows_ordered);
            let steps = match out.remove(&key) {
                // Two printed names with one golden key (rare): the later series wins.
                Some(prev) => Steps::from_points(prev.iter().chain(steps.iter()).collect(), max),
                None => steps,
            };
            out.insert(key, steps);
        }
        out
    }
}

/// One metric's values by step, in step order: a golden file's `values` map. Kept as two
/// columns, not a map (building and dropping millions of map nodes would cost more than
/// parsing a long log); the series of one log's iteration lines share one step column.
/// Serialized as `{"<step>": value}` with non-finite values as the strings `"nan"`, `"inf"`,
/// `"-inf"` (JSON has no NaN; Megatron's goldens write `"nan"` alike).
#[derive(Clone, Default)]
pub struct Steps {
    /// Entries `start..start + values.len()` of `steps` are this series' steps, strictly
    /// increasing.
    steps: Arc<StepColumn>,
    start: usize,
    values: Values,
}

impl Steps {
    /// The value at `step`.
    pub fn get(&self, step: u64) -> Option<f64> {
        self.values.get(self.index_of(step)?).copied()
    }

    /// (step, value) in step order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.steps
            .iter_from(self.start)
            .zip(self.values.iter_from(0))
    }

    /// Values in step order.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter_from(0)
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// No steps.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }

    /// The first (step, value).
    pub fn first(&self) -> Option<(u64, f64)> {
        self.iter().next()
    }

    /// The last (step, value).
    pub fn last(&self) -> Option<(u64, f64)> {
        let i = self.len().checked_sub(1)?;
        Some((self.step(i)?, *self.values.get(i)?))
    }

    /// The step of entry `i`.
    fn step(&self, i: usize) -> Option<u64> {
        self.steps.get(self.start + i)
    }

    /// The entry of `step` (a binary search).
    fn index_of(&self, step: u64) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.step(mid)?.cmp(&step) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    fn from_points(points: Vec<(u64, f64)>, max: bool) -> Steps {
        let points = dedup_steps(points, max);
        Steps {
            steps: Arc::new(points.iter().map(|p| p.0).collect()),
            start: 0,
            values: points.iter().map(|p| p.1).collect(),
        }
    }
}

impl PartialEq for Steps {
    fn eq(&self, other: &Steps) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Steps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let points: Vec<(u64, f64)> = self.iter().collect();
        f.debug_tuple("Steps").field(&points).finish()
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
        match self.index_of(step).and_then(|i| self.values.get(i)) {
            Some(v) => v,
            None => panic!("no value for step {step}"),
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
        let mut map = s.serialize_map(Some(self.len()))?;
        for (step, v) in self.iter() {
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
        Ok(Steps::from_points(points, false))
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

    use crate::log::IterationLine;

    fn line(set: &mut SeriesSet, step: u64, rest: &str) {
        let it = IterationLine {
            iteration: step,
            train_iters: None,
            rest: rest.as_bytes(),
        };
        set.push_line(step, it.fields());
    }

    fn points(s: &Steps) -> Vec<(u64, f64)> {
        s.iter().collect()
    }

    #[test]
    fn fields_map_to_golden_names_and_units() {
        let mut set = SeriesSet::default();
        for step in 1..=2 {
            let loss = 2.5 + step as f64;
            line(
                &mut set,
                step,
                &format!(
                    " | elapsed time per iteration (ms): 321.0 | lm loss: {loss} | num zeros: 7.0 |"
                ),
            );
        }
        line(&mut set, 3, " | mtp_1 loss: 1.0 |");
        line(&mut set, 2, " | lm loss: 99.0 |");
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

    #[test]
    fn series_that_skip_repeat_or_reorder_fields_keep_their_own_steps() {
        let mut set = SeriesSet::default();
        line(&mut set, 10, " | a: 1 | b: 2 | c: 3 |");
        line(&mut set, 20, " | a: 4 | c: 6 |");
        line(&mut set, 30, " | c: 9 | a: 7 | b: 8 | a: 70 |");
        line(&mut set, 40, " | a: 10 | note: text | | b: 11 | c: 12 |");
        line(&mut set, 50, "");
        line(&mut set, 60, " | d: 1 | a: 13 |");
        let m = set.finish();
        assert_eq!(
            points(&m["a"]),
            vec![(10, 1.0), (20, 4.0), (30, 70.0), (40, 10.0), (60, 13.0)]
        );
        assert_eq!(points(&m["b"]), vec![(10, 2.0), (30, 8.0), (40, 11.0)]);
        assert_eq!(
            points(&m["c"]),
            vec![(10, 3.0), (20, 6.0), (30, 9.0), (40, 12.0)]
        );
        assert_eq!(points(&m["d"]), vec![(60, 1.0)]);
        assert_eq!(m["a"].first(), Some((10, 1.0)));
        assert_eq!(m["d"].last(), Some((60, 1.0)));
        assert_eq!(m["b"].get(20), None);
    }

    #[test]
    fn a_value_repeated_on_every_line_reads_back_at_every_step() {
        let mut set = SeriesSet::default();
        for step in 1..=3 {
            line(&mut set, step, " | loss scale: 1.0 | z: -0.0 | n: nan |");
        }
        line(&mut set, 4, " | loss scale: 2.0 | z: 0.0 | n: nan |");
        let m = set.finish();
        let same: Steps = (1..=4)
            .map(|s| (s, if s < 4 { 1.0 } else { 2.0 }))
            .collect();
        assert_eq!(m["loss-scale"], same);
        assert_eq!(m["loss-scale"][2], 1.0);
        let zeros: Vec<u64> = m["z"].values().map(f64::to_bits).collect();
        let want = [(-0.0f64).to_bits(); 3].into_iter().chain([0]);
        assert_eq!(zeros, want.collect::<Vec<_>>());
        assert!(m["n"].values().all(f64::is_nan) && m["n"].len() == 4);
        let json = serde_json::to_string(&m["n"]).unwrap();
        assert_eq!(json, r#"{"1":"nan","2":"nan","3":"nan","4":"nan"}"#);
    }

    #[test]
    fn shared_steps_compare_and_serialize_like_owned_ones() {
        let mut set = SeriesSet::default();
        line(&mut set, 1, " | x: 1 |");
        line(&mut set, 2, " | x: 2 | y: 5 |");
        line(&mut set, 3, " | x: nan | y: 6 |");
        let m = set.finish();
        let y: Steps = [(3, 6.0), (2, 5.0)].into_iter().collect();
        assert_eq!(m["y"], y);
        assert_eq!(format!("{:?}", m["y"]), "Steps([(2, 5.0), (3, 6.0)])");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"x":{"1":1.0,"2":2.0,"3":"nan"},"y":{"2":5.0,"3":6.0}}"#
        );
        let back: BTreeMap<String, Steps> = serde_json::from_str(&json).unwrap();
        assert_eq!(back["y"], m["y"]);
        assert_eq!(back["x"].values().count(), 3);
    }
}
