//! Stage "compare": the per-job values a golden file keeps for the two-sample test.
//!
//! Megatron's keys hold one value per step — for goldgate's repeated metrics the median over
//! the blessed jobs — which says nothing about how far jobs differ from one another. `bless`
//! therefore also writes, beside Megatron's keys, one top-level key that Megatron's readers
//! ignore (its value is not a series: it has no `values`), holding every blessed job's own
//! series of each window, scalar and per-save metric:
//!
//! ```json
//! "goldgate-samples": {
//!     "jobs": ["gpt/case@default#1", "gpt/case@default#2"],
//!     "metrics": {
//!         "checkpoint-blocking-time": [{"2": 13.41, "4": 2.01}, {"2": 12.8, "4": 1.98}]
//!     }
//! }
//! ```
//!
//! Values are rounded to 5 decimals like Megatron's (`"nan"` for a missing one). A golden file
//! without the key (every file written before it existed, every Megatron file) reads as having
//! no samples, and the two-sample test falls back to the band.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value as Json};

use super::band::Series;
use goldgate_core::golden::{GoldenError, GoldenFile, round5};

/// The top-level key.
pub(crate) const SAMPLES_KEY: &str = "goldgate-samples";

/// Metric → one series per blessed job, in job order.
type JobSeries = BTreeMap<String, Vec<Series>>;

/// The per-job samples of a golden file, with the ids of the jobs they came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GoldenSamples {
    pub jobs: Vec<String>,
    pub metrics: JobSeries,
}

impl GoldenSamples {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }
}

/// The JSON value written under [`SAMPLES_KEY`].
pub(crate) fn to_json(samples: &GoldenSamples) -> Json {
    let metrics: Map<String, Json> = samples
        .metrics
        .iter()
        .map(|(name, jobs)| {
            let jobs = jobs.iter().map(series_json).collect();
            (name.clone(), Json::Array(jobs))
        })
        .collect();
    let mut top = Map::new();
    top.insert(
        "jobs".into(),
        Json::Array(samples.jobs.iter().cloned().map(Json::String).collect()),
    );
    top.insert("metrics".into(), Json::Object(metrics));
    Json::Object(top)
}

fn series_json(series: &Series) -> Json {
    let values = series
        .iter()
        .map(|(step, v)| {
            let v = serde_json::Number::from_f64(round5(*v))
                .map_or_else(|| Json::String("nan".into()), Json::Number);
            (step.to_string(), v)
        })
        .collect();
    Json::Object(values)
}

/// The samples kept in a parsed golden file; `path` names the file in errors.
pub(crate) fn from_golden(path: &Path, file: &GoldenFile) -> Result<GoldenSamples, GoldenError> {
    let Some((_, value)) = file.extra.iter().find(|(k, _)| k == SAMPLES_KEY) else {
        return Ok(GoldenSamples::default());
    };
    let shape = |location: String, message: &str| GoldenError::Shape {
        path: path.to_path_buf(),
        location,
        message: message.to_string(),
    };
    let jobs = match value.get("jobs") {
        Some(Json::Array(ids)) => ids
            .iter()
            .map(|id| id.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| shape(format!("{SAMPLES_KEY}.jobs"), "expected job ids"))?,
        _ => return Err(shape(format!("{SAMPLES_KEY}.jobs"), "expected a list")),
    };
    let Some(Json::Object(metrics)) = value.get("metrics") else {
        return Err(shape(
            format!("{SAMPLES_KEY}.metrics"),
            "expected an object",
        ));
    };
    let mut out = GoldenSamples {
        jobs,
        metrics: BTreeMap::new(),
    };
    for (name, per_job) in metrics {
        let place = || format!("{SAMPLES_KEY}.metrics.{name}");
        let Json::Array(per_job) = per_job else {
            return Err(shape(place(), "expected one object per job"));
        };
        let series = per_job
            .iter()
            .map(parse_series)
            .collect::<Option<Vec<Series>>>()
            .ok_or_else(|| shape(place(), "expected {\"step\": number or \"nan\"} per job"))?;
        out.metrics.insert(name.clone(), series);
    }
    Ok(out)
}

fn parse_series(value: &Json) -> Option<Series> {
    let Json::Object(map) = value else {
        return None;
    };
    map.iter()
        .map(|(step, v)| {
            let step: u64 = step.parse().ok()?;
            let v = match v {
                Json::Number(n) => n.as_f64()?,
                Json::String(s) if s == "nan" => f64::NAN,
                _ => return None,
            };
            Some((step, v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::golden::{parse_golden, render_golden};

    fn samples() -> GoldenSamples {
        GoldenSamples {
            jobs: vec!["m/c@default#1".into(), "m/c@default#2".into()],
            metrics: BTreeMap::from([(
                "checkpoint-blocking-time".to_string(),
                vec![
                    Series::from([(10, 4.0), (20, 2.0123456)]),
                    Series::from([(10, f64::NAN), (20, 2.1)]),
                ],
            )]),
        }
    }

    #[test]
    fn samples_round_trip_through_a_golden_file_that_megatron_can_read() {
        let loss = BTreeMap::from([("lm loss".to_string(), Series::from([(1, 9.5)]))]);
        let mut file = crate::compare::golden::io::to_golden_file(&loss);
        file.extra.push((SAMPLES_KEY.into(), to_json(&samples())));
        let text = render_golden(&file);
        assert!(text.contains("\"20\": 2.01235"), "{text}");
        let back = parse_golden(Path::new("g.json"), &text).unwrap();
        // The key is no metric to a reader of Megatron's format.
        assert_eq!(back.metrics.len(), 1);
        assert_eq!(render_golden(&back), text, "a rewrite keeps the bytes");
        let read = from_golden(Path::new("g.json"), &back).unwrap();
        assert_eq!(read.jobs, samples().jobs);
        let jobs = &read.metrics["checkpoint-blocking-time"];
        assert_eq!(jobs[0][&20], 2.01235);
        assert!(jobs[1][&10].is_nan());
    }

    #[test]
    fn old_goldens_have_no_samples_and_bad_ones_name_the_file() {
        let none = from_golden(Path::new("g.json"), &GoldenFile::default()).unwrap();
        assert!(none.is_empty());
        let mut file = GoldenFile::default();
        let bad = serde_json::json!({"jobs": [], "metrics": {"x": [{"1": true}]}});
        file.extra.push((SAMPLES_KEY.into(), bad));
        let err = from_golden(Path::new("g.json"), &file)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("g.json") && err.contains("goldgate-samples.metrics.x"),
            "{err}"
        );
    }
}
