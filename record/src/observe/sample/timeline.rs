//! Stage "observe": a memory series — baseline, exact peak and a bounded, downsampled
//! timeline that keeps every bucket's minimum and maximum, so no peak is ever smoothed away.

/// One sample: milliseconds since the sampler started, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    pub t_ms: u64,
    pub bytes: u64,
}

/// What one memory series recorded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeriesSummary {
    /// The value before the job started (0 for the job's own RSS).
    pub baseline_bytes: u64,
    /// Highest value seen.
    pub peak_bytes: u64,
    /// `peak_bytes - baseline_bytes`, never negative.
    pub peak_above_baseline_bytes: u64,
    /// When the peak was first reached.
    pub peak_at_ms: u64,
    pub samples: u64,
    /// At most `2 * MAX_BUCKETS` points, in time order.
    pub timeline: Vec<Point>,
}

/// Buckets kept; each contributes its minimum and maximum, so a timeline has ≤ 2000 points.
pub const MAX_BUCKETS: usize = 1000;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    index: u64,
    min: Point,
    max: Point,
}

/// A series being recorded. Buckets start one millisecond wide and double in width (merging
/// neighbours) whenever there would be more than [`MAX_BUCKETS`].
#[derive(Debug)]
pub(crate) struct Series {
    baseline: u64,
    peak: Option<Point>,
    samples: u64,
    width_ms: u64,
    buckets: Vec<Bucket>,
}

impl Series {
    pub(crate) fn new(baseline: u64) -> Series {
        Series {
            baseline,
            peak: None,
            samples: 0,
            width_ms: 1,
            buckets: Vec::with_capacity(MAX_BUCKETS + 1),
        }
    }

    pub(crate) fn push(&mut self, p: Point) {
        self.samples += 1;
        if self.peak.is_none_or(|peak| p.bytes > peak.bytes) {
            self.peak = Some(p);
        }
        let index = p.t_ms / self.width_ms;
        match self.buckets.last_mut() {
            Some(b) if b.index == index => {
                if p.bytes < b.min.bytes {
                    b.min = p;
                }
                if p.bytes > b.max.bytes {
                    b.max = p;
                }
            }
            _ => {
                self.buckets.push(Bucket {
                    index,
                    min: p,
                    max: p,
                });
                if self.buckets.len() > MAX_BUCKETS {
                    self.coarsen();
                }
            }
        }
    }

    /// Doubles the bucket width until the buckets fit again.
    fn coarsen(&mut self) {
        while self.buckets.len() > MAX_BUCKETS {
            self.width_ms *= 2;
            let mut merged: Vec<Bucket> = Vec::with_capacity(MAX_BUCKETS + 1);
            for b in self.buckets.drain(..) {
                let index = b.index / 2;
                match merged.last_mut() {
                    Some(m) if m.index == index => {
                        if b.min.bytes < m.min.bytes {
                            m.min = b.min;
                        }
                        if b.max.bytes > m.max.bytes {
                            m.max = b.max;
                        }
                    }
                    _ => merged.push(Bucket { index, ..b }),
                }
            }
            self.buckets = merged;
        }
    }

    /// The summary, or `None` when nothing was sampled.
    pub(crate) fn summary(&self) -> Option<SeriesSummary> {
        let peak = self.peak?;
        let mut timeline = Vec::with_capacity(self.buckets.len() * 2);
        for b in &self.buckets {
            let (first, second) = if b.min.t_ms <= b.max.t_ms {
                (b.min, b.max)
            } else {
                (b.max, b.min)
            };
            timeline.push(first);
            if second != first {
                timeline.push(second);
            }
        }
        Some(SeriesSummary {
            baseline_bytes: self.baseline,
            peak_bytes: peak.bytes,
            peak_above_baseline_bytes: peak.bytes.saturating_sub(self.baseline),
            peak_at_ms: peak.t_ms,
            samples: self.samples,
            timeline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t_ms: u64, bytes: u64) -> Point {
        Point { t_ms, bytes }
    }

    #[test]
    fn empty_series_has_no_summary() {
        assert_eq!(Series::new(5).summary(), None);
    }

    #[test]
    fn short_series_is_kept_exactly() {
        let mut s = Series::new(100);
        for (t, v) in [(0, 100), (10, 300), (20, 200)] {
            s.push(p(t, v));
        }
        let sum = s.summary().unwrap();
        assert_eq!(sum.timeline, [p(0, 100), p(10, 300), p(20, 200)]);
        assert_eq!(
            (
                sum.peak_bytes,
                sum.peak_at_ms,
                sum.peak_above_baseline_bytes
            ),
            (300, 10, 200)
        );
    }

    #[test]
    fn long_series_is_bounded_and_keeps_the_one_sample_spike() {
        let mut s = Series::new(0);
        // One hour at 10 ms: 360,000 samples of a sawtooth with a single spike.
        for i in 0..360_000u64 {
            let bytes = if i == 123_457 { 1 << 40 } else { 1000 + i % 97 };
            s.push(p(i * 10, bytes));
        }
        let sum = s.summary().unwrap();
        assert!(
            sum.timeline.len() <= 2 * MAX_BUCKETS,
            "{}",
            sum.timeline.len()
        );
        assert!(
            sum.timeline.len() > MAX_BUCKETS,
            "too coarse: {}",
            sum.timeline.len()
        );
        assert!(sum.timeline.contains(&p(1_234_570, 1 << 40)));
        assert_eq!(
            (sum.peak_bytes, sum.peak_at_ms, sum.samples),
            (1 << 40, 1_234_570, 360_000)
        );
        assert!(sum.timeline.windows(2).all(|w| w[0].t_ms < w[1].t_ms));
        assert!(
            sum.timeline.iter().any(|q| q.bytes == 1000),
            "bucket minima kept"
        );
    }

    #[test]
    fn peak_time_is_the_first_time_it_was_reached() {
        let mut s = Series::new(0);
        for t in 0..5 {
            s.push(p(t, 7));
        }
        assert_eq!(s.summary().unwrap().peak_at_ms, 0);
    }
}
