//! Stage "report", tests only: realistic run records for the renderers' snapshots. The figures
//! follow a real H200 checkpoint sweep (first save ~18 s, later saves ~4 s synchronously,
//! ~0.3 s blocking with async saves through /dev/shm).

use std::collections::BTreeMap;

use crate::metrics::{
    CheckpointRecord, Fingerprint, GpuDevicePeak, GpuMemory, MemoryRecord, Outcome, RunRecord,
    SCHEMA_VERSION, StepValues, Timeline, VariantRecord,
};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

pub(crate) const CASE: &str = "gpt/gpt3_mcore_te_tp1_pp1_ckpt_resume";

/// A variant from `axis=value` pairs (empty = default).
pub(crate) fn variant(choices: &[(&str, &str)]) -> VariantRecord {
    if choices.is_empty() {
        return VariantRecord {
            name: "default".into(),
            slug: "default".into(),
            choices: BTreeMap::new(),
        };
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
pub(crate) struct Shape {
    pub gpu_peak_gib: f64,
    pub host_peak_gib: f64,
    pub shm_peak_gib: f64,
    pub first_save_s: f64,
    pub save_s: f64,
    pub async_latency_s: Option<f64>,
    pub iter_s: f64,
}

pub(crate) const SYNC: Shape = Shape {
    gpu_peak_gib: 61.3,
    host_peak_gib: 22.4,
    shm_peak_gib: 0.0,
    first_save_s: 18.2,
    save_s: 4.1,
    async_latency_s: None,
    iter_s: 0.321,
};

pub(crate) const GC80: Shape = Shape {
    gpu_peak_gib: 55.1,
    save_s: 3.9,
    ..SYNC
};

pub(crate) const GC80_ASYNC: Shape = Shape {
    gpu_peak_gib: 55.4,
    host_peak_gib: 34.9,
    shm_peak_gib: 12.5,
    first_save_s: 6.4,
    save_s: 0.34,
    async_latency_s: Some(4.6),
    iter_s: 0.329,
};

/// One passed job; `jitter` (a small fraction, e.g. 0.01) makes repeats differ.
pub(crate) fn record(v: VariantRecord, repeat: u32, shape: Shape, jitter: f64) -> RunRecord {
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
        "host-peak-rss-bytes".into(),
        scalar((shape.host_peak_gib * j * GIB).round()),
    );
    metrics.insert(
        "shm-peak-bytes".into(),
        scalar((shape.shm_peak_gib * GIB).round()),
    );
    let checkpoints = [20u64, 40, 60]
        .iter()
        .enumerate()
        .map(|(i, &it)| {
            let blocking = if i == 0 {
                shape.first_save_s
            } else {
                shape.save_s
            } * j;
            CheckpointRecord {
                iteration: it,
                blocking_min_seconds: Some(blocking * 0.97),
                blocking_max_seconds: Some(blocking),
                saving_to_saved_seconds: Some(blocking * 1.01),
                asynchronous: shape.async_latency_s.is_some(),
                async_latency_seconds: shape.async_latency_s.map(|l| l * j),
                memory_before_bytes: Some((40.0 * GIB) as u64),
                memory_after_bytes: Some((40.0 * GIB) as u64),
            }
        })
        .collect();
    RunRecord {
        schema_version: SCHEMA_VERSION,
        run_id: "20261130-062900-abcd".into(),
        job_id: format!("{CASE}@{}#{repeat}", v.name),
        case: CASE.into(),
        variant: v,
        repeat,
        platform: "dev_h200".into(),
        outcome: Outcome::Passed,
        attempts: vec![],
        started_at: "2026-11-30T06:29:00Z".into(),
        wall_seconds: 95.0,
        argv: vec![],
        env: BTreeMap::new(),
        env_unset: vec![],
        fingerprint: Fingerprint {
            gpu_model: Some("NVIDIA H200".into()),
            gpu_count: Some(1),
            host: "node-17".into(),
            goldgate_version: "0.1.0".into(),
            ..Fingerprint::default()
        },
        nondeterministic: false,
        metrics,
        checkpoints,
        memory: memory(shape, j),
        probe: None,
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
    let host = t
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
        host_peak_rss_bytes: Some((shape.host_peak_gib * j * GIB) as u64),
        shm_peak_bytes: Some((shape.shm_peak_gib * GIB) as u64),
        host_interval_seconds: 0.5,
        timeline: Timeline {
            t_seconds: t,
            gpu_used_bytes: gpu,
            host_rss_bytes: host,
            shm_bytes: shm,
            saves,
        },
    }
}

/// Three variants of one case: default ×3, gc80 ×2 (one out of memory), gc80 + async ×3.
pub(crate) fn variant_sweep() -> Vec<RunRecord> {
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
