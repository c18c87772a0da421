//! Durations as people write them (`250ms`, `90s`, `30m`, `2h`): the command line's `--timeout`,
//! a case's `GOLDGATE.timeout` and a platform's `timeout` in goldgate.yaml read them alike.

use std::time::Duration;

/// Parses `250ms`, `10s`, `1.5s`, `30m`, `2h` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 500ms, 90s, 30m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}` (use ms, s, m or h)"
            ));
        }
    };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("`{text}` must be more than zero"));
    }
    // Far past any job's length, and far from where adding it to a clock instant overflows.
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{text}` is too long (at most {} days)",
            MAX_DURATION.as_secs() / 86_400
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The longest duration goldgate takes (`--timeout`, `--grace`, `--sample-interval`, a case's
/// or platform's timeout): one year.
const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

/// serde for an optional duration as a number of seconds (`timeout_seconds`-style fields of the
/// plan's JSON), `null` when absent.
pub mod seconds {
    use std::time::Duration;

    /// Writes seconds (`1800.0`) or `null`.
    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_reject_nonsense() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert!(parse_duration("0s").is_err());
        assert!(
            parse_duration("ten")
                .unwrap_err()
                .contains("not a duration")
        );
        for huge in [
            "99999999999999999999s",
            "99999999999999999999",
            "8761h",
            "999999999999ms",
        ] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
        assert_eq!(
            parse_duration("99999999999999999999s").unwrap_err(),
            "`99999999999999999999s` is too long (at most 365 days)"
        );
        assert!(parse_duration("8760h").is_ok());
        assert!(
            parse_duration("5d")
                .unwrap_err()
                .contains("unknown unit `d`")
        );
    }
}
