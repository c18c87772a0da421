//! Stage "report": number formatting shared by every renderer (bytes and seconds through
//! `goldgate_core::units`, signed deltas), so the terminal, markdown and JUnit show the same
//! figures.

use goldgate_schema::Unit;

/// The golden, now, Δ % and interval cells of a metric result, `—` where absent.
pub(crate) fn metric_cells(m: &goldgate_schema::MetricResult) -> [String; 4] {
    let kind = m.unit;
    let opt = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| value(kind, v));
    [
        opt(m.golden),
        opt(m.now),
        m.delta_pct.map_or_else(|| "—".to_string(), pct),
        m.interval
            .map_or_else(|| "—".to_string(), |(lo, hi)| interval(kind, lo, hi)),
    ]
}

/// `<case> @ <variant>: <metric> <verdict>`: how every renderer names a metric's result.
pub(crate) fn metric_label(
    job: &goldgate_schema::JobComparison,
    m: &goldgate_schema::MetricResult,
) -> String {
    use goldgate_core::log::one_line;
    format!(
        "{} @ {}: {} {}",
        one_line(&job.case),
        one_line(&job.variant),
        one_line(&m.metric),
        m.verdict.label()
    )
}

/// Five significant digits, no exponent for ordinary losses: `10.849`, `0.0012346`.
pub(crate) fn plain(v: f64) -> String {
    if !v.is_finite() {
        return goldgate_core::units::non_finite(v);
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-4..1e6).contains(&a) {
        return format!("{v:.4e}");
    }
    let digits = 4 - a.log10().floor() as i32;
    format!("{v:.*}", digits.max(0) as usize)
}

/// An integer count: `1024`.
pub(crate) fn count(v: f64) -> String {
    if !v.is_finite() {
        return goldgate_core::units::non_finite(v);
    }
    format!("{v:.0}")
}

/// Formats a value of the given kind.
pub(crate) fn value(kind: Unit, v: f64) -> String {
    match kind {
        Unit::Bytes => goldgate_core::units::bytes(v),
        Unit::Seconds => goldgate_core::units::seconds(v),
        Unit::Count => count(v),
        Unit::Plain => plain(v),
    }
}

/// A signed difference of the given kind: `+1.20 GiB`, `-3.58 s`.
pub(crate) fn signed(kind: Unit, v: f64) -> String {
    let text = value(kind, v);
    if v > 0.0 && v.is_finite() {
        format!("+{text}")
    } else {
        text
    }
}

/// A signed percentage with two decimals: `+5.20 %`, `-87.32 %`.
pub(crate) fn pct(p: f64) -> String {
    if !p.is_finite() {
        return goldgate_core::units::non_finite(p);
    }
    format!("{p:+.2} %")
}

/// An interval in the value's unit, the unit written once when both ends share it:
/// `60.81 – 62.04 GiB`, `980 ms – 1.02 s`.
pub(crate) fn interval(kind: Unit, lo: f64, hi: f64) -> String {
    let (a, b) = (value(kind, lo), value(kind, hi));
    match (a.rsplit_once(' '), b.rsplit_once(' ')) {
        (Some((na, ua)), Some((_, ub))) if ua == ub => format!("{na} – {b}"),
        _ => format!("{a} – {b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;
    const GIB: f64 = MIB * 1024.0;

    #[test]
    fn scales_bytes_and_seconds_to_readable_units() {
        let cases: &[(Unit, f64, &str)] = &[
            (Unit::Bytes, 65_842_000_000.0, "61.32 GiB"),
            (Unit::Bytes, 512.0 * MIB, "512.0 MiB"),
            (Unit::Bytes, 3072.0, "3.0 KiB"),
            (Unit::Bytes, 17.0, "17 B"),
            (Unit::Seconds, 4.1, "4.10 s"),
            (Unit::Seconds, 0.0234, "23.4 ms"),
            (Unit::Seconds, 0.000812, "812 µs"),
            (Unit::Seconds, 184.4, "184 s"),
            (Unit::Seconds, 0.0, "0.00 s"),
            (Unit::Plain, 10.849213, "10.849"),
            (Unit::Plain, 0.00123456, "0.0012346"),
            (Unit::Plain, 1.5e-7, "1.5000e-7"),
            (Unit::Count, 1024.0, "1024"),
            (Unit::Plain, f64::NAN, "nan"),
            (Unit::Bytes, f64::INFINITY, "inf"),
        ];
        for (kind, v, want) in cases {
            assert_eq!(value(*kind, *v), *want, "{kind:?} {v}");
        }
    }

    #[test]
    fn signs_and_percentages() {
        assert_eq!(signed(Unit::Bytes, 1.2 * GIB), "+1.20 GiB");
        assert_eq!(signed(Unit::Seconds, -3.58), "-3.58 s");
        assert_eq!(pct(5.2), "+5.20 %");
        assert_eq!(pct(-87.321), "-87.32 %");
        assert_eq!(pct(f64::NAN), "nan");
        assert_eq!(
            interval(Unit::Bytes, 60.81 * GIB, 62.04 * GIB),
            "60.81 – 62.04 GiB"
        );
        assert_eq!(interval(Unit::Seconds, 0.98, 1.02), "980 ms – 1.02 s");
        assert_eq!(interval(Unit::Plain, 2.5, 2.75), "2.5000 – 2.7500");
    }

    #[test]
    fn kinds_follow_metric_names() {
        assert_eq!(Unit::of_metric("gpu-peak-memory-bytes"), Unit::Bytes);
        assert_eq!(Unit::of_metric("iteration-time"), Unit::Seconds);
        assert_eq!(Unit::of_metric("checkpoint-async-latency"), Unit::Seconds);
        assert_eq!(Unit::of_metric("num-zeros"), Unit::Count);
        assert_eq!(
            Unit::of_metric("empty-cache-seconds-per-checkpoint"),
            Unit::Seconds
        );
        assert_eq!(Unit::of_metric("empty-cache-calls"), Unit::Count);
        assert_eq!(Unit::of_metric("alloc-retries"), Unit::Count);
        assert_eq!(Unit::of_metric("lm loss"), Unit::Plain);
    }
}
