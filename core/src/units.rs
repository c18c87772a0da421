//! Base module: bytes in the binary unit that fits them (`61.32 GiB`, `16.0 MiB`) and seconds
//! scaled to ms/µs (`4.10 s`, `23.4 ms`): the one formatter of byte and time figures for every
//! command that prints one (`compare`'s tables, `report`, `bless`, `ab`'s errors).

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * 1024.0;
const GIB: f64 = MIB * 1024.0;

/// `61.32 GiB`, `512.0 MiB`, `3.0 KiB`, `17 B`; `nan`/`inf`/`-inf` for non-finite values.
pub fn bytes(v: f64) -> String {
    if !v.is_finite() {
        return non_finite(v);
    }
    let a = v.abs();
    if a >= GIB {
        format!("{:.2} GiB", v / GIB)
    } else if a >= MIB {
        format!("{:.1} MiB", v / MIB)
    } else if a >= KIB {
        format!("{:.1} KiB", v / KIB)
    } else {
        format!("{v:.0} B")
    }
}

/// `4.10 s`, `23.4 ms`, `812 µs`, `184 s` (three significant digits); `nan`/`inf`/`-inf` for
/// non-finite values.
pub fn seconds(v: f64) -> String {
    if !v.is_finite() {
        return non_finite(v);
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0} s")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.2} s")
    } else if a >= 1e-3 {
        format!("{} ms", sig3(v * 1e3))
    } else {
        format!("{} µs", sig3(v * 1e6))
    }
}

fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `nan`, `inf` or `-inf`: how every formatter here writes a value that is not finite.
pub fn non_finite(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_under_one_take_ms_or_us() {
        for (v, want) in [
            (4.1, "4.10 s"),
            (184.4, "184 s"),
            (0.0234, "23.4 ms"),
            (0.001, "1.00 ms"),
            (0.000812, "812 µs"),
            (0.0, "0.00 s"),
            (-3.58, "-3.58 s"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(seconds(v), want, "{v}");
        }
    }

    #[test]
    fn bytes_take_the_unit_that_fits() {
        for (v, want) in [
            (65_842_000_000.0, "61.32 GiB"),
            (16.0 * MIB + 0.4 * MIB, "16.4 MiB"),
            (3072.0, "3.0 KiB"),
            (17.0, "17 B"),
            (-2.0 * GIB, "-2.00 GiB"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(bytes(v), want, "{v}");
        }
    }
}
