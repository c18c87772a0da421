//! Stage "metrics": turns what was observed — the log summary, the memory samples of every
//! node, the probe files — into the [`RunRecord`] of `results.json`. Pure functions: the
//! executors in `run/` observe, this module only builds.

use std::collections::BTreeMap;
use std::time::Duration;

use super::sampled::Sampled;
use crate::observe::probe::read::ProbeSummary;
use crate::plan::Job;
use goldgate_core::log::{CheckpointSave, LogSummary};
use goldgate_core::tensorboard::JobScalars;
use goldgate_schema::metric_names::{
    CHECKPOINT_ASYNC_LATENCY, CHECKPOINT_BLOCKING, CKPT_FOLDER_BYTES, GPU_PEAK, HOST_PEAK, SHM_PEAK,
};
use goldgate_schema::{
    Attempt, CheckpointRecord, Fingerprint, GoldenKey, Judging, MemoryRecord, Outcome, ResumedRun,
    RunRecord, SCHEMA_VERSION, StepValues, TensorboardRecord, VariantRecord,
};

/// Memory peaks measured by the samplers, in bytes (`None` when not measured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Peaks {
    pub gpu_above_baseline: Option<u64>,
    /// Peak PSS of the process tree.
    pub host_pss: Option<u64>,
    pub shm: Option<u64>,
}

/// A save's blocking time, the one definition every reader of `checkpoint-blocking-time`
/// gets: the `save-checkpoint` timer's max across ranks; a log without the timer falls back
/// to the time between the `saving` and `successfully saved` lines, for a synchronous save
/// only (an async save's lines span its scheduling, not what blocked training).
pub(crate) fn blocking_seconds(save: &CheckpointSave) -> Option<f64> {
    save.blocking_max_s
        .or(if save.is_async { None } else { save.wall_s })
}

/// Checkpoint records from the log, in save order (their blocking time is the metric
/// `checkpoint-blocking-time`, see [`blocking_seconds`]).
pub(crate) fn checkpoints(summary: &LogSummary) -> Vec<CheckpointRecord> {
    const MB: f64 = 1024.0 * 1024.0;
    summary
        .checkpoints
        .iter()
        .map(|c| CheckpointRecord {
            iteration: c.iteration,
            blocking_min_seconds: c.blocking_min_s,
            saving_to_saved_seconds: c.wall_s,
            asynchronous: c.is_async,
            async_latency_seconds: c.async_latency_s,
            started_before_previous_finished: c.started_before_previous_finished,
            overlapped_by_next: c.overlapped_by_next,
            memory_before_bytes: c.memory_before.map(|m| (m.allocated * MB) as u64),
            memory_after_bytes: c.memory_after.map(|m| (m.allocated * MB) as u64),
            probe: None,
        })
        .collect()
}

/// What was counted besides the log and the samplers' peaks: the probe files and the
/// checkpoint folders' sizes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counted<'a> {
    pub probe: Option<&'a ProbeSummary>,
    /// Bytes of file content in each save's folder, by save iteration.
    pub folders: Option<&'a BTreeMap<u64, u64>>,
}

/// Every metric of the job: the log's per-step series under golden names (long ones thinned,
/// see `downsample`), the checkpoint
/// metrics per save iteration (the log's timings, the probe's per-save counters, the folder
/// sizes), and single-valued metrics (memory peaks, probe figures) keyed
/// by the last step the log printed (0 when it printed none).
pub(crate) fn metrics(
    summary: &LogSummary,
    saves: &[CheckpointRecord],
    peaks: Peaks,
    counted: Counted<'_>,
) -> BTreeMap<String, StepValues> {
    let mut out: BTreeMap<String, StepValues> = summary
        .metrics
        .iter()
        .map(|(name, values)| {
            let thinned = crate::metrics::downsample::downsample(values.iter());
            (name.clone(), StepValues(thinned))
        })
        .collect();
    let per_save = |f: fn(&CheckpointRecord) -> Option<f64>| {
        let values: BTreeMap<u64, f64> = saves
            .iter()
            .filter_map(|c| f(c).map(|v| (c.iteration, v)))
            .collect();
        (!values.is_empty()).then_some(StepValues(values))
    };
    let blocking: BTreeMap<u64, f64> = (summary.checkpoints.iter())
        .filter_map(|c| blocking_seconds(c).map(|v| (c.iteration, v)))
        .collect();
    if !blocking.is_empty() {
        out.insert(CHECKPOINT_BLOCKING.into(), StepValues(blocking));
    }
    // An async save the next save overlapped ends when that save finalizes it: its latency
    // measures the schedule, so it is left out of the metric (and flagged in the record).
    if let Some(v) = per_save(|c| c.async_latency_seconds.filter(|_| !c.overlapped_by_next)) {
        out.insert(CHECKPOINT_ASYNC_LATENCY.into(), v);
    }
    let last = summary.last_step.unwrap_or(0);
    let mut scalar = |name: &str, value: Option<f64>| {
        if let Some(v) = value {
            out.insert(name.to_string(), StepValues(BTreeMap::from([(last, v)])));
        }
    };
    scalar(GPU_PEAK, peaks.gpu_above_baseline.map(|b| b as f64));
    scalar(HOST_PEAK, peaks.host_pss.map(|b| b as f64));
    scalar(SHM_PEAK, peaks.shm.map(|b| b as f64));
    if let Some(p) = counted.probe {
        for (name, value) in p.metrics(saves.len()) {
            scalar(&name, Some(value));
        }
        for (name, series) in p.per_save_metrics() {
            out.insert(name, StepValues(series));
        }
    }
    if let Some(folders) = counted.folders.filter(|f| !f.is_empty()) {
        let series = folders.iter().map(|(&it, &b)| (it, b as f64)).collect();
        out.insert(CKPT_FOLDER_BYTES.into(), StepValues(series));
    }
    out
}

/// What an executor observed of the run that ended a job (the last run of its last attempt).
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The log, parsed.
    pub summary: LogSummary,
    /// The samplers of every node the job ran on, node 0 (rank 0's) first.
    pub nodes: Vec<Sampled>,
    /// Checkpoint saves on the memory timeline: (start s, end s, iteration).
    pub save_marks: Vec<(f64, Option<f64>, u64)>,
    /// The log of the run that resumed from this one's checkpoint (ckpt-resume and
    /// frozen-resume: run 2, while everything above is run 1's).
    pub resumed: Option<LogSummary>,
}

impl Observed {
    /// The memory peaks of the job: each the max across nodes.
    pub fn peaks(&self) -> Peaks {
        let max = |f: fn(&Sampled) -> Option<u64>| self.nodes.iter().filter_map(f).max();
        Peaks {
            gpu_above_baseline: max(Sampled::gpu_peak_above_baseline),
            host_pss: max(Sampled::host_peak_pss),
            shm: max(Sampled::shm_peak),
        }
    }
}

/// Everything about one job's attempts that goes into its record besides the plan.
#[derive(Clone, Debug)]
pub struct JobResult {
    pub run_id: String,
    /// RFC 3339 start of the first attempt.
    pub started_at: String,
    /// Wall time of all attempts.
    pub wall: Duration,
    /// The last attempt's outcome.
    pub outcome: Outcome,
    pub attempts: Vec<Attempt>,
    /// What the last attempt observed; `None` when nothing ran (a launch error).
    pub observed: Option<Observed>,
    pub probe: Option<ProbeSummary>,
    /// Bytes of file content in each save's checkpoint folder, by save iteration (empty when
    /// the job saved none or its folders were not measured).
    pub checkpoint_folders: BTreeMap<u64, u64>,
    /// Where the job ran (rank 0's host).
    pub host: String,
    /// The git commit of the entry script's checkout.
    pub workload_commit: Option<String>,
    /// `run --tensorboard`: each run's TensorBoard folder, read; `None` without the option.
    pub tensorboard: Option<TensorboardRead>,
}

/// One run's TensorBoard folder and what reading it gave (the error's text when it failed).
pub(crate) type FolderRead = (std::path::PathBuf, Result<JobScalars, String>);

/// The TensorBoard folders of a job's runs: the first run's, and a resume test's second.
#[derive(Clone, Debug)]
pub struct TensorboardRead {
    pub first: FolderRead,
    pub resumed: Option<FolderRead>,
}

/// Merges one folder into `metrics` (see `metrics::tensorboard`).
fn merge_folder(
    metrics: &mut BTreeMap<String, StepValues>,
    read: &FolderRead,
    job_dir: &std::path::Path,
    keep: impl Fn(u64) -> bool,
) -> TensorboardRecord {
    match &read.1 {
        Ok(scalars) => crate::metrics::tensorboard::merge(metrics, scalars, job_dir, keep),
        Err(e) => crate::metrics::tensorboard::unreadable(&read.0, job_dir, e.clone()),
    }
}

/// Node 0's memory view (with the run's save marks) and machine fingerprint: rank 0 runs
/// there, and a job's nodes are alike. The host peaks are the maximum across nodes, as the
/// metrics are (each node's own figures are in `nodes`).
fn node0_views(observed: &Observed) -> (MemoryRecord, Fingerprint) {
    let node0 = observed.nodes.first();
    let mut memory = node0.map(Sampled::memory_record).unwrap_or_default();
    if node0.is_some() {
        memory.timeline.saves = observed.save_marks.clone();
    }
    if observed.nodes.len() > 1 {
        let max = |f: fn(&Sampled) -> Option<u64>| observed.nodes.iter().filter_map(f).max();
        memory.host_peak_pss_bytes = max(Sampled::host_peak_pss);
        if memory.host_peak_pss_bytes.is_some() {
            memory.not_sampled.remove(HOST_PEAK); // another node read it
        }
        memory.host_peak_rss_bytes = max(|n| n.summary.as_ref()?.host_peak_rss_bytes());
        memory.shm_peak_bytes = max(Sampled::shm_peak);
    }
    (memory, node0.map(Sampled::fingerprint).unwrap_or_default())
}

/// Each node's peaks and timeline for a job of several nodes; nothing for one node (its
/// figures are `memory`).
fn node_memories(observed: &Observed) -> Vec<goldgate_schema::NodeMemory> {
    match observed.nodes.len() {
        0 | 1 => Vec::new(),
        _ => observed.nodes.iter().map(Sampled::node_memory).collect(),
    }
}

fn variant_record(job: &Job) -> VariantRecord {
    VariantRecord {
        name: job.variant.name(),
        slug: job.variant.slug(),
        choices: job.variant.choices.iter().cloned().collect(),
    }
}

/// What the record warns about: each node's sampling problems, overlapping checkpoint saves,
/// lines of the log cut at the line cap, and a log of a job that ran without a single
/// iteration line.
fn job_warnings(
    nodes: Vec<Sampled>,
    summary: &LogSummary,
    checkpoints: &[CheckpointRecord],
    ran: bool,
) -> Vec<String> {
    let mut warnings: Vec<String> = nodes.into_iter().flat_map(|n| n.warnings).collect();
    warnings.extend(overlap_warning(checkpoints));
    if summary.long_lines > 0 {
        warnings.push(format!(
            "{} line(s) of the log were longer than {} KiB: each was kept and parsed up to \
             there, the rest dropped",
            summary.long_lines,
            goldgate_core::log::MAX_LINE / 1024
        ));
    }
    if ran && summary.steps_seen == 0 {
        warnings.push(format!(
            "the log has no iteration lines (`iteration N/M | ...`) in {} line(s): no per-step \
             metrics were recorded",
            summary.lines
        ));
    }
    warnings
}

/// The `results.json` record of `job`.
pub(crate) fn record(job: &Job, result: JobResult) -> RunRecord {
    let ran = result.observed.is_some();
    let observed = result.observed.unwrap_or_default();
    let checkpoints = probed_checkpoints(&observed, result.probe.as_ref());
    // A job that never ran has no metrics, not even the probe's from an earlier attempt.
    let mut metrics = match ran {
        true => metrics(
            &observed.summary,
            &checkpoints,
            observed.peaks(),
            Counted {
                probe: result.probe.as_ref(),
                folders: Some(&result.checkpoint_folders),
            },
        ),
        false => BTreeMap::new(),
    };
    let (memory, mut fingerprint) = node0_views(&observed);
    (fingerprint.host, fingerprint.workload_commit) = (result.host, result.workload_commit);
    fingerprint.goldgate_version = env!("CARGO_PKG_VERSION").to_string();
    let nodes = node_memories(&observed);
    let observer_cpu_seconds = observer_cpu(&observed);
    let mut warnings = job_warnings(observed.nodes, &observed.summary, &checkpoints, ran);
    let tb = result.tensorboard.as_ref().filter(|_| ran);
    let resumed = observed.resumed.as_ref().map(|r| resumed_run(job, r));
    let (tensorboard, resumed) = with_tensorboard(job, tb, &mut metrics, resumed, &mut warnings);
    RunRecord {
        schema_version: SCHEMA_VERSION,
        run_id: result.run_id,
        job_id: job.id.clone(),
        case: job.case.clone(),
        variant: variant_record(job),
        repeat: job.repeat,
        platform: job.platform.clone(),
        outcome: result.outcome,
        attempts: redacted_attempts(job, result.attempts),
        started_at: result.started_at,
        wall_seconds: result.wall.as_secs_f64(),
        argv: redacted_argv(job),
        env: crate::plan::redacted_env(job),
        env_unset: job.env_unset.clone(),
        fingerprint,
        nondeterministic: nondeterministic(job),
        metrics,
        overlapping_saves: observed.summary.overlapping_saves,
        checkpoints,
        memory,
        probe: result.probe.and_then(|p| serde_json::to_value(p).ok()),
        observer_cpu_seconds,
        warnings: warnings
            .iter()
            .map(|w| crate::plan::redact_text(job, w))
            .collect(),
        warmup: job.warmup,
        resumed,
        nodes,
        judging: Some(judging(job)),
        tensorboard,
        ab: job.ab.clone(),
    }
}

/// The job's saves, each with what the probe recorded of it.
fn probed_checkpoints(observed: &Observed, probe: Option<&ProbeSummary>) -> Vec<CheckpointRecord> {
    let mut checkpoints = checkpoints(&observed.summary);
    if let Some(probe) = probe {
        for c in &mut checkpoints {
            c.probe = probe.save_probe(c.iteration);
        }
    }
    checkpoints
}

/// goldgate's own CPU seconds over the job's nodes, when any node measured it.
fn observer_cpu(observed: &Observed) -> Option<f64> {
    let cpu: Vec<f64> = (observed.nodes.iter())
        .filter_map(|n| n.observer_cpu_seconds)
        .collect();
    (!cpu.is_empty()).then(|| cpu.iter().sum())
}

/// The TensorBoard folders' values merged into the metrics (the first run's) and the resumed
/// run's, with a warning for each disagreement between log and TensorBoard.
fn with_tensorboard(
    job: &Job,
    tb: Option<&TensorboardRead>,
    metrics: &mut BTreeMap<String, StepValues>,
    mut resumed: Option<ResumedRun>,
    warnings: &mut Vec<String>,
) -> (Option<TensorboardRecord>, Option<ResumedRun>) {
    let tensorboard = tb.map(|t| merge_folder(metrics, &t.first, &job.dirs.job, |_| true));
    if let (Some(r), Some(read)) = (&mut resumed, tb.and_then(|t| t.resumed.as_ref())) {
        let from = r.from_step;
        r.tensorboard = Some(merge_folder(&mut r.metrics, read, &job.dirs.job, |s| {
            s > from
        }));
    }
    let records = [
        tensorboard.as_ref(),
        resumed.as_ref().and_then(|r| r.tensorboard.as_ref()),
    ];
    warnings.extend(records.into_iter().flatten().flat_map(tensorboard_warnings));
    (tensorboard, resumed)
}

/// Every input of the job's judgement, as the plan read them from its case and goldgate.yaml.
fn judging(job: &Job) -> Judging {
    Judging {
        metrics: job.metrics.clone(),
        test_evaluation: job.test_evaluation.clone(),
        mode: mode_name(job.mode).to_owned(),
        expect_failure: job.expect_failure,
        skip_checks: job.skip_checks,
        golden: GoldenKey {
            environment: job.environment.clone(),
            variant: job.golden_variant.clone(),
        },
        rules: job.rules.clone(),
        case_file: job.config_path.clone(),
        case_sha256: job.case_sha256.clone(),
    }
}

/// `MODE` as `model_config.yaml` spells it.
fn mode_name(mode: goldgate_core::case::Mode) -> &'static str {
    (goldgate_core::case::Mode::ALL.iter())
        .find(|(m, _)| *m == mode)
        .map_or("pretraining", |(_, name)| name)
}

/// The resumed run's log metrics after `TRAIN_ITERS / 2` (after its first step when the plan
/// has no iteration count).
fn resumed_run(job: &Job, summary: &LogSummary) -> ResumedRun {
    let from_step = job
        .train_iters
        .map(|t| t / 2)
        .or(summary.first_step.map(|s| s.saturating_sub(1)))
        .unwrap_or(0);
    let metrics = summary
        .metrics
        .iter()
        .map(|(name, values)| {
            let after = values.iter().filter(|(step, _)| *step > from_step);
            (
                name.clone(),
                StepValues(crate::metrics::downsample::downsample(after)),
            )
        })
        .filter(|(_, v)| !v.0.is_empty())
        .collect();
    ResumedRun {
        from_step,
        first_step: summary.first_step,
        metrics,
        tensorboard: None,
    }
}

/// A line per problem with a TensorBoard folder: unreadable, or disagreeing with the log.
fn tensorboard_warnings(t: &TensorboardRecord) -> Vec<String> {
    let mut out: Vec<String> = t
        .error
        .iter()
        .map(|e| {
            format!(
                "TensorBoard folder {} not read ({e}): metrics from the log only",
                t.dir
            )
        })
        .collect();
    out.extend(t.disagreements.iter().map(|d| {
        format!(
            "{}: the log and TensorBoard ({}) disagree at {} of {} step(s) (first at step {}, \
             up to {:.3e} relative); results.json keeps the {}'s values and the other's under \
             tensorboard.disagreements",
            d.metric,
            t.dir,
            d.steps_differing,
            d.steps_compared,
            d.first_step,
            d.max_relative_difference,
            d.kept
        )
    }));
    out
}

/// One line when saves overlapped (the run's terminal shows it under the job).
fn overlap_warning(saves: &[CheckpointRecord]) -> Option<String> {
    let its = |f: fn(&CheckpointRecord) -> bool| -> Vec<String> {
        saves
            .iter()
            .filter(|c| f(c))
            .map(|c| c.iteration.to_string())
            .collect()
    };
    let started = its(|c| c.started_before_previous_finished);
    let overlapped = its(|c| c.overlapped_by_next);
    (!started.is_empty()).then(|| {
        format!(
            "{} save(s) started before the previous one finished (iterations {}): the async \
             latency of the saves at {} is left out of checkpoint-async-latency; space the saves \
             further apart",
            started.len(),
            started.join(", "),
            if overlapped.is_empty() {
                "none".to_owned()
            } else {
                overlapped.join(", ")
            }
        )
    })
}

/// The attempts with the job's secret values masked in what came from its log (the failure
/// line, the log's last lines), so no report built from the record republishes them.
fn redacted_attempts(job: &Job, attempts: Vec<Attempt>) -> Vec<Attempt> {
    let secrets = crate::plan::secrets(job);
    if secrets.is_empty() {
        return attempts;
    }
    let mask = |t: &str| crate::plan::redact_with(&secrets, t);
    attempts
        .into_iter()
        .map(|mut a| {
            a.failure_line = a.failure_line.as_deref().map(mask);
            a.log_tail = a.log_tail.iter().map(|l| mask(l)).collect();
            a.outcome = match a.outcome {
                Outcome::LaunchError { message } => Outcome::LaunchError {
                    message: mask(&message),
                },
                other => other,
            };
            a
        })
        .collect()
}

/// The argv of each run, with secrets taken from the caller's environment redacted.
fn redacted_argv(job: &Job) -> Vec<Vec<String>> {
    job.runs
        .iter()
        .map(|r| {
            r.entry_argv
                .iter()
                .map(|w| crate::plan::redact_text(job, w))
                .collect()
        })
        .collect()
}

/// Whether the job switched exact-match checks off, as Megatron's variables say.
fn nondeterministic(job: &Job) -> bool {
    [
        "NON_DETERMINSTIC_RESULTS",
        "NVTE_ALLOW_NONDETERMINISTIC_ALGO",
    ]
    .iter()
    .any(|k| {
        job.env
            .get(*k)
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real H200 log of the parser's fixtures, parsed.
    fn fixture(name: &str) -> LogSummary {
        goldgate_core::log::fixtures::h200_summary(name).unwrap()
    }

    #[test]
    fn real_h200_sync_log_gives_timer_blocking_per_save() {
        let s = fixture("sync.log");
        let saves = checkpoints(&s);
        let iters: Vec<_> = saves.iter().map(|c| c.iteration).collect();
        assert_eq!(iters, [10, 20, 30]);
        let m = metrics(&s, &saves, Peaks::default(), Counted::default());
        let blocking = &m[CHECKPOINT_BLOCKING].0;
        assert!((blocking[&10] - 14.84221).abs() < 1e-9, "{blocking:?}");
        assert!((blocking[&30] - 2.07113).abs() < 1e-9, "{blocking:?}");
        assert!(!m.contains_key(CHECKPOINT_ASYNC_LATENCY));
        assert!(
            !m.contains_key(GPU_PEAK),
            "no sampler, no GPU metric (never zero)"
        );
    }

    #[test]
    fn real_h200_overlapping_async_saves_are_flagged_and_their_latency_left_out() {
        // Saves at 5, 10, 15 about 1 s apart while a write takes ~2 s: Megatron warned twice.
        let s = fixture("async_overlap.log");
        assert_eq!(s.overlapping_saves, 2);
        let saves = checkpoints(&s);
        let flags: Vec<_> = saves
            .iter()
            .map(|c| {
                (
                    c.iteration,
                    c.started_before_previous_finished,
                    c.overlapped_by_next,
                )
            })
            .collect();
        assert_eq!(
            flags,
            [(5, false, true), (10, true, true), (15, true, false)]
        );
        assert!(saves.iter().all(|c| c.async_latency_seconds.is_some()));
        let m = metrics(&s, &saves, Peaks::default(), Counted::default());
        let latency = &m[CHECKPOINT_ASYNC_LATENCY].0;
        assert_eq!(latency.keys().copied().collect::<Vec<_>>(), [15]);
        // The blocking time stays: the training loop really was blocked that long.
        assert_eq!(m[CHECKPOINT_BLOCKING].0.len(), 3);
        assert_eq!(
            overlap_warning(&saves).as_deref(),
            Some(
                "2 save(s) started before the previous one finished (iterations 10, 15): the \
                 async latency of the saves at 5, 10 is left out of checkpoint-async-latency; \
                 space the saves further apart"
            )
        );
    }

    #[test]
    fn real_h200_async_log_gives_latency_from_timestamps() {
        let s = fixture("async_mcore.log");
        let saves = checkpoints(&s);
        assert!(saves.iter().all(|c| c.asynchronous));
        assert!(
            saves
                .iter()
                .all(|c| !c.overlapped_by_next && !c.started_before_previous_finished)
        );
        let peaks = Peaks {
            gpu_above_baseline: Some(7),
            host_pss: Some(5),
            shm: None,
        };
        let m = metrics(&s, &saves, peaks, Counted::default());
        // scheduled 06:35:37.872833 -> saved 06:35:39.712286
        let latency = m[CHECKPOINT_ASYNC_LATENCY].0[&10];
        assert!((latency - 1.839453).abs() < 1e-6, "{latency}");
        assert!((m[CHECKPOINT_BLOCKING].0[&20] - 0.1158).abs() < 1e-9);
        assert_eq!(m[GPU_PEAK].0[&30], 7.0);
        assert_eq!(m[HOST_PEAK].0[&30], 5.0);
        assert!(!m.contains_key(SHM_PEAK));
    }
}
