//! Stage "observe", log parser: byte-level helpers for the hot path — trimming, prefix
//! matching, hand-written integer and float parsing, and the `[YYYY-MM-DD HH:MM:SS.ffffff]`
//! timestamp. Nothing here allocates.

use jiff::civil::{Date, DateTime, Time};

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

/// [`after`] for a prefix whose length is not known at compile time, compared in a few word
/// loads instead of a `memcmp` call (prefixes here are field leads of 8 to 40 bytes).
#[inline]
pub(crate) fn after_word<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = s.split_at_checked(prefix.len())?;
    same(head, prefix).then_some(rest)
}

/// `a == b` for slices of equal length: two overlapping loads from each end for up to 16
/// bytes, and 16 bytes at a time beyond that.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    if n < 8 {
        return a == b;
    }
    if n <= 16 {
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    let wide = |s: &[u8], at: usize| {
        s.get(at..at + 16)
            .map(|w| u128::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    let mut at = 0;
    while at + 16 < n {
        if wide(a, at) != wide(b, at) {
            return false;
        }
        at += 16;
    }
    wide(a, n - 16) == wide(b, n - 16)
}

/// Reads an unsigned decimal integer after optional spaces; returns it and the rest. (Byte
/// at a time: these are short, and a word-at-a-time read would lengthen each line's chain of
/// dependent operations.)
pub(crate) fn uint(s: &[u8]) -> Option<(u64, &[u8])> {
    let s = trim_start(s);
    let (v, digits) = bytewise_digits(s, 0, 0);
    if digits == 0 || digits > 19 {
        return None;
    }
    Some((v, &s[digits..]))
}

/// `v × 10^exp` computed in decimal: the shortest digits that print `v` (what the log showed,
/// for a value parsed from it) with the exponent moved, then parsed back, correctly rounded.
/// So 4068.24 ms is 4.06824 s, where `4068.24 / 1000.0` is 4.068239999999999 and `318.1 /
/// 1000.0` is 0.31810000000000005. Non-finite values and zero are scaled as is.
pub(crate) fn shift10(v: f64, exp: i32) -> f64 {
    use std::io::Write;
    if exp == 0 || !v.is_finite() || v == 0.0 {
        return v;
    }
    let mut digits = [0u8; 40];
    let mut w = &mut digits[..];
    // `{:e}` prints the shortest digits that read back as `v`: `4.06824e3`.
    if write!(w, "{v:e}").is_err() {
        return v * 10f64.powi(exp);
    }
    let len = 40 - w.len();
    let text = &digits[..len];
    let Some(at) = text.iter().position(|b| *b == b'e') else {
        return v * 10f64.powi(exp);
    };
    let Some(e) = std::str::from_utf8(&text[at + 1..])
        .ok()
        .and_then(|e| e.parse::<i32>().ok())
    else {
        return v * 10f64.powi(exp);
    };
    let mut shifted = [0u8; 48];
    let mut w = &mut shifted[..];
    if w.write_all(&text[..at]).is_err() || write!(w, "e{}", e.saturating_add(exp)).is_err() {
        return v * 10f64.powi(exp);
    }
    let len = 48 - w.len();
    float(&shifted[..len]).unwrap_or(v * 10f64.powi(exp))
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
#[inline(always)]
pub(crate) fn float_prefix(s: &[u8]) -> Option<(f64, &[u8])> {
    let (neg, body) = sign(s);
    let (mant, int_digits, frac, mut rest) = mantissa(body);
    if int_digits + frac == 0 {
        return word(body).map(|(v, rest)| (if neg { -v } else { v }, rest));
    }
    let mut exp = -(frac as i32);
    if let [b'e' | b'E', after @ ..] = rest {
        let (e, len) = exponent(after)?;
        exp += e;
        rest = &after[len..];
    }
    let v = match fast_path(mant, int_digits + frac, exp) {
        Some(v) => v,
        None => {
            let text = &body[..body.len() - rest.len()];
            std::str::from_utf8(text).ok()?.parse::<f64>().ok()?
        }
    };
    Some((if neg { -v } else { v }, rest))
}

/// Clinger's fast path: `mant × 10^exp` with one exact multiply or divide, when the
/// mantissa's `digits` (at most 19) fit 2^53 and the exponent is within ±22; `None` otherwise.
#[inline(always)]
fn fast_path(mant: u64, digits: usize, exp: i32) -> Option<f64> {
    if digits > 19 || mant > MAX_EXACT || !(-22..=22).contains(&exp) {
        return None;
    }
    let m = mant as f64;
    Some(if exp >= 0 {
        m * POW10[exp as usize]
    } else {
        m / POW10[(-exp) as usize]
    })
}

/// The decimal mantissa at the start of `s` (`27854`, `321.5`, `.5`, `1.`): its digits as
/// one integer (wrapping; callers check the counts), the digit counts before and after the
/// point, and the bytes after it. A mantissa with its point in the first eight bytes, as
/// nearly all printed numbers have, is read as one word with the point squeezed out.
#[inline(always)]
fn mantissa(s: &[u8]) -> (u64, usize, usize, &[u8]) {
    if let Some(&chunk) = s.first_chunk::<8>() {
        let non_digit = non_digit_lanes(chunk);
        let k = first_lane(non_digit);
        if k < 8 && chunk[k] != b'.' {
            return (lane_digits(chunk, k), k, 0, &s[k..]);
        }
        if k < 8 {
            // Lanes above the point move down one, over it.
            let below = (1u64 << (8 * k)) - 1;
            let w = u64::from_le_bytes(chunk);
            let squeezed = ((w & below) | ((w >> 8) & !below)).to_le_bytes();
            let j = first_lane(non_digit & non_digit.wrapping_sub(1));
            if j < 8 {
                return (lane_digits(squeezed, j - 1), k, j - k - 1, &s[j..]);
            }
            // The fraction goes on past these eight bytes (`9.999947E-06`).
            let (mant, more) = digits(&s[8..], lane_digits(squeezed, 7));
            return (mant, k, 7 - k + more, &s[8 + more..]);
        }
    }
    let (mut mant, int_digits) = digits(s, 0);
    let mut rest = &s[int_digits..];
    let mut frac = 0;
    if let [b'.', after @ ..] = rest {
        (mant, frac) = digits(after, mant);
        rest = &after[frac..];
    }
    (mant, int_digits, frac, rest)
}

/// A leading `-` or `+`: whether it was `-`, and the bytes after it.
#[inline]
fn sign(s: &[u8]) -> (bool, &[u8]) {
    match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    }
}

/// Accumulates the decimal digits at the start of `s` into `mant` (wrapping; callers check
/// the digit count); returns the mantissa and the number of digits. The first eight bytes
/// are read as one word (numbers in logs are short); longer runs go on one byte at a time.
#[inline(always)]
fn digits(s: &[u8], mant: u64) -> (u64, usize) {
    match s.first_chunk::<8>() {
        Some(&chunk) => {
            let (v, n) = leading_digits8(chunk);
            let mant = mant.wrapping_mul(POW10_U64[n]).wrapping_add(v);
            if n < 8 {
                (mant, n)
            } else {
                bytewise_digits(&s[8..], mant, 8)
            }
        }
        None => bytewise_digits(s, mant, 0),
    }
}

/// [`digits`] one byte at a time, with `n` digits already taken.
fn bytewise_digits(s: &[u8], mut mant: u64, mut n: usize) -> (u64, usize) {
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        mant = mant.wrapping_mul(10).wrapping_add(u64::from(d));
        n += 1;
    }
    (mant, n)
}

/// 10^0 ..= 10^8 as integers.
const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The value and count of the leading ASCII digits of `chunk` (0 to 8), in a few word
/// operations instead of a loop (the SWAR method of simdjson and fast_float).
#[inline(always)]
fn leading_digits8(chunk: [u8; 8]) -> (u64, usize) {
    let n = first_lane(non_digit_lanes(chunk));
    (lane_digits(chunk, n), n)
}

/// Bit 7 of each byte lane of `chunk` (first byte lowest) set where the byte is not an ASCII
/// digit. Each lane is tested on its own (its top bit is masked off before the additions),
/// so no carry crosses lanes.
#[inline(always)]
fn non_digit_lanes(chunk: [u8; 8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let w = u64::from_le_bytes(chunk);
    let low7 = w & (0x7f * ONES);
    let at_least_0 = low7.wrapping_add(0x50 * ONES); // bit 7 set: low7 >= b'0'
    let above_9 = low7.wrapping_add(0x46 * ONES); // bit 7 set: low7 > b'9'
    (!at_least_0 | above_9 | w) & (0x80 * ONES)
}

/// The lane of the lowest set bit 7 in `lanes` (8 when none is set).
#[inline(always)]
fn first_lane(lanes: u64) -> usize {
    (lanes.trailing_zeros() / 8) as usize
}

/// The number written by the first `n` (at most 8) bytes of `chunk`, all ASCII digits.
#[inline(always)]
fn lane_digits(chunk: [u8; 8], n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    // Digit values (the low nibble of b'0'..=b'9') moved to the top `n` lanes, the lanes
    // below becoming leading zeros, then combined pairwise: 8 × 1 digit → 4 × 2 → 2 × 4 → 1 × 8.
    let d = (u64::from_le_bytes(chunk) & 0x0f0f_0f0f_0f0f_0f0f) << (8 * (8 - n));
    let d = d.wrapping_mul(10).wrapping_add(d >> 8);
    const MASK: u64 = 0x0000_00ff_0000_00ff;
    let hi = (d & MASK).wrapping_mul(100 + (1_000_000 << 32));
    let lo = ((d >> 16) & MASK).wrapping_mul(1 + (10_000 << 32));
    u64::from((hi.wrapping_add(lo) >> 32) as u32)
}

/// `±digits` of an exponent (at most 4 digits); returns it and the bytes it took.
#[inline(always)]
fn exponent(s: &[u8]) -> Option<(i32, usize)> {
    // `+01`, `-05`: how `%E` prints it.
    if let [
        sign @ (b'+' | b'-'),
        a @ b'0'..=b'9',
        b @ b'0'..=b'9',
        rest @ ..,
    ] = s
        && !rest.first().is_some_and(u8::is_ascii_digit)
    {
        let v = i32::from(a - b'0') * 10 + i32::from(b - b'0');
        return Some((if *sign == b'-' { -v } else { v }, 3));
    }
    let (neg, body) = sign(s);
    let (v, n) = digits(body, 0);
    if n == 0 || n > 4 {
        return None;
    }
    let v = v as i32;
    Some((if neg { -v } else { v }, s.len() - body.len() + n))
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

/// The date, hour and minute of the `[YYYY-MM-DD HH:MM:SS(.f{1,9})?]` timestamp at the
/// start of `s`, from its first
/// [`MINUTE_LEN`] bytes (`[YYYY-MM-DD HH:MM`).
pub(crate) fn timestamp_minute(s: &[u8]) -> Option<(Date, i8, i8)> {
    let t = s.strip_prefix(b"[")?.first_chunk::<16>()?;
    if t[4] != b'-' || t[7] != b'-' || t[10] != b' ' || t[13] != b':' {
        return None;
    }
    // The twelve digits, checked together (no branch per digit), then combined in pairs.
    let d = t.map(|b| b.wrapping_sub(b'0'));
    let bad = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15]
        .iter()
        .fold(false, |bad, &i| bad | (d[i] > 9));
    if bad {
        return None;
    }
    let two = |i: usize| (d[i] * 10 + d[i + 1]) as i8;
    let year = i16::from(two(0)) * 100 + i16::from(two(2));
    let date = Date::new(year, two(5), two(8)).ok()?;
    Some((date, two(11), two(14)))
}

/// Bytes of a timestamp up to its minute: `[YYYY-MM-DD HH:MM`.
pub(crate) const MINUTE_LEN: usize = 17;

/// The timestamp at the start of `s` whose first [`MINUTE_LEN`] bytes gave `minute`: reads
/// the `:SS(.f{1,9})?]` after them; returns it and the rest of the line after `]`.
pub(crate) fn timestamp_at(
    (date, hour, minute): (Date, i8, i8),
    s: &[u8],
) -> Option<(DateTime, &[u8])> {
    let rest = s.get(MINUTE_LEN..)?;
    let [b':', s1 @ b'0'..=b'9', s2 @ b'0'..=b'9', rest @ ..] = rest else {
        return None;
    };
    let second = ((s1 - b'0') * 10 + (s2 - b'0')) as i8;
    let mut rest = rest;
    let mut nanos = 0;
    if let [b'.', frac @ ..] = rest {
        let (v, n) = digits(frac, 0);
        if n == 0 || n > 9 {
            return None;
        }
        nanos = i32::try_from(v).ok()? * 10i32.pow(9 - n as u32);
        rest = &frac[n..];
    }
    let rest = rest.strip_prefix(b"]")?;
    let time = Time::new(hour, minute, second, nanos).ok()?;
    Some((DateTime::from_parts(date, time), rest))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The number parser as first written, one byte at a time: the word-at-a-time version
    /// must agree with it on every input.
    mod reference {
        use super::super::{fast_path, word};

        pub(super) fn float_prefix(s: &[u8]) -> Option<(f64, &[u8])> {
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
            let v = match fast_path(mant, int_digits + frac, exp) {
                Some(v) => v,
                None => std::str::from_utf8(&s[start..i])
                    .ok()?
                    .parse::<f64>()
                    .ok()?,
            };
            Some((if neg { -v } else { v }, &s[i..]))
        }

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
    }

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

    proptest::proptest! {
        #[test]
        fn floats_match_the_standard_parser_on_any_decimal(
            s in "[+-]?[0-9]{0,24}(\\.[0-9]{0,24})?([eE][+-]?[0-9]{1,3})?"
        ) {
            let want = s.parse::<f64>().ok();
            let got = float(s.as_bytes());
            proptest::prop_assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{}", s);
        }

        #[test]
        fn float_prefix_matches_a_byte_at_a_time_reference(
            s in proptest::collection::vec(proptest::sample::select(
                b"0123456789.eE+- |xn\xff".to_vec()
            ), 0..24)
        ) {
            proptest::prop_assert_eq!(
                float_prefix(&s).map(|(v, r)| (v.to_bits(), r)),
                reference::float_prefix(&s).map(|(v, r)| (v.to_bits(), r))
            );
        }

        #[test]
        fn word_digits_match_one_at_a_time(s in proptest::collection::vec(
            proptest::prop_oneof![b'0'..=b'9', proptest::num::u8::ANY], 0..30
        )) {
            let mut want = (0u64, 0usize);
            for &b in &s {
                if !b.is_ascii_digit() {
                    break;
                }
                want = (want.0.wrapping_mul(10).wrapping_add(u64::from(b - b'0')), want.1 + 1);
            }
            proptest::prop_assert_eq!(digits(&s, 0), want);
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

    /// The whole timestamp at the start of `s` and the rest of the line after `]`.
    fn timestamp(s: &[u8]) -> Option<(DateTime, &[u8])> {
        timestamp_at(timestamp_minute(s)?, s)
    }

    #[test]
    fn timestamps_parse_with_and_without_fraction() {
        let (dt, rest) = timestamp(b"[2026-11-29 20:16:15.068999] saving").unwrap();
        assert_eq!(dt.to_string(), "2026-11-29T20:16:15.068999");
        assert_eq!(rest, b" saving");
        let (dt, _) = timestamp(b"[2026-01-02 03:04:05]").unwrap();
        assert_eq!(dt.to_string(), "2026-01-02T03:04:05");
        let (dt, rest) = timestamp(b"[2026-01-02 03:04:05.5]]").unwrap();
        assert_eq!(
            (dt.to_string().as_str(), rest),
            ("2026-01-02T03:04:05.5", &b"]"[..])
        );
        for bad in [
            "[Rank 0] (after",
            "[2026-13-01 00:00:00]",
            "[2026-11-29 20:16:15.]",
            "[2026-11-29 20:16:15.1234567890]",
            "[2026-11-29 20:16:15 ]",
            "[2026-11-29 20:16:1]",
            "[2026-11-29T20:16:15]",
            "[2026-11-29 20:16:15",
            "[x",
        ] {
            assert!(timestamp(bad.as_bytes()).is_none(), "{bad}");
        }
    }
}
