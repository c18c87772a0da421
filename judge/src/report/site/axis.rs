//! Stage "report": the axes of a site plot. The y range holds every job value (a flat series
//! gets ±1 % of its value, not ±1); its ticks are round values 1, 2 or 5 × 10ᵏ apart inside
//! the range, labelled in one unit and with as many decimals as their spacing needs, so no two
//! ticks read the same (`64.0 MiB` four times, `1, 0, 0, -0, -1`) and none is outside the plot.
//! The x axis names the start date and commit of a few runs, evenly spaced.

use crate::history::series::Point;
use goldgate_schema::Unit;

/// The y range of every job value, padded by 5 % (a flat series: ±1 % of its value, or ±1
/// around 0); for whole numbers (`whole`: bytes, counts) at least 2 wide, so two ticks fit.
pub(crate) fn y_range(points: &[Point], whole: bool) -> (f64, f64) {
    let values = points.iter().flat_map(|p| p.jobs.iter().map(|j| j.1));
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let mut pad = if hi > lo {
        (hi - lo) * 0.05
    } else if lo != 0.0 {
        lo.abs() * 0.01
    } else {
        1.0
    };
    if whole {
        pad = pad.max((2.0 - (hi - lo)) / 2.0);
    }
    (lo - pad, hi + pad)
}

/// Round values inside `[lo, hi]`, 1, 2 or 5 × 10ᵏ apart (at least 1 apart for whole
/// numbers: bytes and counts), about four intervals.
pub(crate) fn ticks(lo: f64, hi: f64, whole: bool) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![clean(lo)];
    }
    let magnitude = 10f64.powf((span / 4.0).log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * magnitude);
    if whole {
        step = step.max(1.0).round();
    }
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    let count = (last - first) as usize;
    (0..=count.min(20))
        .map(|k| clean((first + k as f64) * step))
        .filter(|v| (lo..=hi).contains(v))
        .collect()
}

/// `v` without float dust (`0.30000000000000004`) or a negative zero.
fn clean(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let digits = 12 - v.abs().log10().ceil() as i32;
    let scale = 10f64.powi(digits.clamp(-300, 300));
    let r = (v * scale).round() / scale;
    if r.is_finite() { r } else { v }
}

/// The y ticks of a plot of `unit` over `[lo, hi]`, each with its label: round values in one
/// display unit — the largest not above the range's largest value, a smaller one while the
/// spacing would need more than 2 decimals (then bytes and counts are whole numbers with
/// thousands separators) — or, for plain numbers far from 1, one power of ten
/// (`5.76e-5`).
pub(crate) fn y_ticks(unit: Unit, lo: f64, hi: f64) -> Vec<(f64, String)> {
    let top = lo.abs().max(hi.abs());
    let units = display_units(unit, top);
    let mut chosen = Vec::new();
    for (i, (scale, suffix)) in units.iter().enumerate() {
        let whole = *scale == 1.0 && matches!(unit, Unit::Bytes | Unit::Count);
        let scaled = ticks(lo / scale, hi / scale, whole);
        let step = match scaled.as_slice() {
            [a, b, ..] => b - a,
            _ => 1.0,
        };
        let places = decimals(step);
        chosen = scaled
            .iter()
            .map(|v| (v * scale, label(*v, places, *scale, suffix)))
            .collect();
        if places <= 2 || i + 1 == units.len() {
            break;
        }
    }
    chosen
}

fn label(v: f64, places: usize, scale: f64, suffix: &str) -> String {
    let number = if places == 0 && suffix != "e" {
        grouped(v)
    } else {
        format!("{v:.places$}")
    };
    match suffix {
        "" => number,
        "e" => format!("{number}e{}", scale.log10().round()),
        s => format!("{number} {s}"),
    }
}

/// The display units to try, largest first: from the largest not above `top` down.
fn display_units(unit: Unit, top: f64) -> Vec<(f64, &'static str)> {
    const KIB: f64 = 1024.0;
    let all: &[(f64, &str)] = match unit {
        Unit::Bytes => &[
            (KIB * KIB * KIB, "GiB"),
            (KIB * KIB, "MiB"),
            (KIB, "KiB"),
            (1.0, "B"),
        ],
        Unit::Seconds => &[(1.0, "s"), (1e-3, "ms"), (1e-6, "µs")],
        Unit::Count => &[(1.0, "")],
        Unit::Plain => {
            if top > 0.0 && !(1e-3..1e6).contains(&top) {
                return vec![(10f64.powf(top.log10().floor()), "e")];
            }
            &[(1.0, "")]
        }
    };
    let start = all
        .iter()
        .position(|(s, _)| *s <= top)
        .unwrap_or(all.len() - 1);
    all[start..].to_vec()
}

/// Decimals that show a spacing of `step` (0.2 → 1, 0.05 → 2, 5 → 0).
fn decimals(step: f64) -> usize {
    if !(step.is_finite() && step > 0.0) {
        return 0;
    }
    (-step.log10() - 1e-9).ceil().clamp(0.0, 12.0) as usize
}

/// `67108866` → `67,108,866`.
fn grouped(v: f64) -> String {
    let text = format!("{:.0}", v);
    let (sign, digits) = match text.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", text.as_str()),
    };
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if out == "0" {
        return out;
    }
    format!("{sign}{out}")
}

/// The runs the x axis names — up to six, evenly spaced, the first and the newest among
/// them — each with its start date (UTC) and short commit.
pub(crate) fn x_labels(points: &[Point]) -> Vec<(usize, String, String)> {
    let n = points.len();
    let picks: Vec<usize> = if n <= 6 {
        (0..n).collect()
    } else {
        let mut v: Vec<usize> = (0..6).map(|j| (j * (n - 1) + 2) / 5).collect();
        v.dedup();
        v
    };
    picks
        .into_iter()
        .map(|i| {
            let p = &points[i];
            let date = p
                .started_at
                .parse::<jiff::Timestamp>()
                .map(|t| t.strftime("%Y-%m-%d").to_string())
                .unwrap_or_else(|_| p.started_at.chars().take(10).collect());
            (i, date, p.commit.chars().take(7).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(unit: Unit, lo: f64, hi: f64) -> Vec<String> {
        y_ticks(unit, lo, hi).into_iter().map(|t| t.1).collect()
    }

    fn distinct(v: &[String]) -> bool {
        let set: std::collections::BTreeSet<&String> = v.iter().collect();
        set.len() == v.len() && v.len() >= 2
    }

    #[test]
    fn ticks_on_flat_and_narrow_series_are_distinct_and_truthful() {
        let flat = |v: f64, unit: Unit| {
            let p = Point {
                run_id: "r".into(),
                commit: "c".into(),
                branch: "main".into(),
                started_at: String::new(),
                jobs: vec![("j".into(), v, String::new())],
            };
            y_range(&[p], matches!(unit, Unit::Bytes | Unit::Count))
        };
        // A flat zero: around 0, no `-0`.
        let (lo, hi) = flat(0.0, Unit::Plain);
        let zero = labels(Unit::Plain, lo, hi);
        assert!(distinct(&zero), "{zero:?}");
        assert!(
            !zero.iter().any(|l| l.starts_with("-0") && l != "-0.5"),
            "{zero:?}"
        );
        // A constant 5.8e-5 is drawn around 5.8e-5, not on −1 … 1.
        let (lo, hi) = flat(5.8e-5, Unit::Plain);
        assert!(lo > 5.7e-5 && hi < 5.9e-5, "{lo} {hi}");
        let tiny = labels(Unit::Plain, lo, hi);
        assert!(distinct(&tiny), "{tiny:?}");
        assert!(tiny.iter().all(|l| l.ends_with("e-5")), "{tiny:?}");
        // 64 MiB give or take a few bytes: exact bytes, not `64.0 MiB` four times.
        let bytes = labels(Unit::Bytes, 67_108_860.0, 67_108_870.0);
        assert!(distinct(&bytes), "{bytes:?}");
        assert_eq!(bytes[0], "67,108,860 B");
        let (lo, hi) = flat(67_108_864.0, Unit::Bytes);
        let mib = labels(Unit::Bytes, lo, hi);
        assert!(distinct(&mib), "{mib:?}");
        assert!(mib.contains(&"64.0 MiB".to_owned()), "{mib:?}");
        // A counter that never moves still gets two ticks, whole ones.
        let (lo, hi) = flat(3.0, Unit::Count);
        assert_eq!(labels(Unit::Count, lo, hi), ["2", "3", "4"]);
        // 32 to 33 ms, in ms.
        let ms = labels(Unit::Seconds, 0.032, 0.033);
        assert!(distinct(&ms), "{ms:?}");
        assert!(ms.iter().all(|l| l.ends_with(" ms")), "{ms:?}");
        let counts = labels(Unit::Count, 0.0, 3.0);
        assert_eq!(counts, ["0", "1", "2", "3"]);
    }

    #[test]
    fn every_tick_is_inside_the_range() {
        for (lo, hi) in [
            (0.9, 1.1),
            (-1.0, 1.0),
            (1e-9, 2e-9),
            (5.0, 5.0001),
            (-3.3, -3.1),
        ] {
            let t = ticks(lo, hi, false);
            assert!(t.len() >= 2, "{lo} {hi}: {t:?}");
            assert!(t.iter().all(|v| (lo..=hi).contains(v)), "{lo} {hi}: {t:?}");
        }
    }

    #[test]
    fn the_x_axis_names_up_to_six_runs_with_date_and_commit() {
        let points: Vec<Point> = (0..40)
            .map(|i| Point {
                run_id: format!("r{i}"),
                commit: format!("{i:02}abcdef0123"),
                branch: "main".into(),
                started_at: format!("2026-11-{:02}T08:00:00Z", i % 28 + 1),
                jobs: vec![],
            })
            .collect();
        let x = x_labels(&points);
        assert_eq!(x.len(), 6);
        assert_eq!(x[0], (0, "2026-11-01".into(), "00abcde".into()));
        assert_eq!(x[5].0, 39);
    }
}
