//! Stage "compare": the glue between the `golden` module (Megatron's golden JSON, read and
//! written byte-exactly; where golden files live is `golden::find`) and the plain
//! `step → f64` series the comparison works on, and the golden file that `bless` writes.

use std::collections::BTreeMap;
use std::path::Path;

use super::band::Series;
use super::samples::{self, GoldenSamples};
use goldgate_core::golden::{self, GoldenError, GoldenFile, GoldenStyle, Value};

/// Reads a golden file into metric → series (`"nan"` as NaN). Errors name the file.
pub(crate) fn load(path: &Path) -> Result<BTreeMap<String, Series>, GoldenError> {
    Ok(to_series(&golden::read_golden(path)?))
}

/// The series of a parsed golden file.
pub(crate) fn to_series(file: &GoldenFile) -> BTreeMap<String, Series> {
    file.metrics
        .iter()
        .map(|(name, s)| {
            let values = s.values.iter().map(|(k, v)| (*k, v.as_f64())).collect();
            (name.clone(), values)
        })
        .collect()
}

/// A golden file in Megatron's current style (4-space indent, no trailing newline; the
/// writer rounds to 5 decimals), with goldgate's per-job samples as one extra key when there
/// are any. `step_interval` is the smallest gap between steps.
pub(crate) fn to_golden_file_with_samples(
    metrics: &BTreeMap<String, Series>,
    jobs: &GoldenSamples,
) -> GoldenFile {
    let mut file = to_golden_file(metrics);
    if !jobs.is_empty() {
        file.extra
            .push((samples::SAMPLES_KEY.to_string(), samples::to_json(jobs)));
    }
    file
}

/// A golden file in Megatron's current style (4-space indent, no trailing newline; the
/// writer rounds to 5 decimals). `step_interval` is the smallest gap between steps.
pub(crate) fn to_golden_file(metrics: &BTreeMap<String, Series>) -> GoldenFile {
    let metrics = metrics
        .iter()
        .map(|(name, series)| {
            let first = series.keys().next().copied().unwrap_or(0);
            let last = series.keys().next_back().copied().unwrap_or(0);
            let interval = series
                .keys()
                .zip(series.keys().skip(1))
                .map(|(a, b)| b - a)
                .min()
                .unwrap_or(1);
            let values = series
                .iter()
                .map(|(s, v)| {
                    (
                        *s,
                        if v.is_finite() {
                            Value::Float(*v)
                        } else {
                            Value::Nan
                        },
                    )
                })
                .collect();
            let series = golden::Series {
                start_step: first,
                end_step: last,
                step_interval: interval,
                values,
                list_form: false,
            };
            (name.clone(), series)
        })
        .collect();
    GoldenFile {
        metrics,
        extra: Vec::new(),
        unsupported: Vec::new(),
        style: GoldenStyle::Indented,
        trailing_newline: false,
        duplicates: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_golden_reads_back_at_5_decimals() {
        let mut m = BTreeMap::new();
        m.insert(
            "lm loss".to_string(),
            Series::from([(1, 10.123456), (2, f64::NAN), (3, 9.0)]),
        );
        let text = golden::render_golden(&to_golden_file(&m));
        assert!(
            text.starts_with("{\n    \"lm loss\": {\n        \"start_step\": 1,"),
            "{text}"
        );
        assert!(!text.ends_with('\n'));
        let back = to_series(&golden::parse_golden(Path::new("x.json"), &text).unwrap());
        assert_eq!(back["lm loss"][&1], 10.12346);
        assert!(back["lm loss"][&2].is_nan());
        assert_eq!(back["lm loss"][&3], 9.0);
    }
}
