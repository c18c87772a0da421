//! Stage "compare": the glue between the `golden` module (Megatron's golden JSON, read and
//! written byte-exactly) and the plain `step → f64` series the comparison works on: which
//! golden file a job is judged against, what platform its name says, and the golden file
//! that `bless` writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::golden_samples::{self, GoldenSamples};
use super::judge::Series;
use crate::golden::{self, GoldenError, GoldenFile, GoldenName, GoldenStyle, Value};

/// `golden_values_<env>_<platform>.json`.
pub fn golden_file_name(env: &str, platform: &str) -> String {
    GoldenName {
        environment: env.to_string(),
        platform: Some(platform.to_string()),
        second: false,
    }
    .file_name()
}

/// The platform part of a golden file name (`golden_values_dev_dgx_h100.json` → `dgx_h100`);
/// `None` for names without one (`golden_values_lts.json`).
pub fn platform_of(path: &Path) -> Option<String> {
    GoldenName::parse(path.file_name()?.to_str()?)?.platform
}

/// The folder holding the golden files of `case` under one variant: the case folder for the
/// default variant (Megatron's layout), `<case>/variants/<variant slug>/` for any other.
pub fn golden_dir(golden_root: &Path, case: &str, variant_slug: Option<&str>) -> PathBuf {
    let dir = golden_root.join(case);
    match variant_slug {
        None => dir,
        Some(slug) => dir.join(golden::VARIANTS_DIR).join(slug),
    }
}

/// The golden file for `case` on `platform`: env `dev` before `lts`. The default variant
/// (`variant_slug` `None`) looks in goldgate's golden tree (`<golden_root>/<case>/`), then
/// beside the case (`<root>/<case>/`, Megatron's layout); another variant looks only in its
/// own folder, so a variant is never judged against another variant's values.
pub fn find_golden(
    golden_root: &Path,
    root: &Path,
    case: &str,
    platform: &str,
    variant_slug: Option<&str>,
) -> Option<PathBuf> {
    let dirs = match variant_slug {
        None => vec![golden_dir(golden_root, case, None), root.join(case)],
        Some(_) => vec![golden_dir(golden_root, case, variant_slug)],
    };
    ["dev", "lts"].iter().find_map(|env| {
        let name = golden_file_name(env, platform);
        // Any file by that name, not only a regular one: a FIFO or a link to a device where a
        // golden should be is reported with its path when read, never as "no golden file".
        dirs.iter()
            .map(|d| d.join(&name))
            .find(|p| crate::fsio::exists(p))
    })
}

/// Reads a golden file into metric → series (`"nan"` as NaN). Errors name the file.
pub fn load(path: &Path) -> Result<BTreeMap<String, Series>, GoldenError> {
    Ok(to_series(&golden::read_golden(path)?))
}

/// Reads a golden file into its series and the per-job samples it keeps for the two-sample
/// test (none for files written before they existed). Errors name the file.
pub fn load_with_samples(
    path: &Path,
) -> Result<(BTreeMap<String, Series>, GoldenSamples), GoldenError> {
    let file = golden::read_golden(path)?;
    let samples = golden_samples::from_golden(path, &file)?;
    Ok((to_series(&file), samples))
}

/// The series of a parsed golden file.
pub fn to_series(file: &GoldenFile) -> BTreeMap<String, Series> {
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
pub fn to_golden_file_with_samples(
    metrics: &BTreeMap<String, Series>,
    samples: &GoldenSamples,
) -> GoldenFile {
    let mut file = to_golden_file(metrics);
    if !samples.is_empty() {
        file.extra.push((
            golden_samples::SAMPLES_KEY.to_string(),
            golden_samples::to_json(samples),
        ));
    }
    file
}

/// A golden file in Megatron's current style (4-space indent, no trailing newline; the
/// writer rounds to 5 decimals). `step_interval` is the smallest gap between steps.
pub fn to_golden_file(metrics: &BTreeMap<String, Series>) -> GoldenFile {
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
        style: GoldenStyle::Indented,
        trailing_newline: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_from_file_names() {
        for (name, want) in [
            ("golden_values_dev_dgx_h100.json", Some("dgx_h100")),
            (
                "golden_values_lts_dgxa100_dracooci-ord.json",
                Some("dgxa100_dracooci-ord"),
            ),
            ("golden_values_dev_dgx_gb200_2nd.json", Some("dgx_gb200")),
            ("golden_values_lts.json", None),
        ] {
            assert_eq!(platform_of(Path::new(name)).as_deref(), want, "{name}");
        }
        assert_eq!(
            golden_file_name("dev", "h200"),
            "golden_values_dev_h200.json"
        );
    }

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
