//! Stage "compare": groups recorded jobs by case and variant (repeats together), finds each
//! one's golden file, checks the platform, and judges every metric into a [`Comparison`].
//!
//! `goldgate compare`, `goldgate run` and `goldgate comment` all call [`compare_dir`] (or
//! [`compare_records`] with records already in memory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::band::{self, Series};
use super::io;
use super::platform;
use super::two_sample;
use crate::compare::error::CompareError;
use crate::compare::options::CompareOptions;
use goldgate_schema::RunRecord;
use goldgate_schema::metric_names::{CHECKPOINT_ASYNC_LATENCY, GOLDGATE_METRICS};
use goldgate_schema::{Comparison, JobComparison, MetricResult, Verdict};

/// Whether a record ran its case's default variant: every chosen value is its axis's default.
pub fn is_default_variant(r: &RunRecord, axis_defaults: &BTreeMap<String, String>) -> bool {
    golden_variant(r, axis_defaults).is_none()
}

/// The folder name of a record's variant golden files ([`goldgate_core::golden::variant_key`]): the
/// key the run recorded (`judging.golden.variant`), else its non-default choices under
/// `axis_defaults`; `None` for the default variant, whose golden is the case's own file.
pub fn golden_variant(r: &RunRecord, axis_defaults: &BTreeMap<String, String>) -> Option<String> {
    if let Some(judging) = &r.judging {
        return judging.golden.variant.clone();
    }
    let choices = r.variant.choices.iter();
    goldgate_core::golden::variant_key(
        choices.map(|(a, v)| (a.as_str(), v.as_str())),
        axis_defaults,
    )
}

/// The repeats of one job, sorted by repeat.
pub(crate) type Group = Vec<(PathBuf, RunRecord)>;

/// Records grouped by `(case, variant name)`, sorted.
pub(crate) fn group(records: Vec<(PathBuf, RunRecord)>) -> BTreeMap<(String, String), Group> {
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    for (path, r) in records {
        groups
            .entry((r.case.clone(), r.variant.name.clone()))
            .or_default()
            .push((path, r));
    }
    for g in groups.values_mut() {
        g.sort_by_key(|(_, r)| r.repeat);
    }
    groups
}

/// Loads every `results.json` under `results` and compares it (an incomplete run is an error).
pub fn compare_dir(results: &Path, opts: &CompareOptions) -> Result<Comparison, CompareError> {
    let (records, _) =
        crate::compare::runs::load_runs(results, &crate::compare::runs::RunSelection::All)?;
    compare_records(records, opts)
}

/// Compares records already loaded (`(results.json path, record)` pairs).
pub fn compare_records(
    records: Vec<(PathBuf, RunRecord)>,
    opts: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let platform = opts
        .platform
        .clone()
        .or_else(|| records.first().map(|(_, r)| r.platform.clone()))
        .unwrap_or_default();
    let mut warnings = Vec::new();
    if let Some((_, by)) = opts.clocks_by_ab(&platform) {
        warnings.push(format!(
            "{platform} gates no clocks against golden values ({by}): \
             iteration, save and async-completion times are reported here and gated by \
             `goldgate ab`, which runs A and B on this machine at the same time"
        ));
    }
    let mut jobs = Vec::new();
    for group in group(records).into_values() {
        jobs.push(compare_job(&group, opts, &mut warnings)?);
    }
    Ok(Comparison::new(platform, jobs, warnings))
}

/// A job's comparison before judging: names, ids, records; verdict `Pass`, no metrics.
pub fn skeleton(group: &[(PathBuf, RunRecord)], opts: &CompareOptions) -> JobComparison {
    let first = &group[0].1;
    let config = opts.root.join(&first.case).join("model_config.yaml");
    JobComparison {
        case: first.case.clone(),
        variant: first.variant.name.clone(),
        variant_slug: first.variant.slug.clone(),
        job_ids: group.iter().map(|(_, r)| r.job_id.clone()).collect(),
        outcome: first.outcome.label(),
        failure_line: None,
        log_tail: Vec::new(),
        log: None,
        verdict: Verdict::Pass,
        golden_path: None,
        config_path: config.is_file().then_some(config),
        metrics: Vec::new(),
        records: group.iter().map(|(p, _)| p.clone()).collect(),
        wall_seconds: Some(group.iter().map(|(_, r)| r.wall_seconds).sum()),
        svg: None,
    }
}

/// Judges one job (its repeats together).
pub(crate) fn compare_job(
    group: &Group,
    opts: &CompareOptions,
    warnings: &mut Vec<String>,
) -> Result<JobComparison, CompareError> {
    let mut job = skeleton(group, opts);
    let eval = super::evaluation::evaluation(group, opts, job.config_path.as_deref(), warnings)?;
    if let Some((path, failed)) = group.iter().find(|(_, r)| !r.outcome.passed()) {
        failed_job(&mut job, path, failed, &eval, warnings);
        return Ok(job);
    }
    if eval.skip_checks {
        let (case, variant) = (&job.case, &job.variant);
        warnings.push(format!(
            "{case} ({variant}): SKIP_PYTEST=1: judged by its exit code alone, metrics not compared"
        ));
        return Ok(job);
    }
    let first = &group[0].1;
    let platform = opts.platform.as_deref().unwrap_or(&first.platform);
    let variant = golden_variant(first, &opts.axis_defaults);
    let Some(path) = goldgate_core::golden::find_golden(
        &opts.golden_root,
        &opts.root,
        &first.case,
        platform,
        variant.as_deref(),
    ) else {
        job.verdict = Verdict::MissingGolden;
        return Ok(job);
    };
    check_platform(group, &path, platform, opts.allow_env_mismatch, warnings)?;
    let selected = eval.metrics.map(|mut metrics| {
        metrics.extend(GOLDGATE_METRICS.iter().map(|m| m.to_string()));
        metrics
    });
    if eval.inference {
        return judge_inference(job, group, &path, selected.as_deref().unwrap_or(&[]));
    }
    judge_against(job, group, &path, selected.as_deref(), opts, warnings)
}

/// A job a repeat of which did not pass: its failure (line, log tail, log), and its verdict:
/// a pass when the case expected this failure ([`super::evaluation::failed_as_expected`]),
/// else `JobFailed`.
fn failed_job(
    job: &mut JobComparison,
    path: &Path,
    failed: &RunRecord,
    eval: &super::evaluation::Evaluation,
    warnings: &mut Vec<String>,
) {
    job.outcome = failed.outcome.label();
    if let Some(last) = failed.attempts.last() {
        job.failure_line = last.failure_line.clone();
        job.log_tail = last.log_tail.clone();
        job.log = (!last.log.as_os_str().is_empty())
            .then(|| path.parent().map(|dir| dir.join(&last.log)))
            .flatten();
    }
    let (case, variant) = (&job.case, &job.variant);
    if super::evaluation::failed_as_expected(&failed.outcome, eval.expect_failure) {
        job.verdict = Verdict::Pass;
        warnings.push(format!(
            "{case} ({variant}): training {} as expected (TEST_EVALUATION: xpass): passes",
            job.outcome
        ));
        return;
    }
    job.verdict = Verdict::JobFailed;
    if eval.expect_failure {
        warnings.push(format!(
            "{case} ({variant}): TEST_EVALUATION: xpass expects the training itself to fail; {} \
             is not such a failure: the job failed",
            job.outcome
        ));
    }
}

/// An inference job against its request-keyed golden file.
fn judge_inference(
    mut job: JobComparison,
    group: &Group,
    path: &Path,
    metrics: &[String],
) -> Result<JobComparison, CompareError> {
    job.golden_path = Some(path.to_path_buf());
    job.metrics = super::inference::judge_inference(path, group, metrics)?;
    job.verdict = worst_verdict(&job.metrics);
    Ok(job)
}

/// Judges the repeats of one passed job against the golden file at `path` (no lookup, no
/// platform check): the core of [`compare_job`], public for benchmarks and `goldgate run`.
/// `selected`: the metrics to compare (the case's `METRICS`); `None` = every golden metric.
pub fn judge_against(
    mut job: JobComparison,
    group: &[(PathBuf, RunRecord)],
    path: &Path,
    selected: Option<&[String]>,
    opts: &CompareOptions,
    warnings: &mut Vec<String>,
) -> Result<JobComparison, CompareError> {
    let first = &group[0].1;
    job.golden_path = Some(path.to_path_buf());
    // One read gives the series, the per-job samples (two-sample test) and the metrics of a
    // shape goldgate cannot compare.
    let file = goldgate_core::golden::read_golden(path)?;
    for d in &file.duplicates {
        warnings.push(format!("{}:{}: {}", path.display(), d.line, d.describe()));
    }
    let samples = super::samples::from_golden(path, &file)?;
    let golden = io::to_series(&file);
    let nondeterministic = group.iter().any(|(_, r)| r.nondeterministic);
    let wanted = |m: &String| selected.is_none_or(|list| list.contains(m));
    for (metric, shape) in file.unsupported.iter().filter(|(m, _)| wanted(m)) {
        warnings.push(format!(
            "{} ({}): `{metric}` not compared: unsupported shape in {} ({shape})",
            job.case,
            job.variant,
            path.display()
        ));
    }
    for (metric, series) in golden.iter().filter(|(m, _)| wanted(m)) {
        let Some(rule) = opts.rules.find(metric) else {
            warnings.push(format!(
                "{}: no rule for metric `{metric}`; not compared",
                job.case
            ));
            continue;
        };
        let repeats: Vec<Option<&Series>> = group
            .iter()
            .map(|(_, r)| r.metrics.get(metric).map(|s| &s.0))
            .collect();
        let result = if rule.wants_two_sample() {
            two_sample::judge(metric, rule, series, &samples, &repeats, nondeterministic)
        } else {
            band::judge(metric, rule, series, &repeats, nondeterministic)
        };
        job.metrics.push(not_sampled(result, group));
    }
    let resumed = super::resumed::judge_resumed(group, selected, &opts.rules, nondeterministic);
    job.metrics.extend(resumed);
    let unsupported = |m: &String| file.unsupported.iter().any(|(u, _)| u == m);
    for metric in first
        .metrics
        .keys()
        .filter(|m| !golden.contains_key(*m) && !unsupported(m))
    {
        warnings.push(format!(
            "{}: `{metric}` was recorded but {} has no golden value for it",
            job.case,
            path.display()
        ));
    }
    let platform = opts.platform.as_deref().unwrap_or(&first.platform);
    if let Some((by, _)) = opts.clocks_by_ab(platform) {
        report_clocks(&mut job, platform, by, warnings);
    }
    flag_overlapping_saves(&mut job, group, warnings);
    set_verdict(&mut job, warnings);
    Ok(job)
}

/// A metric missing from repeats whose samplers tried and could not read it (each record's
/// `memory.not_sampled` says why) is `not-sampled`, not missing: no regression, and no pass of
/// that metric either.
fn not_sampled(mut result: MetricResult, group: &[(PathBuf, RunRecord)]) -> MetricResult {
    if result.verdict != Verdict::MissingMetric {
        return result;
    }
    // The reasons, each with the repeats that give it.
    let mut why: Vec<(&str, Vec<String>)> = Vec::new();
    for (i, (_, r)) in group.iter().enumerate() {
        if r.metrics.contains_key(&result.metric) {
            continue;
        }
        let Some(reason) = r.memory.not_sampled.get(&result.metric) else {
            return result; // not recorded, and nothing says why: missing
        };
        match why.iter_mut().find(|(w, _)| w == reason) {
            Some((_, repeats)) => repeats.push((i + 1).to_string()),
            None => why.push((reason, vec![(i + 1).to_string()])),
        }
    }
    if why.is_empty() {
        return result;
    }
    let said: Vec<String> = why
        .iter()
        .map(|(reason, repeats)| {
            let s = if repeats.len() == 1 { "" } else { "s" };
            format!("repeat{s} {}: {reason}", repeats.join(", "))
        })
        .collect();
    result.verdict = Verdict::NotSampled;
    result.detail = format!("not sampled, so not judged ({})", said.join("; "));
    result
}

/// On a platform with `clocks: ab`, a clock beyond its band (a time: `iteration-time`,
/// `checkpoint-blocking-time`, …) passes, saying what the band alone would have said: a shared
/// runner's load moves every clock, so an idle day's golden cannot gate them there; `goldgate
/// ab` does, with both arms under the same load. A clock that is missing still fails.
fn report_clocks(job: &mut JobComparison, platform: &str, by: &str, warnings: &mut Vec<String>) {
    let mut beyond = Vec::new();
    for m in job.metrics.iter_mut().filter(|m| {
        m.unit == goldgate_schema::Unit::Seconds
            && matches!(
                m.verdict,
                Verdict::Regression | Verdict::Improvement | Verdict::Unstable
            )
    }) {
        let change = m
            .delta_pct
            .map_or(String::new(), |d| format!(" ({d:+.1} %)"));
        beyond.push(format!("`{}` {}{change}", m.metric, m.verdict.label()));
        m.pass_reason = Some(format!(
            "not gated on {platform} ({by}): against the golden alone, {}{change}",
            m.verdict.label()
        ));
        m.verdict = Verdict::Pass;
    }
    if !beyond.is_empty() {
        warnings.push(format!(
            "{} ({}): not gated on {platform}: {}",
            job.case,
            job.variant,
            beyond.join(", ")
        ));
    }
}

/// A job's verdict: its worst metric's (pass when it has none).
fn worst_verdict(metrics: &[MetricResult]) -> Verdict {
    metrics
        .iter()
        .map(|m| m.verdict)
        .max()
        .unwrap_or(Verdict::Pass)
}

/// The job's verdict is its worst metric's; each unstable metric is also a warning.
fn set_verdict(job: &mut JobComparison, warnings: &mut Vec<String>) {
    job.verdict = worst_verdict(&job.metrics);
    for m in job
        .metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Unstable)
    {
        warnings.push(format!(
            "{} ({}): `{}` is unstable: {}",
            job.case, job.variant, m.metric, m.detail
        ));
    }
}

/// Says which async saves overlapped the next save (their latency was left out of
/// `checkpoint-async-latency` when the record was built): in the metric's detail, which the
/// tables and the PR comment show, and as a warning.
fn flag_overlapping_saves(
    job: &mut JobComparison,
    group: &[(PathBuf, RunRecord)],
    warnings: &mut Vec<String>,
) {
    let per_repeat: Vec<String> = group
        .iter()
        .filter_map(|(_, r)| {
            let its: Vec<String> = (r.checkpoints.iter())
                .filter(|c| c.overlapped_by_next)
                .map(|c| c.iteration.to_string())
                .collect();
            (!its.is_empty()).then(|| format!("repeat {}: {}", r.repeat, its.join(", ")))
        })
        .collect();
    if per_repeat.is_empty() {
        return;
    }
    let note = format!(
        "async saves overlapped by the next save, latency left out (iterations): {}",
        per_repeat.join("; ")
    );
    if let Some(m) = (job.metrics.iter_mut()).find(|m| m.metric == CHECKPOINT_ASYNC_LATENCY) {
        m.detail = if m.detail.is_empty() {
            note.clone()
        } else {
            format!("{}; {note}", m.detail)
        };
    }
    warnings.push(format!(
        "{} ({}): {note}: a save started before the previous one finished (Megatron: \"Starting a \
         checkpoint save before previous has finished\"); space the saves further apart",
        job.case, job.variant
    ));
}

/// Reads a golden file for comparison; any problem names the file (exit 2).
pub(crate) fn read_golden(path: &Path) -> Result<BTreeMap<String, Series>, CompareError> {
    Ok(io::load(path)?)
}

fn check_platform(
    group: &Group,
    golden: &Path,
    platform: &str,
    allow: bool,
    warnings: &mut Vec<String>,
) -> Result<(), CompareError> {
    let golden_platform =
        goldgate_core::golden::platform_of(golden).unwrap_or_else(|| platform.to_string());
    for (_, r) in group {
        if let Err(problem) = platform::check(&golden_platform, &r.fingerprint) {
            if !allow {
                return Err(CompareError::EnvMismatch {
                    job: r.job_id.clone(),
                    golden: golden.to_path_buf(),
                    problem,
                });
            }
            warnings.push(format!(
                "{}: {problem} (allowed by --allow-env-mismatch)",
                r.job_id
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::rules::RuleSet;
    use goldgate_schema::metric_names::{CHECKPOINT_BLOCKING, CKPT_WRITTEN_BYTES, ITERATION_TIME};

    /// A golden of the default variant of `m/c` on dev_cpu: 0.1 s steps, 0.2 s saves, 1 MiB
    /// written per save.
    fn golden(root: &Path) {
        let text = r#"{
  "iteration-time": {"start_step": 1, "end_step": 6, "step_interval": 1,
    "values": {"1": 0.1, "2": 0.1, "3": 0.1, "4": 0.1, "5": 0.1, "6": 0.1}},
  "checkpoint-blocking-time": {"start_step": 2, "end_step": 6, "step_interval": 2,
    "values": {"2": 0.2, "4": 0.2, "6": 0.2}},
  "checkpoint-written-bytes": {"start_step": 2, "end_step": 6, "step_interval": 2,
    "values": {"2": 1048576, "4": 1048576, "6": 1048576}}
}"#;
        let path = root.join("golden/m/c/golden_values_dev_dev_cpu.json");
        goldgate_core::fsio::write_atomic(&path, text.as_bytes()).unwrap();
    }

    /// The job now: steps and saves three times slower (a loaded runner), `written` per save.
    fn slower(written: f64) -> Vec<(PathBuf, RunRecord)> {
        let steps: Vec<(u64, f64)> = (1..=6).map(|i| (i, 0.3)).collect();
        let saves = [(2, 0.6), (4, 0.6), (6, 0.6)];
        let bytes = [(2, written), (4, written), (6, written)];
        vec![crate::compare::fixtures::record(
            "m/c",
            1,
            &[
                (ITERATION_TIME, &steps),
                (CHECKPOINT_BLOCKING, &saves),
                (CKPT_WRITTEN_BYTES, &bytes),
            ],
        )]
    }

    fn opts(root: &Path, ab_clocks: &[&str]) -> CompareOptions {
        CompareOptions {
            golden_root: root.join("golden"),
            root: root.join("cases"),
            platform: None,
            allow_env_mismatch: false,
            rules: RuleSet::megatron(),
            axis_defaults: BTreeMap::new(),
            rules_ref: None,
            current_case: false,
            ab_clock_platforms: ab_clocks.iter().map(|p| p.to_string()).collect(),
            clocks: None,
        }
    }

    #[test]
    fn on_a_platform_whose_clocks_ab_gates_a_slow_clock_passes_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        golden(dir.path());
        let gated = compare_records(slower(1_048_576.0), &opts(dir.path(), &[])).unwrap();
        let verdict = |c: &Comparison, m: &str| {
            let found = c.jobs[0].metrics.iter().find(|r| r.metric == m).unwrap();
            (found.verdict, found.pass_reason.clone())
        };
        assert_eq!(verdict(&gated, ITERATION_TIME).0, Verdict::Regression);
        assert_eq!(verdict(&gated, CHECKPOINT_BLOCKING).0, Verdict::Regression);

        let ab = compare_records(slower(1_048_576.0), &opts(dir.path(), &["dev_cpu"])).unwrap();
        assert_eq!(ab.jobs[0].verdict, Verdict::Pass);
        let (v, reason) = verdict(&ab, CHECKPOINT_BLOCKING);
        assert_eq!(v, Verdict::Pass);
        assert_eq!(
            reason.as_deref(),
            Some(
                "not gated on dev_cpu (`clocks: ab`): against the golden alone, regression (+200.0 %)"
            )
        );
        insta::assert_snapshot!(ab.warnings.join("\n"));
    }

    /// The check that runs `goldgate ab` beside the gate says so with `--clocks ab`: on a
    /// platform whose goldens gate clocks, timing is then reported, not gated; `--clocks golden`
    /// gates it on a `clocks: ab` platform.
    #[test]
    fn clocks_ab_on_the_command_line_leaves_timing_to_the_ab_on_any_platform() {
        let dir = tempfile::tempdir().unwrap();
        golden(dir.path());
        let mut o = opts(dir.path(), &[]);
        o.clocks = Some(goldgate_core::config::Clocks::Ab);
        let c = compare_records(slower(1_048_576.0), &o).unwrap();
        assert_eq!(c.jobs[0].verdict, Verdict::Pass);
        let row = (c.jobs[0].metrics.iter())
            .find(|m| m.metric == CHECKPOINT_BLOCKING)
            .unwrap();
        assert_eq!(
            row.pass_reason.as_deref(),
            Some(
                "not gated on dev_cpu (`--clocks ab`): against the golden alone, regression (+200.0 %)"
            )
        );
        assert!(
            c.warnings[0]
                .starts_with("dev_cpu gates no clocks against golden values (`--clocks ab`)"),
            "{:?}",
            c.warnings
        );
        let mut o = opts(dir.path(), &["dev_cpu"]);
        o.clocks = Some(goldgate_core::config::Clocks::Golden);
        let c = compare_records(slower(1_048_576.0), &o).unwrap();
        assert_eq!(c.jobs[0].verdict, Verdict::Regression);
    }

    #[test]
    fn on_a_platform_whose_clocks_ab_gates_a_counter_still_fails() {
        let dir = tempfile::tempdir().unwrap();
        golden(dir.path());
        let c = compare_records(slower(2_097_152.0), &opts(dir.path(), &["dev_cpu"])).unwrap();
        assert_eq!(c.jobs[0].verdict, Verdict::Regression);
        let bytes = (c.jobs[0].metrics.iter())
            .find(|m| m.metric == CKPT_WRITTEN_BYTES)
            .unwrap();
        assert_eq!(bytes.verdict, Verdict::Regression);
    }
}
