//! Stage "observe", log parser: byte-level helpers for the hot path — trimming, prefix
//! matching, hand-written integer and float parsing, and the `[YYYY-MM-DD HH:MM:SS.ffffff]`
//! timestamp. Nothing here allocates.

use jiff::civil::DateTime;

/// Powers of ten that are exact in an f64 (10^0 ..= 10^22): the fast float path multiplies
/// or divides an exact integer mantissa by one of these, which rounds correctly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The largest integer mantissa an f64 holds exactly (2^53).
const MAX_EXACT: u64 = 1 << 53;

/// `s` without leading ASCII spaces and tabs.
pub(crate) fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    &s[n..]
}

/// `s` without trailing ASCII spaces and tabs.
pub(crate) fn trim_end(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rev()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    &s[..s.len() - n]
}

/// `s` without surrounding ASCII spaces and tabs.
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    trim_end(trim_start(s))
}

/// The rest of `s` after `prefix`, if `s` starts with it.
pub(crate) fn after<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    s.strip_prefix(prefix)
}

/// Reads an unsigned decimal integer after optional spaces; returns it and the rest.
pub(crate) fn uint(s: &[u8]) -> Option<(u64, &[u8])> {
    let s = trim_start(s);
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in &s[..digits] {
        v = v * 10 + u64::from(b - b'0');
    }
    Some((v, &s[digits..]))
}

/// Parses a whole trimmed field as an f64: `321.2`, `1.000000E-05`, `-3`, `27854.0`,
/// `nan`, `inf`. Exact for up to 15-16 significant digits with small exponents (Clinger's
/// fast path); anything longer falls back to the standard library's correctly rounded parser.
pub(crate) fn float(s: &[u8]) -> Option<f64> {
    let s = trim(s);
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = match fast_float(body) {
        Some(v) => v,
        None => slow_float(body)?,
    };
    Some(if neg { -v } else { v })
}

/// The fast path: digits, optional `.digits`, optional `e±digits`; None when it cannot be
/// exact (too many digits, big exponent) or the text is not a plain number.
fn fast_float(s: &[u8]) -> Option<f64> {
    let mut i = 0;
    let mut mant: u64 = 0;
    let mut digits = 0u32;
    let mut frac = 0i32;
    let mut seen_dot = false;
    while i < s.len() {
        let b = s[i];
        if b.is_ascii_digit() {
            if digits >= 19 {
                return None;
            }
            mant = mant * 10 + u64::from(b - b'0');
            if mant != 0 {
                digits += 1;
            }
            if seen_dot {
                frac += 1;
            }
        } else if b == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if i == 0 || (i == 1 && seen_dot) {
        return None;
    }
    let mut exp = -frac;
    if i < s.len() {
        if s[i] != b'e' && s[i] != b'E' {
            return None;
        }
        exp += exponent(&s[i + 1..])?;
    }
    if mant > MAX_EXACT {
        return None;
    }
    let m = mant as f64;
    match exp {
        0 => Some(m),
        1..=22 => Some(m * POW10[exp as usize]),
        -22..=-1 => Some(m / POW10[(-exp) as usize]),
        _ => None,
    }
}

/// `±digits` of an exponent, the whole rest of the field.
fn exponent(s: &[u8]) -> Option<i32> {
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if s.is_empty() || s.len() > 4 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = s.iter().fold(0i32, |acc, b| acc * 10 + i32::from(b - b'0'));
    Some(if neg { -v } else { v })
}

/// The rare path: `nan`, `inf`, long mantissas, large exponents.
fn slow_float(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    match text {
        "nan" | "NaN" | "NAN" => Some(f64::NAN),
        "inf" | "Inf" | "INF" | "infinity" => Some(f64::INFINITY),
        _ if text
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            text.parse().ok()
        }
        _ => None,
    }
}

/// Parses the `[YYYY-MM-DD HH:MM:SS(.f{1,9})?]` timestamp at the start of `s`; returns it
/// and the rest of the line after `]`.
pub(crate) fn timestamp(s: &[u8]) -> Option<(DateTime, &[u8])> {
    let close = memchr::memchr(b']', s.get(..40).unwrap_or(s))?;
    let t = s.get(1..close)?;
    if t.len() < 19 || t[4] != b'-' || t[7] != b'-' || t[10] != b' ' || t[13] != b':' {
        return None;
    }
    let year = fixed(&t[0..4])?;
    let month = fixed(&t[5..7])?;
    let day = fixed(&t[8..10])?;
    let hour = fixed(&t[11..13])?;
    let minute = fixed(&t[14..16])?;
    if t[16] != b':' {
        return None;
    }
    let second = fixed(&t[17..19])?;
    let nanos = match &t[19..] {
        [] => 0,
        [b'.', frac @ ..] if !frac.is_empty() && frac.len() <= 9 => {
            let v = fixed(frac)?;
            v * 10i32.pow(9 - frac.len() as u32)
        }
        _ => return None,
    };
    let dt = DateTime::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second).ok()?,
        nanos,
    )
    .ok()?;
    Some((dt, &s[close + 1..]))
}

/// All-digit field of known width as i32 (at most 9 digits).
fn fixed(s: &[u8]) -> Option<i32> {
    if s.is_empty() || s.len() > 9 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0i32, |acc, b| acc * 10 + i32::from(b - b'0')))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn floats_match_the_standard_parser() {
        let cases = [
            "321.2",
            "1.000000E-05",
            "2.952633E+00",
            "27854.0",
            "0",
            "-3",
            "274.878",
            "1.0",
            " 3496.66 ",
            "1e22",
            "1.5e-300",
            "12345678901234567890.5",
            "0.1",
            "1920",
        ];
        for c in cases {
            let want: f64 = c.trim().parse().unwrap();
            assert_eq!(float(c.as_bytes()), Some(want), "{c}");
        }
    }

    #[test]
    fn floats_reject_text_and_accept_nan() {
        for bad in ["", ".", "abc", "1.2.3", "1e", "12 ms", "-", "1e+"] {
            assert_eq!(float(bad.as_bytes()), None, "{bad:?}");
        }
        assert!(float(b"nan").is_some_and(f64::is_nan));
        assert_eq!(float(b"-inf"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn uint_reads_padded_numbers() {
        assert_eq!(uint(b"      60/"), Some((60, &b"/"[..])));
        assert_eq!(uint(b"x"), None);
        assert_eq!(uint(b"99999999999999999999"), None);
    }

    #[test]
    fn timestamps_parse_with_and_without_fraction() {
        let (dt, rest) = timestamp(b"[2026-11-29 20:16:15.068999] saving").unwrap();
        assert_eq!(dt.to_string(), "2026-11-29T20:16:15.068999");
        assert_eq!(rest, b" saving");
        let (dt, _) = timestamp(b"[2026-01-02 03:04:05]").unwrap();
        assert_eq!(dt.to_string(), "2026-01-02T03:04:05");
        for bad in [
            "[Rank 0] (after",
            "[2026-13-01 00:00:00]",
            "[2026-11-29 20:16:15.]",
            "[x",
        ] {
            assert!(timestamp(bad.as_bytes()).is_none(), "{bad}");
        }
    }
}
