//! Stage "report": the rows of the variant comparison (`report::variants`): the fixed rows
//! with how each reads one repeat's value and whether a rule gates it, and which other
//! recorded metrics get a row of their own.

use std::collections::BTreeSet;

use crate::compare::stats::summary::{collapse, median};
use goldgate_core::rules::{Rules, Statistic, Window};
use goldgate_schema::RunRecord;
use goldgate_schema::Unit;
use goldgate_schema::metric_names as names;

/// Metric keys that have their own rows; every other key in `RunRecord.metrics` gets a row
/// of its final value.
const COVERED: &[&str] = &[
    names::LM_LOSS,
    names::ITERATION_TIME,
    names::GPU_PEAK,
    names::HOST_PEAK,
    names::HOST_PEAK_RSS_V1,
    names::SHM_PEAK,
    names::CHECKPOINT_BLOCKING,
    names::CHECKPOINT_ASYNC_LATENCY,
];

/// What the fixed rows take from the gate's rules, so a row shows what the gate judges: the
/// iteration-time window and the saves `checkpoint-blocking-time`'s rule leaves out at the
/// start (`skip_first_saves`).
#[derive(Clone, Debug)]
pub(super) struct RowRules {
    pub window: Option<Window>,
    pub skipped_saves: usize,
}

impl RowRules {
    pub(super) fn of(rules: &Rules) -> RowRules {
        RowRules {
            window: rules.rule_for(names::ITERATION_TIME).window,
            skipped_saves: (rules.rule_for(names::CHECKPOINT_BLOCKING).skip_first_saves)
                .try_into()
                .unwrap_or(usize::MAX),
        }
    }

    /// The `{saves}` of a row label: which saves the blocking row's median is over.
    pub(super) fn saves_label(&self) -> String {
        match self.skipped_saves {
            0 => "every save".to_owned(),
            1 => "saves after the first".to_owned(),
            n => format!("saves after the first {n}"),
        }
    }
}

/// Reads one repeat's value (the rules for the rows that need them).
pub(super) type Extract = fn(&RunRecord, &RowRules) -> Option<f64>;

/// Whether the gate judges a row's figure ([`MetricRow::diagnostic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Gated,
    Diagnostic,
}

/// The fixed rows: label, kind, role, how to read one repeat's value.
pub(super) const FIXED: &[(&str, Unit, Role, Extract)] = &[
    (
        "checkpoint blocking, {saves} (median)",
        Unit::Seconds,
        Role::Gated,
        blocking_judged,
    ),
    (
        "checkpoint blocking, first save",
        Unit::Seconds,
        Role::Gated,
        blocking_first,
    ),
    (
        "checkpoint async latency (median)",
        Unit::Seconds,
        Role::Gated,
        async_latency,
    ),
    ("GPU peak memory", Unit::Bytes, Role::Gated, gpu_peak),
    ("host peak PSS", Unit::Bytes, Role::Gated, host_peak),
    ("/dev/shm peak", Unit::Bytes, Role::Gated, shm_peak),
    (
        "iteration time ({statistic})",
        Unit::Seconds,
        Role::Gated,
        iteration_time,
    ),
    ("final lm loss", Unit::Plain, Role::Gated, final_loss),
    // What explains the figures above; no rule gates them.
    (
        "async saves overlapped by the next (latency left out)",
        Unit::Count,
        Role::Diagnostic,
        overlapped_saves,
    ),
    (
        "host peak RSS (summed)",
        Unit::Bytes,
        Role::Diagnostic,
        host_rss,
    ),
    (
        "MemAvailable drop",
        Unit::Bytes,
        Role::Diagnostic,
        mem_available_drop,
    ),
];

/// Besides the fixed rows, the metrics that explain a memory or checkpoint trade-off: the
/// probe's allocator figures. Log fields such as batch size or learning rate stay in
/// `results.json`.
const TRADE_OFF: [&str; 8] = [
    "empty-cache",
    "alloc-retries",
    "cuda-ooms",
    "torch-peak",
    "reserved-minus-allocated",
    "inactive-split",
    "probe-",
    "mem-max-reserved",
];

/// Whether a golden file with this key gates on it: goldgate's own metrics (the counters among
/// them), and Megatron's memory figures a case's `METRICS` names (`mem-*-bytes`). The probe's
/// allocator snapshots (`torch-peak-*`, `reserved-minus-allocated-bytes`, …) are recorded only.
pub(super) fn is_gated(key: &str) -> bool {
    names::GOLDGATE_METRICS.contains(&key) || (key.starts_with("mem-") && key.ends_with("-bytes"))
}

pub(super) fn extra_metric_keys(passed: &[Vec<&RunRecord>]) -> BTreeSet<String> {
    passed
        .iter()
        .flatten()
        .flat_map(|r| r.metrics.keys())
        .filter(|k| !COVERED.contains(&k.as_str()) && TRADE_OFF.iter().any(|p| k.starts_with(p)))
        .cloned()
        .collect()
}

/// The per-save values of a metric in save order (the record stage defines each:
/// `checkpoint-blocking-time`, `checkpoint-async-latency` without the overlapped saves).
fn per_save(r: &RunRecord, name: &str) -> Vec<f64> {
    (r.metrics.get(name)).map_or_else(Vec::new, |s| s.0.values().copied().collect())
}

/// The median blocking time over the saves the gate judges.
fn blocking_judged(r: &RunRecord, rules: &RowRules) -> Option<f64> {
    let saves = per_save(r, names::CHECKPOINT_BLOCKING);
    median(saves.get(rules.skipped_saves..).unwrap_or_default())
}

fn blocking_first(r: &RunRecord, _: &RowRules) -> Option<f64> {
    per_save(r, names::CHECKPOINT_BLOCKING).first().copied()
}

fn async_latency(r: &RunRecord, _: &RowRules) -> Option<f64> {
    median(&per_save(r, names::CHECKPOINT_ASYNC_LATENCY))
}

/// Async saves that were still being written when the next save started; none for a job
/// without async saves.
fn overlapped_saves(r: &RunRecord, _: &RowRules) -> Option<f64> {
    let saves = r.checkpoints.iter().filter(|c| c.asynchronous);
    let (mut any, mut overlapped) = (false, 0u32);
    for c in saves {
        any = true;
        overlapped += u32::from(c.overlapped_by_next);
    }
    any.then_some(f64::from(overlapped))
}

fn gpu_peak(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.gpu_peak_bytes()
}

fn host_peak(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.last_value(names::HOST_PEAK)
        .or(r.memory.host_peak_pss_bytes.map(|b| b as f64))
}

/// Summed RSS: secondary (pages shared between the job's processes count in each of them).
fn host_rss(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.memory.host_peak_rss_bytes.map(|b| b as f64)
}

/// The system-wide drop of `MemAvailable` during the job: a check on the PSS figure.
fn mem_available_drop(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.memory.mem_available.as_ref().map(|m| m.drop_bytes as f64)
}

fn shm_peak(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.last_value(names::SHM_PEAK)
        .or(r.memory.shm_peak_bytes.map(|b| b as f64))
}

/// Iteration time over the gate's window (`goldgate.yaml`, by default the median over steps
/// 5–20 for runs of ≤ 25 steps, else 30–45); runs too short for the window, or without one,
/// use every step after the first (warm-up).
fn iteration_time(r: &RunRecord, rules: &RowRules) -> Option<f64> {
    let window = rules.window.as_ref();
    let series = &r.metrics.get(names::ITERATION_TIME)?.0;
    let last = *series.keys().next_back()?;
    let finite = |v: &f64| v.is_finite().then_some(*v);
    if let Some(w) = window {
        let steps = w.steps_for(last);
        let inside: Vec<f64> = series
            .range(steps.first..=steps.last)
            .filter_map(|(_, v)| finite(v))
            .collect();
        if let Some(v) = collapse(w.statistic, &inside) {
            return Some(v);
        }
    }
    let all: Vec<f64> = series.values().skip(1).filter_map(finite).collect();
    let statistic = window.map_or(Statistic::Median, |w| w.statistic);
    collapse(statistic, &all)
}

fn final_loss(r: &RunRecord, _: &RowRules) -> Option<f64> {
    r.last_value(names::LM_LOSS)
}
