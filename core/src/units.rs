//! Base module: bytes in the binary unit that fits them (`61.32 GiB`, `16.0 MiB`), the one
//! formatter of byte figures for every command that prints one (`compare`'s tables, `bless`).

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * 1024.0;
const GIB: f64 = MIB * 1024.0;

/// `61.32 GiB`, `512.0 MiB`, `3.0 KiB`, `17 B`; `nan`/`inf`/`-inf` for non-finite values.
pub fn bytes(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
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

#[cfg(test)]
mod tests {
    use super::*;

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
