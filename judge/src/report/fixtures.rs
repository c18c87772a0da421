//! Stage "report", tests only (also the command line's, through the `fixtures` feature):
//! realistic run records for the renderers' snapshots. The figures follow a real H200 checkpoint
//! sweep (first save ~18 s, later saves ~4 s synchronously, ~0.3 s blocking with async saves
//! through /dev/shm).

use std::collections::BTreeMap;

use crate::compare::ab::metric::{AbMetric, AbTest, AbVerdict};
use crate::compare::ab::outcome::{
    AB_SCHEMA_VERSION, AbJob, AbMode, AbModeKind, AbReport, ArmSpec,
};
use goldgate_core::config::Sequential;
use goldgate_schema::metric_names::{CHECKPOINT_ASYNC_LATENCY, CHECKPOINT_BLOCKING};
use goldgate_schema::{
    CheckpointRecord, Fingerprint, GpuDevicePeak, GpuMemory, MemAvailableRecord, MemoryRecord,
    Outcome, RunRecord, StepValues, Timeline, VariantRecord,
};
use goldgate_schema::{MetricResult, Unit, Verdict};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Summed RSS over PSS at the H200 reference case's host peak (18.06 / 5.40 GiB).
const RSS_OVER_PSS: f64 = 3.3;

pub const CASE: &str = "gpt/gpt3_mcore_te_tp1_pp1_ckpt_resume";

/// A variant from `axis=value` pairs (empty = default).
pub fn variant(choices: &[(&str, &str)]) -> VariantRecord {
    if choices.is_empty() {
        return VariantRecord::baseline();
    }
    let name = choices
        .iter()
        .map(|(a, v)| format!("{a}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let slug = choices
        .iter()
        .map(|(a, v)| format!("{a}-{v}"))
        .collect::<Vec<_>>()
        .join("+");
    VariantRecord {
        name,
        slug,
        choices: choices
            .iter()
            .map(|(a, v)| (a.to_string(), v.to_string()))
            .collect(),
    }
}

/// The knobs of one synthetic job.
#[derive(Clone, Copy)]
pub struct Shape {
    pub gpu_peak_gib: f64,
    pub host_peak_gib: f64,
    pub shm_peak_gib: f64,
    pub first_save_s: f64,
    pub save_s: f64,
    pub async_latency_s: Option<f64>,
    pub iter_s: f64,
}

pub const SYNC: Shape = Shape {
    gpu_peak_gib: 61.3,
    host_peak_gib: 22.4,
    shm_peak_gib: 0.0,
    first_save_s: 18.2,
    save_s: 4.1,
    async_latency_s: None,
    iter_s: 0.321,
};

pub const GC80: Shape = Shape {
    gpu_peak_gib: 55.1,
    save_s: 3.9,
    ..SYNC
};

pub const GC80_ASYNC: Shape = Shape {
    gpu_peak_gib: 55.4,
    host_peak_gib: 34.9,
    shm_peak_gib: 12.5,
    first_save_s: 6.4,
    save_s: 0.34,
    async_latency_s: Some(4.6),
    iter_s: 0.329,
};

/// One passed job; `jitter` (a small fraction, e.g. 0.01) makes repeats differ.
pub fn record(v: VariantRecord, repeat: u32, shape: Shape, jitter: f64) -> RunRecord {
    let j = 1.0 + jitter;
    let steps = 60u64;
    let mut metrics = BTreeMap::new();
    let loss: BTreeMap<u64, f64> = (1..=steps)
        .map(|s| {
            (
                s,
                10.9 - 7.95 * (s as f64 / steps as f64).sqrt() + jitter * 0.01,
            )
        })
        .collect();
    metrics.insert("lm loss".to_string(), StepValues(loss));
    let iter: BTreeMap<u64, f64> = (1..=steps)
        .map(|s| (s, if s == 1 { 3.2 } else { shape.iter_s * j }))
        .collect();
    metrics.insert("iteration-time".to_string(), StepValues(iter));
    metrics.insert(
        "num-zeros".to_string(),
        StepValues(BTreeMap::from([(steps, 27854.0)])),
    );
    let scalar = |v: f64| StepValues(BTreeMap::from([(steps, v)]));
    metrics.insert(
        "gpu-peak-memory-bytes".into(),
        scalar((shape.gpu_peak_gib * j * GIB).round()),
    );
    metrics.insert(
        goldgate_schema::metric_names::HOST_PEAK.into(),
        scalar((shape.host_peak_gib * j * GIB).round()),
    );
    metrics.insert(
        "shm-peak-bytes".into(),
        scalar((shape.shm_peak_gib * GIB).round()),
    );
    let blocking: BTreeMap<u64, f64> = [20u64, 40, 60]
        .iter()
        .enumerate()
        .map(|(i, &it)| {
            (
                it,
                if i == 0 {
                    shape.first_save_s
                } else {
                    shape.save_s
                } * j,
            )
        })
        .collect();
    let checkpoints: Vec<CheckpointRecord> = blocking
        .iter()
        .enumerate()
        .map(|(i, (&it, &blocking))| {
            CheckpointRecord {
                iteration: it,
                blocking_min_seconds: Some(blocking * 0.97),
                saving_to_saved_seconds: Some(blocking * 1.01),
                asynchronous: shape.async_latency_s.is_some(),
                async_latency_seconds: shape.async_latency_s.map(|l| l * j),
                // The first async save is still being written when the second starts.
                started_before_previous_finished: shape.async_latency_s.is_some() && i == 1,
                overlapped_by_next: shape.async_latency_s.is_some() && i == 0,
                memory_before_bytes: Some((40.0 * GIB) as u64),
                memory_after_bytes: Some((40.0 * GIB) as u64),
                probe: None,
            }
        })
        .collect();
    // The per-save metrics as the record stage writes them (metrics::build).
    let latency: BTreeMap<u64, f64> = (checkpoints.iter())
        .filter(|c| !c.overlapped_by_next)
        .filter_map(|c| c.async_latency_seconds.map(|l| (c.iteration, l)))
        .collect();
    if !latency.is_empty() {
        metrics.insert(CHECKPOINT_ASYNC_LATENCY.into(), StepValues(latency));
    }
    metrics.insert(CHECKPOINT_BLOCKING.into(), StepValues(blocking));
    RunRecord {
        run_id: "20261130-062900-abcd".into(),
        started_at: "2026-11-30T06:29:00Z".into(),
        wall_seconds: 95.0,
        fingerprint: Fingerprint {
            gpu_model: Some("NVIDIA H200".into()),
            gpu_count: Some(1),
            host: "node-17".into(),
            goldgate_version: "0.1.0".into(),
            ..Fingerprint::default()
        },
        metrics,
        checkpoints,
        overlapping_saves: 0,
        memory: memory(shape, j),
        ..RunRecord::passed(CASE, v, repeat, "dev_h200")
    }
}

/// A 90 s timeline sampled every 1.5 s: GPU memory ramps to its peak, host RSS grows, and
/// async saves fill /dev/shm while they drain.
fn memory(shape: Shape, j: f64) -> MemoryRecord {
    let saves: Vec<(f64, Option<f64>, u64)> = [(20.0, 20u64), (45.0, 40), (70.0, 60)]
        .iter()
        .enumerate()
        .map(|(i, &(start, it))| {
            let block = if i == 0 {
                shape.first_save_s
            } else {
                shape.save_s
            };
            (start, Some(start + block), it)
        })
        .collect();
    let t: Vec<f64> = (0..=60).map(|i| f64::from(i) * 1.5).collect();
    let in_save = |x: f64, extra: f64| {
        saves
            .iter()
            .any(|(s, e, _)| x >= *s && x <= e.unwrap_or(*s) + extra)
    };
    let lat = shape.async_latency_s.unwrap_or(0.0);
    let gpu = t
        .iter()
        .map(|&x| {
            let ramp = (x / 12.0).min(1.0);
            let bump = if in_save(x, 0.0) { 1.0 } else { 0.93 };
            Some((shape.gpu_peak_gib * j * ramp * bump * GIB) as u64)
        })
        .collect();
    let host: Vec<u64> = t
        .iter()
        .map(|&x| {
            let base = 6.0 + (shape.host_peak_gib - 8.0) * (x / 90.0).min(1.0);
            let save = if in_save(x, lat) { 2.0 } else { 0.0 };
            ((base + save) * GIB) as u64
        })
        .collect();
    let shm = t
        .iter()
        .map(|&x| {
            if shape.shm_peak_gib > 0.0 && in_save(x, lat) {
                (shape.shm_peak_gib * GIB) as u64
            } else {
                0
            }
        })
        .collect();
    MemoryRecord {
        gpu: Some(GpuMemory {
            interval_seconds: 0.1,
            samples: 900,
            devices: vec![GpuDevicePeak {
                index: 0,
                name: "NVIDIA H200".into(),
                baseline_bytes: 600 * 1024 * 1024,
                peak_bytes: (shape.gpu_peak_gib * j * GIB) as u64 + 600 * 1024 * 1024,
                peak_at_seconds: 21.0,
                process_peak_bytes: None,
            }],
        }),
        host_peak_pss_bytes: Some((shape.host_peak_gib * j * GIB) as u64),
        host_pss_reads: Some(90),
        host_pss_read_cpu_seconds: Some(0.65),
        // Forked workers share most of their pages: summed RSS counts them once per process.
        host_peak_rss_bytes: Some((shape.host_peak_gib * RSS_OVER_PSS * j * GIB) as u64),
        mem_available: Some(MemAvailableRecord {
            baseline_bytes: (1800.0 * GIB) as u64,
            min_bytes: ((1800.0 - shape.host_peak_gib * 0.98 * j) * GIB) as u64,
            min_at_seconds: 21.5,
            drop_bytes: (shape.host_peak_gib * 0.98 * j * GIB) as u64,
        }),
        shm_peak_bytes: Some((shape.shm_peak_gib * GIB) as u64),
        host_interval_seconds: 0.5,
        timeline: Timeline {
            t_seconds: t,
            gpu_used_bytes: gpu,
            host_rss_bytes: host
                .iter()
                .map(|b| (*b as f64 * RSS_OVER_PSS) as u64)
                .collect(),
            host_pss_bytes: host,
            shm_bytes: shm,
            saves,
        },
        not_sampled: Default::default(),
    }
}

/// Three variants of one case: default ×3, gc80 ×2 (one out of memory), gc80 + async ×3.
pub fn variant_sweep() -> Vec<RunRecord> {
    let mut out = Vec::new();
    for (repeat, jitter) in [(1, 0.0), (2, 0.012), (3, -0.008)] {
        out.push(record(variant(&[]), repeat, SYNC, jitter));
    }
    out.push(record(variant(&[("allocator", "gc80")]), 1, GC80, 0.004));
    let mut oom = record(variant(&[("allocator", "gc80")]), 2, GC80, 0.0);
    oom.outcome = Outcome::OutOfMemory;
    out.push(oom);
    for (repeat, jitter) in [(1, 0.0), (2, 0.02), (3, 0.005)] {
        out.push(record(
            variant(&[("allocator", "gc80"), ("checkpoint", "async")]),
            repeat,
            GC80_ASYNC,
            jitter,
        ));
    }
    out
}

fn metric(
    name: &str,
    verdict: goldgate_schema::Verdict,
    unit: goldgate_schema::Unit,
    (golden, now): (f64, f64),
    interval: Option<(f64, f64)>,
    tolerance: &str,
    detail: &str,
) -> goldgate_schema::MetricResult {
    goldgate_schema::MetricResult {
        metric: name.into(),
        verdict,
        golden: Some(golden),
        now: Some(now),
        delta_pct: Some((now - golden) / golden.abs() * 100.0),
        interval,
        tolerance: tolerance.into(),
        unit,
        repeats: if interval.is_some() { 3 } else { 1 },
        detail: detail.into(),
        band: None,
        pass_reason: None,
    }
}

fn job(
    case: &str,
    v: &VariantRecord,
    verdict: goldgate_schema::Verdict,
    metrics: Vec<goldgate_schema::MetricResult>,
) -> goldgate_schema::JobComparison {
    let model_case = case.split_once('/').map_or(case, |(_, c)| c);
    goldgate_schema::JobComparison {
        case: case.into(),
        variant: v.name.clone(),
        variant_slug: v.slug.clone(),
        job_ids: vec![format!("{case}@{}#1", v.name)],
        outcome: "passed".into(),
        failure_line: None,
        log_tail: Vec::new(),
        log: None,
        verdict,
        golden_path: Some(
            format!("tests/functional_tests/test_cases/{case}/golden_values_dev_dgx_h100.json")
                .into(),
        ),
        config_path: Some(
            format!("tests/functional_tests/test_cases/{case}/model_config.yaml").into(),
        ),
        metrics,
        records: vec![
            format!(
                "results/20261130-062900-abcd/{case}/{}/1/results.json",
                v.slug
            )
            .into(),
        ],
        wall_seconds: Some(12.5),
        svg: Some(format!("svg/{}__{}__1.svg", model_case, v.slug).into()),
    }
}

/// A comparison with one job of every interesting verdict, and hostile text in a case name
/// and a failure line.
pub fn comparison() -> goldgate_schema::Comparison {
    use goldgate_schema::{Unit, Verdict::*};
    let loss = |v| {
        metric(
            "lm loss",
            v,
            Unit::Plain,
            (2.95263, 2.95263),
            None,
            "exact + rtol 5%",
            "0 of 60 steps beyond tolerance (allowed 1)",
        )
    };
    let iter = |v, now, detail: &str| {
        metric(
            "iteration-time",
            v,
            Unit::Seconds,
            (0.3212, now),
            Some((now * 0.99, now * 1.02)),
            "rtol 5%",
            detail,
        )
    };
    let def = variant(&[]);
    let asy = variant(&[("allocator", "gc80"), ("checkpoint", "async")]);
    let mut jobs = vec![
        job(
            CASE,
            &def,
            Pass,
            vec![
                metric(
                    "checkpoint-blocking-time",
                    Pass,
                    Unit::Seconds,
                    (4.1, 4.16),
                    Some((4.07, 4.22)),
                    "rtol 10% + atol 0.05 s",
                    "median of saves 2..3 (first 1 skipped)",
                ),
                metric(
                    "gpu-peak-memory-bytes",
                    Pass,
                    Unit::Bytes,
                    (65_820_000_000.0, 65_910_000_000.0),
                    Some((65_700_000_000.0, 66_000_000_000.0)),
                    "rtol 5% + atol 256 MiB",
                    "",
                ),
                iter(Pass, 0.3221, "median of steps 30..45"),
                loss(Pass),
            ],
        ),
        job(
            CASE,
            &asy,
            Regression,
            vec![
                metric(
                    "checkpoint-blocking-time",
                    Regression,
                    Unit::Seconds,
                    (0.342, 0.711),
                    Some((0.688, 0.745)),
                    "rtol 10% + atol 0.05 s",
                    "whole interval above 0.426 s (golden × 1.10 + 0.05 s)",
                ),
                metric(
                    "gpu-peak-memory-bytes",
                    Improvement,
                    Unit::Bytes,
                    (65_820_000_000.0, 59_440_000_000.0),
                    Some((59_300_000_000.0, 59_700_000_000.0)),
                    "rtol 5% + atol 256 MiB",
                    "",
                ),
                metric(
                    "shm-peak-bytes",
                    Pass,
                    Unit::Bytes,
                    (13_421_772_800.0, 13_421_772_800.0),
                    None,
                    "rtol 5% + atol 64 MiB",
                    "",
                ),
                iter(Pass, 0.3290, "median of steps 30..45"),
                loss(Pass),
            ],
        ),
        job(
            "gpt/gpt3_mcore_te_tp2_pp2",
            &def,
            Improvement,
            vec![
                iter(Improvement, 0.2811, "median of steps 30..45"),
                loss(Pass),
            ],
        ),
        job(
            "gpt/gpt3_mcore_te_tp4_pp1_*dist*|opt",
            &def,
            Unstable,
            vec![iter(Unstable, 0.3402, "cv 31% > max_cv 20%"), loss(Pass)],
        ),
        job("bert/bert_mr_tp2_pp2", &def, MissingGolden, vec![]),
        job("moe/mixtral_8x7b_tp4_ep8", &def, JobFailed, vec![]),
    ];
    jobs[4].golden_path = None;
    jobs[5].outcome = "out of memory".into();
    jobs[5].failure_line = Some(
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB | <@team>"
            .into(),
    );
    jobs[5].log_tail = vec![
        "[rank3]:   File \"/opt/megatron-lm/megatron/training/training.py\", line 792, in train"
            .into(),
        "[rank3]:     losses_reduced = forward_backward_func(".into(),
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB | <@team>"
            .into(),
    ];
    jobs[5].log = Some(
        "results/20261130-062900-abcd/moe/mixtral_8x7b_tp4_ep8/default/1/logs/console.log".into(),
    );
    jobs[5].svg = None;
    goldgate_schema::Comparison::new(
        "dgx_h100".into(),
        jobs,
        vec!["iteration-time of gpt/gpt3_mcore_te_tp4_pp1_*dist*|opt@default is unstable (cv 31% > max_cv 20%)".into()],
    )
}

fn ab_metric(
    name: &str,
    verdict: AbVerdict,
    a: f64,
    b: f64,
    ci: Option<(f64, f64)>,
    pairs: usize,
) -> AbMetric {
    AbMetric {
        metric: name.into(),
        unit: Unit::of_metric(name),
        test: if ci.is_some() {
            AbTest::Sequential
        } else {
            AbTest::Rule
        },
        verdict,
        a: Some(a),
        b: Some(b),
        change: (a != 0.0).then(|| b / a - 1.0),
        interval: ci,
        level: ci.map(|_| 0.99833),
        pairs,
        detail: "per-job spread used 5.0 %".into(),
    }
}

fn ab_job(index: u32, arm: &str, outcome: &str) -> AbJob {
    AbJob {
        index,
        run_id: format!("{index:02}-{arm}"),
        arm: arm.into(),
        block: 1,
        pair: index.div_ceil(2),
        warmup: false,
        results: format!("{index:02}-{arm}/gpt/c/default/1/results.json"),
        outcome: Some(outcome.into()),
        wall_seconds: Some(31.5),
        failure: None,
    }
}

/// The A/B report every A/B renderer's snapshot shows: a planted slowdown caught after 4 pairs.
pub fn ab_report() -> AbReport {
    let seq = Sequential {
        alpha: 0.01,
        min_effect: 0.05,
        max_pairs: 12,
        min_pairs: 1,
        spread: 0.05,
        spread_df: 8,
    };
    AbReport {
        schema_version: AB_SCHEMA_VERSION,
        id: "20261201-160000-abcd".into(),
        case: "gpt/h200-ckpt-power".into(),
        platform: "h200".into(),
        mode: AbMode {
            kind: AbModeKind::Job,
            reason:
                "the arms differ in a variant (empty_cache=level2), fixed when the process starts"
                    .into(),
        },
        seed: 7,
        sequential: seq,
        within_job: None,
        arms: [
            ArmSpec {
                arm: "a".into(),
                ..ArmSpec::default()
            },
            ArmSpec {
                arm: "b".into(),
                variants: vec!["empty_cache=level2".into()],
                env: vec!["GOLDGATE_PLANT_SAVE_DELAY_S=0.04".into()],
                dir: None,
                switches: Vec::new(),
            },
        ],
        jobs: vec![
            ab_job(1, "a", "passed"),
            ab_job(2, "b", "passed"),
            ab_job(3, "b", "passed"),
            ab_job(4, "a", "passed"),
        ],
        pairs: 4,
        metrics: vec![
            ab_metric(
                "checkpoint-blocking-time",
                AbVerdict::Regression,
                2.41,
                2.68,
                Some((0.079, 0.146)),
                4,
            ),
            ab_metric(
                "iteration-time",
                AbVerdict::Inconclusive,
                0.231,
                0.236,
                Some((-0.03, 0.07)),
                4,
            ),
            ab_metric(
                "empty-cache-calls",
                AbVerdict::Regression,
                0.0,
                11.0,
                None,
                4,
            ),
            ab_metric("lm loss", AbVerdict::Pass, 2.7665, 2.7665, None, 4),
        ],
        goldens: vec![MetricResult {
            metric: "lm loss".into(),
            verdict: Verdict::Pass,
            golden: Some(2.7665),
            now: Some(2.7665),
            delta_pct: Some(0.0),
            interval: None,
            tolerance: "exact + rtol 5%".into(),
            unit: Unit::Plain,
            repeats: 2,
            detail: String::new(),
            band: None,
            pass_reason: None,
        }],
        golden_note: None,
        covariate: None,
        warnings: Vec::new(),
        finished: true,
        job_seconds: 126.0,
        gpus: 1,
        exit_code: Some(1),
        precision: None,
        checks: None,
    }
}
