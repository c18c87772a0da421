//! Stage "report": the comparison as versioned JSON (`schema_version` inside, see
//! [`goldgate_schema::COMPARISON_SCHEMA_VERSION`]) for other tools. Non-finite numbers (a
//! golden `nan`) are written as `null`, since JSON has no NaN.

use crate::report::error::ReportError;
use goldgate_schema::Comparison;

/// Pretty-printed JSON with a trailing newline.
pub fn render(c: &Comparison) -> Result<String, ReportError> {
    let mut text = serde_json::to_string_pretty(c).map_err(|e| ReportError::Json {
        message: e.to_string(),
    })?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn round_trips_and_carries_the_version() {
        let c = fixtures::comparison();
        let text = render(&c).unwrap();
        // serde_json parses floats to within one ulp, so compare everything but the numbers.
        let back: Comparison = serde_json::from_str(&text).unwrap();
        assert_eq!(back.counts, c.counts);
        for (a, b) in back.jobs.iter().zip(&c.jobs) {
            assert_eq!(
                (&a.case, &a.variant, a.verdict),
                (&b.case, &b.variant, b.verdict)
            );
            assert_eq!(a.failure_line, b.failure_line);
            for (x, y) in a.metrics.iter().zip(&b.metrics) {
                assert_eq!(
                    (&x.metric, x.verdict, x.unit),
                    (&y.metric, y.verdict, y.unit)
                );
                assert!((x.now.unwrap() - y.now.unwrap()).abs() <= 1e-9 * y.now.unwrap().abs());
            }
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], 2);
    }

    #[test]
    fn snapshot_of_one_job() {
        let mut c = fixtures::comparison();
        c.jobs
            .retain(|j| j.verdict == goldgate_schema::Verdict::Regression);
        c.counts = goldgate_schema::Counts::of(&c.jobs);
        insta::assert_snapshot!(render(&c).unwrap());
    }
}
