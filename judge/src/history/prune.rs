//! Stage "history": which runs `history prune` removes — pure. A cutoff is an instant (an
//! RFC 3339 time with its offset, or a date, read as midnight UTC), and every stored start is
//! read as an instant before it is compared: text order is not time order
//! (`2026-12-01T23:59:00+09:00` is 14:59 UTC). A stored start that is not a time is never a
//! reason to remove its run.

use jiff::Timestamp;

/// Reads `--before`: `2026-06-01T00:00:00Z`, `2026-12-01T23:59:00+09:00`, or `2026-06-01`
/// (midnight UTC). Anything else — `yesterday`, `2026-13-45T99:99:99Z`, a time without an
/// offset, an empty string — is refused, with what is accepted.
pub fn parse_cutoff(text: &str) -> Result<Timestamp, String> {
    const ACCEPTED: &str = "expected an RFC 3339 time with an offset (2026-06-01T00:00:00Z, 2026-06-01T09:00:00+09:00) \
         or a date (2026-06-01, midnight UTC)";
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("an empty time; {ACCEPTED}"));
    }
    if let Ok(t) = trimmed.parse::<Timestamp>() {
        return Ok(t);
    }
    // A bare date is exactly `YYYY-MM-DD`: jiff's date parser also reads a date-time and
    // drops its time, which would take `2026-06-01T12:00` (no offset) as midnight.
    if trimmed.len() == 10
        && let Ok(date) = trimmed.parse::<jiff::civil::Date>()
        && let Ok(zoned) = date.to_zoned_datetime(jiff::tz::TimeZone::UTC)
    {
        return Ok(zoned.timestamp());
    }
    let why = match trimmed.parse::<jiff::civil::DateTime>() {
        Ok(_) => "a time without an offset is ambiguous (add Z or +HH:MM)".to_owned(),
        Err(_) => "not a time".to_owned(),
    };
    Err(format!("{why}; {ACCEPTED}"))
}

/// One stored run as prune sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRun {
    /// The row's key.
    pub id: i64,
    pub run_id: String,
    pub started_at: String,
}

/// What a prune removes, and what it keeps because it cannot tell when it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// Oldest first.
    pub remove: Vec<StoredRun>,
    /// Runs whose stored start is not a time: never removed.
    pub unreadable: Vec<StoredRun>,
}

/// The runs to remove: those started before `before`, and all but the newest `keep` (newest by
/// start instant, then run id).
pub fn plan(runs: Vec<StoredRun>, before: Option<Timestamp>, keep: Option<usize>) -> PrunePlan {
    let mut timed: Vec<(Timestamp, StoredRun)> = Vec::new();
    let mut unreadable = Vec::new();
    for run in runs {
        match run.started_at.parse::<Timestamp>() {
            Ok(t) => timed.push((t, run)),
            Err(_) => unreadable.push(run),
        }
    }
    // Newest first.
    timed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.run_id.cmp(&a.1.run_id)));
    let mut remove: Vec<StoredRun> = timed
        .into_iter()
        .enumerate()
        .filter(|(i, (t, _))| keep.is_some_and(|k| *i >= k) || before.is_some_and(|b| *t < b))
        .map(|(_, (_, run))| run)
        .collect();
    remove.reverse();
    PrunePlan { remove, unreadable }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, started_at: &str) -> StoredRun {
        StoredRun {
            id,
            run_id: format!("r{id}"),
            started_at: started_at.into(),
        }
    }

    #[test]
    fn cutoffs_are_read_as_instants_with_their_offsets() {
        let t = |s: &str| parse_cutoff(s).unwrap().to_string();
        assert_eq!(t("2026-12-01T23:59:00+09:00"), "2026-12-01T14:59:00Z");
        assert_eq!(t("2026-12-01t10:00:00z"), "2026-12-01T10:00:00Z");
        assert_eq!(t("2026-06-01"), "2026-06-01T00:00:00Z");
        assert_eq!(t(" 2026-06-01T00:00:00.5-01:30 "), "2026-06-01T01:30:00.5Z");
    }

    #[test]
    fn what_is_not_a_time_is_refused() {
        for bad in [
            "yesterday",
            "2026-13-45T99:99:99Z",
            "",
            "  ",
            "2026' OR '1'='1",
            "2026-06-01T00:00:00",
            "2026-06-01T12:00",
            "2026",
            "1764633600",
        ] {
            let e = parse_cutoff(bad).unwrap_err();
            assert!(e.contains("expected an RFC 3339 time"), "{bad}: {e}");
        }
        assert!(
            parse_cutoff("2026-06-01T00:00:00")
                .unwrap_err()
                .contains("without an offset")
        );
    }

    #[test]
    fn before_compares_instants_not_text() {
        let runs = vec![
            run(1, "2026-12-01T15:00:00Z"),
            run(2, "2026-12-01T14:00:00Z"),
            run(3, "2026-12-02T00:30:00+09:00"),
        ];
        let cutoff = parse_cutoff("2026-12-01T23:59:00+09:00").unwrap();
        let p = plan(runs, Some(cutoff), None);
        // 14:00Z is before 14:59Z; 15:00Z and 15:30Z are not, whatever their text says.
        assert_eq!(p.remove, vec![run(2, "2026-12-01T14:00:00Z")]);
        assert!(p.unreadable.is_empty());
    }

    #[test]
    fn keep_orders_by_instant_and_never_removes_an_unreadable_start() {
        let runs = vec![
            run(1, "2026-12-01T10:00:00+09:00"), // 01:00Z, the oldest
            run(2, "2026-12-01T02:00:00Z"),
            run(3, "not a time"),
            run(4, "2026-12-01T03:00:00Z"),
        ];
        let p = plan(runs, None, Some(2));
        assert_eq!(p.remove, vec![run(1, "2026-12-01T10:00:00+09:00")]);
        assert_eq!(p.unreadable, vec![run(3, "not a time")]);
        let all = plan(
            vec![run(3, "not a time")],
            Some(parse_cutoff("2099-01-01").unwrap()),
            Some(0),
        );
        assert!(all.remove.is_empty());
    }
}
