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

/// Parses a whole field (surrounding spaces allowed) as an f64: `321.2`, `1.000000E-05`,
/// `-3`, `27854.0`, `nan`, `inf`.
pub(crate) fn float(s: &[u8]) -> Option<f64> {
    let (v, rest) = float_prefix(trim(s))?;
    rest.is_empty().then_some(v)
}

/// Parses the number at the start of `s` and returns it with the bytes after it. Exact:
/// mantissas of up to 19 digits that fit 2^53 with exponents within ±22 take Clinger's fast
/// path (one exact multiply or divide); anything else goes to the standard library's
/// correctly rounded parser.
pub(crate) fn float_prefix(s: &[u8]) -> Option<(f64, &[u8])> {
    let (neg, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let (mut mant, mut i) = digits(s, start, 0);
    let int_digits = i - start;
    let mut frac = 0;
    if s.get(i) == Some(&b'.') {
        let (m, j) = digits(s, i + 1, mant);
        frac = j - (i + 1);
        (mant, i) = (m, j);
    }
    if int_digits + frac == 0 {
        return word(&s[start..]).map(|(v, rest)| (if neg { -v } else { v }, rest));
    }
    let mut exp = -(frac as i32);
    if let Some(b'e' | b'E') = s.get(i) {
        let (e, len) = exponent(&s[i + 1..])?;
        exp += e;
        i += 1 + len;
    }
    let exact = int_digits + frac <= 19 && mant <= MAX_EXACT && (-22..=22).contains(&exp);
    let v = if exact {
        let m = mant as f64;
        if exp >= 0 {
            m * POW10[exp as usize]
        } else {
            m / POW10[(-exp) as usize]
        }
    } else {
        std::str::from_utf8(&s[start..i])
            .ok()?
            .parse::<f64>()
            .ok()?
    };
    Some((if neg { -v } else { v }, &s[i..]))
}

/// Accumulates decimal digits from `s[i..]` into `mant` (wrapping; callers check the digit
/// count); returns the mantissa and the index after the digits.
fn digits(s: &[u8], mut i: usize, mut mant: u64) -> (u64, usize) {
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mant = mant.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (mant, i)
}

/// `±digits` of an exponent (at most 4 digits); returns it and the bytes it took.
fn exponent(s: &[u8]) -> Option<(i32, usize)> {
    let (neg, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let n = s[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 4 {
        return None;
    }
    let v = s[start..start + n]
        .iter()
        .fold(0i32, |acc, b| acc * 10 + i32::from(b - b'0'));
    Some((if neg { -v } else { v }, start + n))
}

/// `nan`, `inf`, `infinity` (any case) at the start of `s`.
fn word(s: &[u8]) -> Option<(f64, &[u8])> {
    let n = s.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let v = match s[..n].to_ascii_lowercase().as_slice() {
        b"nan" => f64::NAN,
        b"inf" | b"infinity" => f64::INFINITY,
        _ => return None,
    };
    Some((v, &s[n..]))
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
            "1.",
            "00000000000000000000001.5",
            "9007199254740993",
            "123456789.123456789e-3",
            "-0.0",
        ];
        for c in cases {
            let want: f64 = c.trim().parse().unwrap();
            assert_eq!(float(c.as_bytes()), Some(want), "{c}");
        }
    }

    #[test]
    fn floats_reject_text_and_accept_nan() {
        for bad in [
            "", ".", "abc", "1.2.3", "1e", "12 ms", "-", "1e+", "nanx", "1e12345",
        ] {
            assert_eq!(float(bad.as_bytes()), None, "{bad:?}");
        }
        assert!(float(b"nan").is_some_and(f64::is_nan));
        assert_eq!(float(b"-inf"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn float_prefix_stops_after_the_number() {
        assert_eq!(float_prefix(b"3.5 | x"), Some((3.5, &b" | x"[..])));
        assert_eq!(float_prefix(b"-2E+01|"), Some((-20.0, &b"|"[..])));
        assert_eq!(float_prefix(b"| 1"), None);
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
