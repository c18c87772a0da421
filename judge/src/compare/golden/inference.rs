//! Stage "compare": inference cases, as Megatron's `test_inference_regular_pipeline.py` judges
//! them. Their golden file is keyed by request id (not a metric series) and so is the JSON the
//! job writes to `INFERENCE_OUTPUT_PATH` (`output/inference_output.json` in the job folder).
//! For every request of the golden file and each of the case's `METRICS`: `generated_tokens`
//! equal, `logprobs` within 0.001 each, `generated_text` equal over the shorter length; the
//! top-level `throughput` (median after the first) within 0.9-1.2 × the golden's and
//! `mem-max-allocated-bytes` within 5 %. One row per metric, the worst repeat's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::compare::error::CompareError;
use goldgate_schema::RunRecord;
use goldgate_schema::{MetricResult, Unit, Verdict};

/// Keys of the top level that are not requests.
const NOT_REQUESTS: [&str; 5] = [
    "throughput",
    "lifetime_prefill_token_count",
    "async_sched_step_count",
    "async_sched_compaction_step_count",
    "mem-max-allocated-bytes",
];

/// Largest inference golden or output goldgate reads.
const MAX_BYTES: u64 = 256 << 20;

/// Per-request checks and their tolerance text.
const REQUEST_CHECKS: [(&str, &str); 3] = [
    ("generated_tokens", "exact"),
    ("logprobs", "atol 0.001"),
    ("generated_text", "equal prefix"),
];

/// A JSON document (one that Megatron wrote as a JSON string is unwrapped); `Null` when the
/// text does not parse.
pub(crate) fn read_json(path: &Path) -> Result<Value, CompareError> {
    let text =
        goldgate_core::fsio::read_text(path, MAX_BYTES).map_err(|source| CompareError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    // Some of Megatron's files hold the JSON document as a JSON string.
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(match value {
        Value::String(inner) => serde_json::from_str(&inner).unwrap_or(Value::Null),
        other => other,
    })
}

/// The rows of an inference job: each of `metrics` the golden file has, judged per repeat.
pub(crate) fn judge_inference(
    golden_path: &Path,
    group: &[(PathBuf, RunRecord)],
    metrics: &[String],
) -> Result<Vec<MetricResult>, CompareError> {
    let golden = read_json(golden_path)?;
    let outputs: Vec<Option<Value>> = group
        .iter()
        .map(|(path, _)| {
            let output = path.with_file_name("output").join("inference_output.json");
            read_json(&output).ok().filter(|v| v.is_object())
        })
        .collect();
    let mut rows = Vec::new();
    for metric in metrics {
        let per_repeat: Vec<MetricResult> = outputs
            .iter()
            .filter_map(|now| judge_one(metric, &golden, now.as_ref()))
            .collect();
        let n = per_repeat.len();
        if let Some(mut worst) = per_repeat.into_iter().max_by_key(|r| r.verdict) {
            worst.repeats = n;
            rows.push(worst);
        }
    }
    Ok(rows)
}

fn row(metric: &str, tolerance: &str, verdict: Verdict, detail: String) -> MetricResult {
    MetricResult {
        metric: metric.to_owned(),
        verdict,
        golden: None,
        now: None,
        delta_pct: None,
        interval: None,
        tolerance: tolerance.to_owned(),
        unit: Unit::of_metric(metric),
        repeats: 1,
        detail,
        band: None,
        pass_reason: None,
    }
}

/// One metric of one repeat; `None` when the golden file does not hold the metric.
fn judge_one(metric: &str, golden: &Value, now: Option<&Value>) -> Option<MetricResult> {
    if let Some((_, tolerance)) = REQUEST_CHECKS.iter().find(|(m, _)| *m == metric) {
        let requests = requests(golden, metric);
        if requests.is_empty() {
            return None;
        }
        let Some(now) = now else {
            let detail = "the job wrote no inference output".to_owned();
            return Some(row(metric, tolerance, Verdict::MissingMetric, detail));
        };
        return Some(judge_requests(metric, tolerance, &requests, now));
    }
    let want = golden.get(metric)?;
    let Some(got) = now.and_then(|n| n.get(metric)) else {
        let detail = "not in the job's inference output".to_owned();
        return Some(row(metric, "", Verdict::MissingMetric, detail));
    };
    let (golden_v, now_v) = (median_after_first(want)?, median_after_first(got)?);
    let (low, high, tolerance) = match metric {
        "throughput" => (0.9, 1.2, "0.9-1.2 x golden"),
        _ => (0.95, 1.05, "rtol 5%"),
    };
    let ratio = now_v / golden_v;
    let verdict = match (ratio < low, ratio >= high, metric == "throughput") {
        (true, _, true) | (_, true, false) => Verdict::Regression,
        (_, true, true) | (true, _, false) => Verdict::Improvement,
        _ => Verdict::Pass,
    };
    let mut result = row(metric, tolerance, verdict, String::new());
    result.golden = Some(golden_v);
    result.now = Some(now_v);
    result.delta_pct = Some((ratio - 1.0) * 100.0);
    Some(result)
}

/// The golden requests (id, value of `metric`) that hold the metric.
fn requests<'g>(golden: &'g Value, metric: &str) -> Vec<(&'g str, &'g Value)> {
    let Some(map) = golden.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(id, _)| !NOT_REQUESTS.contains(&id.as_str()))
        .filter_map(|(id, r)| Some((id.as_str(), r.get(metric)?)))
        .collect()
}

fn judge_requests(
    metric: &str,
    tolerance: &str,
    requests: &[(&str, &Value)],
    now: &Value,
) -> MetricResult {
    let mut bad = Vec::new();
    for (id, want) in requests {
        let got = now.get(*id).and_then(|r| r.get(metric));
        if let Some(problem) = mismatch(metric, want, got) {
            bad.push(format!("request {id}: {problem}"));
        }
    }
    let n = requests.len();
    match bad.first() {
        None => row(
            metric,
            tolerance,
            Verdict::Pass,
            format!("{n} request(s) match"),
        ),
        Some(first) => {
            let detail = format!("{} of {n} request(s) differ; {first}", bad.len());
            row(metric, tolerance, Verdict::Regression, detail)
        }
    }
}

/// Why one request's value differs, as Megatron's check would say.
fn mismatch(metric: &str, want: &Value, got: Option<&Value>) -> Option<String> {
    let Some(got) = got else {
        return Some("missing from the job's output".to_owned());
    };
    match metric {
        "logprobs" => {
            let (w, g) = (numbers(want), numbers(got));
            if w.len() != g.len() {
                return Some(format!("{} logprobs, golden {}", g.len(), w.len()));
            }
            let at = w.iter().zip(&g).position(|(a, b)| (a - b).abs() > 0.001)?;
            Some(format!("logprob {at}: {:.5} vs golden {:.5}", g[at], w[at]))
        }
        "generated_text" => {
            let (w, g) = (want.as_str().unwrap_or(""), got.as_str().unwrap_or(""));
            let n = w.chars().count().min(g.chars().count());
            let prefix = |s: &str| s.chars().take(n).collect::<String>();
            (n == 0 || prefix(w) != prefix(g)).then(|| "text differs".to_owned())
        }
        _ => (want != got).then(|| "tokens differ".to_owned()),
    }
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// A number, or the median of a list after its first (warm-up) entry.
fn median_after_first(v: &Value) -> Option<f64> {
    let mut values = match v {
        Value::Array(items) => {
            let all: Vec<f64> = items.iter().filter_map(Value::as_f64).collect();
            if all.len() > 1 {
                all[1..].to_vec()
            } else {
                all
            }
        }
        other => vec![other.as_f64()?],
    };
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(match values.len() % 2 {
        0 => (values[mid - 1] + values[mid]) / 2.0,
        _ => values[mid],
    })
}
