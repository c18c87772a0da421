//! Stage "compare": `goldgate ab --precision`: run until every timing interval is this narrow.
//!
//! A gate asks "is B slower by `min_effect`?" and stops as soon as that is decided. A user who
//! asks "how much faster is B?" wants the interval itself to be narrow: with `--precision 3%`
//! the sequence goes on until the half-width of every timed metric's interval (`(high − low)
//! / 2`, as shares of A) is at most 3 %, or the jobs (`--max-jobs`) or pairs (`--max-pairs`)
//! allowed are used up. The intervals are the sequence's own, at the level of each look (the
//! alpha split over the looks is unchanged, so the answer at whatever look ends the run keeps
//! the gate's false-alarm rate); only the rule that ends the sequence changes. Where the target
//! is not reached, [`Precision::needed_pairs`] says how many pairs would reach it if the
//! half-width keeps falling as `1/√pairs`.

use serde::{Deserialize, Serialize};

use super::metric::{AbMetric, AbTest};

/// What `--precision` asked for and what the run reached (`ab.json`'s `precision`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// The largest half-width asked for (a share: 0.03 = ±3 %).
    pub target: f64,
    /// Whether every timed metric's interval is that narrow.
    pub reached: bool,
    /// The timed metric with the widest interval, and its half-width (`None` before any
    /// interval, or while an interval is unbounded).
    pub widest: Option<String>,
    pub half_width: Option<f64>,
    /// Pairs judged when this was taken.
    pub pairs: usize,
}

impl Precision {
    /// Where `metrics` stand against `target` after `pairs` pairs.
    pub fn of(metrics: &[AbMetric], target: f64, pairs: usize) -> Precision {
        let widest = widest(metrics);
        Precision {
            target,
            reached: reached(metrics, target),
            widest: widest.as_ref().map(|(m, _)| m.clone()),
            half_width: widest.and_then(|(_, w)| w.is_finite().then_some(w)),
            pairs,
        }
    }

    /// Pairs that would bring the widest half-width to the target if it falls as `1/√pairs`
    /// (`None` when there is no finite half-width to scale).
    pub fn needed_pairs(&self) -> Option<usize> {
        let w = self.half_width.filter(|w| w.is_finite() && *w > 0.0)?;
        let n = self.pairs as f64 * (w / self.target).powi(2);
        Some(n.ceil().max(self.pairs as f64) as usize)
    }
}

/// The metrics judged with an interval (the timing tests).
fn timed(metrics: &[AbMetric]) -> impl Iterator<Item = &AbMetric> {
    metrics
        .iter()
        .filter(|m| matches!(m.test, AbTest::Sequential | AbTest::SignedRank))
}

/// A timed metric's half-width, `(high − low) / 2` (infinite while the interval is unbounded;
/// `None` without an interval).
pub fn half_width(m: &AbMetric) -> Option<f64> {
    let (lo, hi) = m.interval?;
    let w = (hi - lo) / 2.0;
    Some(if w.is_nan() { f64::INFINITY } else { w })
}

/// The timed metric with the widest interval (an unbounded or missing interval is widest).
fn widest(metrics: &[AbMetric]) -> Option<(String, f64)> {
    timed(metrics)
        .map(|m| (m.metric.clone(), half_width(m).unwrap_or(f64::INFINITY)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Whether every timed metric has an interval of half-width `target` or less (false while
/// there is no timed metric).
pub fn reached(metrics: &[AbMetric], target: f64) -> bool {
    let mut any = false;
    for m in timed(metrics) {
        any = true;
        if !half_width(m).is_some_and(|w| w <= target) {
            return false;
        }
    }
    any
}

/// `3%`, `3 %` or `0.03`: a half-width above 0 and below 1 (100 %).
pub fn parse(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let v = number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
        .ok_or_else(|| {
            format!("--precision takes a share (0.03) or a percentage (3%), not `{text}`")
        })?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!(
            "--precision takes a half-width above 0 and below 100 %, not `{text}`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ab::metric::AbVerdict;
    use goldgate_schema::Unit;

    fn timed_metric(name: &str, interval: Option<(f64, f64)>) -> AbMetric {
        AbMetric {
            metric: name.into(),
            unit: Unit::Seconds,
            test: AbTest::SignedRank,
            verdict: AbVerdict::Undecided,
            a: Some(0.4),
            b: Some(0.4),
            change: Some(0.0),
            interval,
            level: Some(0.9967),
            pairs: 66,
            detail: String::new(),
        }
    }

    #[test]
    fn a_precision_is_read_as_a_share_or_a_percentage() {
        assert_eq!(parse("3%").unwrap(), 0.03);
        assert_eq!(parse(" 3 % ").unwrap(), 0.03);
        assert_eq!(parse("0.03").unwrap(), 0.03);
        for bad in ["0", "0%", "100%", "1", "-2%", "three", "%", "nan"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("--precision"), "{bad}: {e}");
        }
    }

    #[test]
    fn it_is_reached_only_when_every_timed_interval_is_that_narrow() {
        let window = timed_metric("checkpoint-window-time", Some((-0.036, 0.045)));
        let steps = timed_metric("iteration-time", Some((-0.055, -0.003)));
        let mut counter = timed_metric("checkpoint-empty-cache-calls", None);
        counter.test = AbTest::Rule;
        let all = [window.clone(), steps.clone(), counter];
        // ±4.05 % and ±2.6 %: 3 % is not reached, 4.1 % is; the counter has no interval and
        // does not count.
        assert!(!reached(&all, 0.03));
        assert!(reached(&all, 0.041));
        let p = Precision::of(&all, 0.03, 66);
        assert_eq!(p.widest.as_deref(), Some("checkpoint-window-time"));
        assert!((p.half_width.unwrap() - 0.0405).abs() < 1e-12);
        // (4.05 / 3)² × 66 = 120.3: the pairs that would reach it.
        assert_eq!(p.needed_pairs(), Some(121));
        assert!(!reached(&[], 0.5), "nothing timed yet: not reached");
    }

    #[test]
    fn an_unbounded_interval_never_reaches_a_precision() {
        let open = timed_metric(
            "checkpoint-window-time",
            Some((f64::NEG_INFINITY, f64::INFINITY)),
        );
        assert!(!reached(std::slice::from_ref(&open), 0.99));
        let p = Precision::of(&[open], 0.03, 2);
        assert_eq!(
            p.half_width, None,
            "an unbounded interval has no half-width to show"
        );
        assert_eq!(p.needed_pairs(), None);
        let missing = timed_metric("iteration-time", None);
        assert!(!reached(&[missing], 0.99));
    }
}
