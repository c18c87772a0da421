//! Stage "compare": `bless` — turns recorded results into golden files.
//!
//! One golden file per case and platform holds the case's DEFAULT variant (no axis chosen, or
//! every axis at its default): a golden file is what `compare` judges every variant of the
//! case against, so it must describe the case as written. Repeats are combined as `compare`
//! combines them: per-step metrics by the median at each step (finite values only), metrics
//! judged by one value per repeat by the median of those values (`golden::band::reduce_repeats`). Every recorded metric is written: Megatron's keys and
//! goldgate's own (memory peaks, checkpoint times) as extra keys, and every blessed job's own
//! values of the window, scalar and per-save metrics under one more key for the two-sample
//! test (`golden_samples`). A failed repeat of the
//! default variant makes bless refuse (exit 2, naming the job): a usage problem, since the
//! user asked to bless something that did not run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::compare::error::CompareError;
use crate::compare::golden::band::{Series, reduce, representative};
use crate::compare::golden::engine::{Group, golden_variant, group, read_golden};
use crate::compare::golden::io;
use crate::compare::golden::samples::GoldenSamples;
use crate::compare::stats::summary;
use goldgate_core::rules::RuleSet;
use goldgate_schema::RunRecord;
use goldgate_schema::Unit;

/// One golden file bless would write.
#[derive(Clone, Debug, PartialEq)]
pub struct BlessFile {
    pub case: String,
    pub path: PathBuf,
    pub job_ids: Vec<String>,
    /// The new values.
    pub metrics: BTreeMap<String, Series>,
    /// Each blessed job's own values of the metrics judged over repeats.
    pub samples: GoldenSamples,
    /// The current file's values; `Err` with the problem when it exists but cannot be read.
    pub old: Option<Result<BTreeMap<String, Series>, String>>,
}

/// Decides what to write. `cases` empty = every case found.
pub fn plan(
    records: Vec<(PathBuf, RunRecord)>,
    golden_root: &Path,
    platform: Option<&str>,
    cases: &[String],
    results_dir: &Path,
    axis_defaults: &BTreeMap<String, String>,
    rules: &RuleSet,
) -> Result<Vec<BlessFile>, CompareError> {
    let mut by_case: BTreeMap<String, Vec<Group>> = BTreeMap::new();
    for ((case, _), g) in group(records) {
        by_case.entry(case).or_default().push(g);
    }
    for case in cases {
        if !by_case.contains_key(case) {
            return Err(CompareError::UnknownCase {
                case: case.clone(),
                dir: results_dir.to_path_buf(),
            });
        }
    }
    let mut files = Vec::new();
    for (case, groups) in by_case {
        if !cases.is_empty() && !cases.contains(&case) {
            continue;
        }
        // The default variant's golden is the case's own file (Megatron's layout); every
        // other variant gets `variants/<slug>/` beside it.
        for g in &groups {
            let variant = golden_variant(&g[0].1, axis_defaults);
            let mut file = bless_group(g, golden_root, platform, variant.as_deref(), rules)?;
            file.samples = job_samples(g, rules);
            files.push(file);
        }
    }
    Ok(files)
}

fn bless_group(
    g: &Group,
    golden_root: &Path,
    platform: Option<&str>,
    variant: Option<&str>,
    rules: &RuleSet,
) -> Result<BlessFile, CompareError> {
    if let Some((_, r)) = g.iter().find(|(_, r)| !r.outcome.passed()) {
        return Err(CompareError::BlessFailed {
            job: r.job_id.clone(),
            outcome: r.outcome.label(),
        });
    }
    let first = &g[0].1;
    let platform = platform.unwrap_or(&first.platform);
    // The names come from results.json and the command line: neither may lead out of the root.
    goldgate_core::fsio::check_relative("case", &first.case)
        .and_then(|()| goldgate_core::fsio::check_component("platform", platform))
        .map_err(|message| CompareError::UnsafeName {
            case: first.case.clone(),
            message,
        })?;
    let path = goldgate_core::golden::golden_dir(golden_root, &first.case, variant)
        .join(goldgate_core::golden::golden_file_name("dev", platform));
    let old =
        goldgate_core::fsio::exists(&path).then(|| read_golden(&path).map_err(|e| e.to_string()));
    Ok(BlessFile {
        case: first.case.clone(),
        path,
        job_ids: g.iter().map(|(_, r)| r.job_id.clone()).collect(),
        metrics: golden_series(g, rules),
        samples: GoldenSamples::default(),
        old,
    })
}

/// Every job's own series of each metric its rule judges over repeats (window, scalar,
/// per-save), for the two-sample test; per-step metrics are left out (Megatron's check reads
/// the per-step median only).
fn job_samples(g: &Group, rules: &RuleSet) -> GoldenSamples {
    let mut metrics: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    let names: std::collections::BTreeSet<&String> =
        g.iter().flat_map(|(_, r)| r.metrics.keys()).collect();
    for name in names {
        if !rules.find(name).is_some_and(|r| r.is_distribution()) {
            continue;
        }
        let per_job: Option<Vec<Series>> = g
            .iter()
            .map(|(_, r)| r.metrics.get(name).map(|s| s.0.clone()))
            .collect();
        // A metric some job lacks cannot be tested job against job: keep none of it.
        if let Some(per_job) = per_job {
            metrics.insert(name.clone(), per_job);
        }
    }
    GoldenSamples {
        jobs: g.iter().map(|(_, r)| r.job_id.clone()).collect(),
        metrics,
    }
}

/// The golden series of each metric: per-step metrics keep the median over repeats at each
/// step (Megatron's check reads it step by step, as `compare` combines repeats); a metric
/// judged by one value per repeat (window, scalar, per-save) gets a series whose value is the
/// median over repeats of each repeat's value (`golden::band::representative`), the one reduction
/// `compare` applies to the repeats it judges.
fn golden_series(g: &Group, rules: &RuleSet) -> BTreeMap<String, Series> {
    let mut out = median_series(g);
    for (name, series) in out.iter_mut() {
        let Some(rule) = rules.find(name).filter(|r| r.is_distribution()) else {
            continue;
        };
        let repeats: Option<Vec<&Series>> = g
            .iter()
            .map(|(_, r)| r.metrics.get(name).map(|s| &s.0))
            .collect();
        let last = series.keys().next_back().copied().unwrap_or(0);
        if let Some(one) = repeats.and_then(|rs| representative(rule, &rs, last)) {
            *series = one;
        }
    }
    out
}

/// Per metric and step, the median over repeats of the finite values (NaN when none).
fn median_series(g: &Group) -> BTreeMap<String, Series> {
    let mut steps: BTreeMap<&str, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
    for (_, r) in g {
        for (metric, values) in &r.metrics {
            let per_step = steps.entry(metric).or_default();
            for (step, v) in &values.0 {
                let slot = per_step.entry(*step).or_default();
                if v.is_finite() {
                    slot.push(*v);
                }
            }
        }
    }
    steps
        .into_iter()
        .map(|(m, per_step)| {
            let series = per_step
                .into_iter()
                .map(|(s, vals)| (s, summary::median(&vals).unwrap_or(f64::NAN)))
                .collect();
            (m.to_string(), series)
        })
        .collect()
}

/// Writes every file atomically (temp file in the same folder + rename), each under
/// `golden_root` and through no symbolic link.
pub fn write(files: &[BlessFile], golden_root: &Path) -> Result<(), CompareError> {
    for f in files {
        let file = io::to_golden_file_with_samples(&f.metrics, &f.samples);
        goldgate_core::golden::write_golden(golden_root, &f.path, &file)?;
    }
    Ok(())
}

/// The per-metric old-vs-new summary printed before writing.
pub fn render_diff(files: &[BlessFile], rules: &RuleSet) -> String {
    let mut out = String::new();
    for f in files {
        let state = match &f.old {
            None => "new file".to_string(),
            Some(Ok(_)) => "update".to_string(),
            Some(Err(problem)) => format!("replace unreadable file: {problem}"),
        };
        let _ = writeln!(
            out,
            "{} -> {} ({state}; from {})",
            f.case,
            f.path.display(),
            f.job_ids.join(", ")
        );
        if !f.samples.is_empty() {
            let names: Vec<&str> = f.samples.metrics.keys().map(String::as_str).collect();
            let _ = writeln!(
                out,
                "  per-job samples of {} job(s) kept for the two-sample test: {}",
                f.samples.jobs.len(),
                names.join(", ")
            );
        }
        let empty = BTreeMap::new();
        let old = match &f.old {
            Some(Ok(m)) => m,
            _ => &empty,
        };
        let names: std::collections::BTreeSet<&String> =
            old.keys().chain(f.metrics.keys()).collect();
        for name in names {
            let line = match (old.get(name), f.metrics.get(name)) {
                (Some(o), Some(n)) => {
                    let (os, ov) = summary(name, o, rules);
                    let (ns, nv) = summary(name, n, rules);
                    format!("  {name}: {os} -> {ns}{}", change(ov, nv))
                }
                (None, Some(n)) => format!("+ {name}: {}", summary(name, n, rules).0),
                (Some(o), None) => {
                    format!(
                        "- {name}: {} (dropped: not recorded)",
                        summary(name, o, rules).0
                    )
                }
                (None, None) => continue,
            };
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// A one-line description of a series and the value it is judged by.
fn summary(name: &str, s: &Series, rules: &RuleSet) -> (String, Option<f64>) {
    let rule = rules.find(name);
    let unit = rule.map_or(Unit::Plain, |r| r.unit);
    let last_step = s.keys().next_back().copied().unwrap_or(0);
    let nan = s.values().filter(|v| !v.is_finite()).count();
    let nan_text = if nan > 0 {
        format!(" ({nan} nan)")
    } else {
        String::new()
    };
    let reduced = match rule {
        Some(r) if r.is_distribution() => reduce(r, s, last_step),
        _ => s
            .iter()
            .rev()
            .find(|(_, v)| v.is_finite())
            .map(|(step, v)| (*v, format!("{} steps, at step {step}", s.len()))),
    };
    match reduced {
        Some((v, how)) => (format!("{} [{how}]{nan_text}", short(v, unit)), Some(v)),
        None => (format!("no finite value{nan_text}"), None),
    }
}

fn change(old: Option<f64>, new: Option<f64>) -> String {
    match (old, new) {
        (Some(o), Some(n)) if o == n => " (unchanged)".into(),
        (Some(o), Some(n)) if o != 0.0 => format!(" ({:+.1}%)", (n - o) / o.abs() * 100.0),
        _ => String::new(),
    }
}

fn short(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes => goldgate_core::units::bytes(v),
        Unit::Seconds => format!("{} s", goldgate_core::golden::round5(v)),
        Unit::Count | Unit::Plain => format!("{}", goldgate_core::golden::round5(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{CompareOptions, compare_records};
    use goldgate_schema::Verdict;
    use goldgate_schema::metric_names::{CHECKPOINT_ASYNC_LATENCY, CHECKPOINT_BLOCKING, HOST_PEAK};

    /// The lines bless prints before writing show bytes in the unit that fits them: a 16 MiB
    /// peak reads `16.4 MiB`, not `0.016 GiB`.
    #[test]
    fn bless_writes_bytes_in_the_unit_that_fits_them() {
        use goldgate_schema::metric_names::{CKPT_WRITTEN_BYTES, GPU_PEAK};
        let series = |points: &[(u64, f64)]| points.iter().copied().collect::<Series>();
        let old = BTreeMap::from([
            (HOST_PEAK.to_owned(), series(&[(20, 2.0e9)])),
            (
                CKPT_WRITTEN_BYTES.to_owned(),
                series(&[(10, 779.0), (20, 779.0)]),
            ),
        ]);
        let new = BTreeMap::from([
            (HOST_PEAK.to_owned(), series(&[(20, 17_196_646.0)])),
            (
                CKPT_WRITTEN_BYTES.to_owned(),
                series(&[(10, 67_109_708.0), (20, 67_109_711.0)]),
            ),
            (GPU_PEAK.to_owned(), series(&[(20, 2.0e9)])),
        ]);
        let file = BlessFile {
            case: "m/c".to_owned(),
            path: PathBuf::from("golden/m/c/golden_values_dev_dev_cpu.json"),
            job_ids: vec!["m/c@default#1".to_owned()],
            metrics: new,
            samples: GoldenSamples::default(),
            old: Some(Ok(old)),
        };
        insta::assert_snapshot!(render_diff(&[file], &RuleSet::megatron()));
    }

    /// Repeat `k` of a 20-step job whose per-step times, per-save latencies and peak differ
    /// between repeats so that "median per step, then the window" and "each repeat's window,
    /// then the median" disagree (values of 3 decimals: a golden file keeps 5).
    fn noisy(k: u64) -> (PathBuf, RunRecord) {
        let time: Vec<(u64, f64)> = (1..=20)
            .map(|i| (i, (100 + (i * 37 + k * 53) % 50) as f64 / 1000.0))
            .collect();
        let loss: Vec<(u64, f64)> = (1..=20).map(|i| (i, 10.0 - i as f64 / 8.0)).collect();
        let latency: Vec<(u64, f64)> = [5, 10, 15, 20]
            .iter()
            .map(|s| (*s, (1800 + (s * 71 + k * 29) % 400) as f64 / 1000.0))
            .collect();
        let blocking: Vec<(u64, f64)> = [5, 10, 15, 20]
            .iter()
            .map(|s| (*s, (300 + (s * 13 + k * 41) % 60) as f64 / 1000.0))
            .collect();
        crate::compare::fixtures::record(
            "m/c",
            k as u32,
            &[
                ("iteration-time", &time),
                ("lm loss", &loss),
                (CHECKPOINT_ASYNC_LATENCY, &latency),
                (CHECKPOINT_BLOCKING, &blocking),
                (HOST_PEAK, &[(20, (2_000_000 + k * 3_331 % 7) as f64)]),
            ],
        )
    }

    /// Issue 21 item 5: a run compared with its own bless moves by nothing, for every metric and
    /// any number of repeats, and nothing is unstable.
    #[test]
    fn compare_of_the_just_blessed_run_gives_delta_zero_for_every_metric() {
        let rules = RuleSet::megatron();
        for n in [2, 3, 4, 5] {
            let dir = tempfile::tempdir().unwrap();
            let records: Vec<_> = (1..=n).map(noisy).collect();
            let golden_root = dir.path().join("golden");
            let files = plan(
                records.clone(),
                &golden_root,
                None,
                &[],
                dir.path(),
                &BTreeMap::new(),
                &rules,
            )
            .unwrap();
            write(&files, &golden_root).unwrap();
            let opts = CompareOptions {
                golden_root: golden_root.clone(),
                root: dir.path().join("no-cases"),
                platform: None,
                allow_env_mismatch: false,
                rules: rules.clone(),
                axis_defaults: BTreeMap::new(),
                rules_ref: None,
                current_case: false,
                ab_clock_platforms: Vec::new(),
                clocks: None,
            };
            let c = compare_records(records, &opts).unwrap();
            let metrics = &c.jobs[0].metrics;
            assert_eq!(metrics.len(), 5, "{n} repeats: {metrics:#?}");
            for m in metrics {
                let delta = m.delta_pct.unwrap_or(f64::NAN);
                assert!(
                    delta.abs() < 1e-9,
                    "{n} repeats: {} moved by {delta} %: {m:?}",
                    m.metric
                );
                assert_eq!(m.verdict, Verdict::Pass, "{n} repeats: {m:?}");
            }
        }
    }
}
