//! Stage "metrics": what the memory samplers saw on one node ([`Sampled`]) converted into the
//! `memory` and `fingerprint` parts of `results.json` (peaks, per-device figures, one timeline
//! on a common time axis). Pure functions; the samplers themselves run in `run::local`.

use crate::observe::sample::{Point, SampleSummary};
use goldgate_schema::{
    Fingerprint, GpuDevicePeak, GpuMemory, MemAvailableRecord, MemoryRecord, NodeIo, NodeMemory,
    Timeline,
};

/// What the samplers recorded on one node (or why they could not): the observation the
/// record builder turns into the `memory` section and the fingerprint. An executor returns one
/// per node the job ran on; the job's figures are the max across nodes.
#[derive(Clone, Debug, Default)]
pub struct Sampled {
    /// The node's host name.
    pub host: String,
    pub summary: Option<SampleSummary>,
    pub warnings: Vec<String>,
    /// CPU seconds goldgate itself used while the job ran (all its threads: samplers, log parser).
    pub observer_cpu_seconds: Option<f64>,
    /// The node's I/O state around the job (page cache, node I/O, `--settle`).
    pub io: Option<NodeIo>,
}

impl Sampled {
    /// `gpu-peak-memory-bytes`.
    pub fn gpu_peak_above_baseline(&self) -> Option<u64> {
        self.summary.as_ref()?.gpu_peak_memory_bytes()
    }

    /// `host-peak-pss-bytes`.
    pub fn host_peak_pss(&self) -> Option<u64> {
        self.summary.as_ref()?.host_peak_pss_bytes()
    }

    /// `shm-peak-bytes`.
    pub fn shm_peak(&self) -> Option<u64> {
        self.summary.as_ref()?.shm_peak_bytes()
    }

    /// GPU model, count and driver versions, and the node's I/O state, for the environment
    /// fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        let Some(gpu) = self.summary.as_ref().and_then(|s| s.gpu.as_ref()) else {
            return Fingerprint {
                io: self.io.clone(),
                ..Fingerprint::default()
            };
        };
        Fingerprint {
            io: self.io.clone(),
            gpu_model: gpu.devices.iter().find_map(|d| d.name.clone()),
            gpu_count: Some(gpu.devices.len() as u32),
            driver_version: gpu.environment.driver_version.clone(),
            cuda_version: gpu.environment.cuda_driver_version.clone(),
            ..Fingerprint::default()
        }
    }

    /// The node's entry in `results.json`'s `nodes`.
    pub fn node_memory(&self) -> NodeMemory {
        let memory = self.memory_record();
        NodeMemory {
            host: self.host.clone(),
            gpu_peak_above_baseline_bytes: self.gpu_peak_above_baseline(),
            host_peak_pss_bytes: memory.host_peak_pss_bytes,
            host_peak_rss_bytes: memory.host_peak_rss_bytes,
            shm_peak_bytes: memory.shm_peak_bytes,
            timeline: memory.timeline,
        }
    }

    /// The `memory` section of `results.json`.
    pub fn memory_record(&self) -> MemoryRecord {
        let Some(s) = &self.summary else {
            return MemoryRecord::default();
        };
        let interval = s.interval_ms / 1000.0;
        let gpu = s.gpu.as_ref().map(|g| GpuMemory {
            interval_seconds: interval,
            samples: g
                .devices
                .iter()
                .filter_map(|d| d.used.as_ref().map(|u| u.samples))
                .max()
                .unwrap_or(0),
            devices: g
                .devices
                .iter()
                .filter_map(|d| {
                    let used = d.used.as_ref()?;
                    Some(GpuDevicePeak {
                        index: d.index,
                        name: d.name.clone().unwrap_or_default(),
                        baseline_bytes: used.baseline_bytes,
                        peak_bytes: used.peak_bytes,
                        peak_at_seconds: used.peak_at_ms as f64 / 1000.0,
                        process_peak_bytes: d.processes.iter().map(|p| p.peak_bytes).max(),
                    })
                })
                .collect(),
        });
        let pss_read = s.host.pss.is_some();
        let mut not_sampled = std::collections::BTreeMap::new();
        if !pss_read && s.host.pss_reads > 0 {
            not_sampled.insert(
                goldgate_schema::metric_names::HOST_PEAK.to_owned(),
                format!(
                    "none of the {} PSS read(s), the first as the job started, found a process \
                     of the job (it ended before its memory could be read)",
                    s.host.pss_reads
                ),
            );
        }
        MemoryRecord {
            gpu,
            host_peak_pss_bytes: s.host_peak_pss_bytes(),
            host_pss_reads: pss_read.then_some(s.host.pss_reads),
            host_pss_read_cpu_seconds: pss_read.then_some(s.host.pss_read_cpu_seconds),
            host_peak_rss_bytes: s.host_peak_rss_bytes(),
            mem_available: s.host.mem_available.as_ref().map(|m| MemAvailableRecord {
                baseline_bytes: m.baseline_bytes,
                min_bytes: m.min_bytes,
                min_at_seconds: m.min_at_ms as f64 / 1000.0,
                drop_bytes: m.drop_bytes,
            }),
            shm_peak_bytes: s.shm_peak_bytes(),
            host_interval_seconds: interval,
            timeline: timeline(s),
            not_sampled,
        }
    }
}

/// One timeline on the host sampler's time axis. Each other series contributes, for each
/// step of that axis, the largest value it saw since the previous step, so no peak is lost.
fn timeline(s: &SampleSummary) -> Timeline {
    let axis: Vec<u64> = match s.host.rss.as_ref() {
        Some(r) => r.timeline.iter().map(|p| p.t_ms).collect(),
        None => s
            .gpu
            .as_ref()
            .and_then(|g| g.devices.first())
            .and_then(|d| d.used.as_ref())
            .map(|u| u.timeline.iter().map(|p| p.t_ms).collect())
            .unwrap_or_default(),
    };
    let host = s.host.rss.as_ref().map(|r| resample(&r.timeline, &axis, 0));
    let pss = s.host.pss.as_ref().map(|r| resample(&r.timeline, &axis, 0));
    let shm = s
        .host
        .shm
        .as_ref()
        .map(|r| resample(&r.timeline, &axis, r.baseline_bytes));
    let gpu: Option<Vec<Option<u64>>> = s.gpu.as_ref().map(|g| {
        let per_device: Vec<Vec<Option<u64>>> = g
            .devices
            .iter()
            .filter_map(|d| d.used.as_ref())
            .map(|u| resample(&u.timeline, &axis, u.baseline_bytes))
            .collect();
        (0..axis.len())
            .map(|i| {
                per_device
                    .iter()
                    .map(|d| d[i])
                    .try_fold(0u64, |acc, v| v.map(|v| acc + v))
            })
            .collect()
    });
    Timeline {
        t_seconds: axis.iter().map(|t| *t as f64 / 1000.0).collect(),
        gpu_used_bytes: gpu.unwrap_or_else(|| vec![None; axis.len()]),
        host_rss_bytes: host
            .map(|h| h.into_iter().map(|v| v.unwrap_or(0)).collect())
            .unwrap_or_else(|| vec![0; axis.len()]),
        // Empty (not zeros) when PSS was not read, so a chart can tell.
        host_pss_bytes: pss
            .map(|h| h.into_iter().map(|v| v.unwrap_or(0)).collect())
            .unwrap_or_default(),
        shm_bytes: shm
            .map(|h| h.into_iter().map(|v| v.unwrap_or(0)).collect())
            .unwrap_or_else(|| vec![0; axis.len()]),
        saves: Vec::new(),
    }
}

/// For each time on `axis`, the largest point in (previous time, time] minus `baseline`, or
/// the last value before it when the series has no point in that window.
fn resample(points: &[Point], axis: &[u64], baseline: u64) -> Vec<Option<u64>> {
    let mut out = Vec::with_capacity(axis.len());
    let mut i = 0;
    let mut last: Option<u64> = None;
    for &t in axis {
        let mut best: Option<u64> = None;
        while i < points.len() && points[i].t_ms <= t {
            best = Some(best.map_or(points[i].bytes, |b: u64| b.max(points[i].bytes)));
            last = Some(points[i].bytes);
            i += 1;
        }
        out.push(best.or(last).map(|b| b.saturating_sub(baseline)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t_ms: u64, bytes: u64) -> Point {
        Point { t_ms, bytes }
    }

    #[test]
    fn resampling_keeps_peaks_between_axis_steps() {
        let pts = [p(0, 10), p(5, 90), p(8, 20), p(20, 30)];
        assert_eq!(
            resample(&pts, &[0, 10, 15, 20], 10),
            vec![Some(0), Some(80), Some(10), Some(20)]
        );
        assert_eq!(resample(&[], &[0, 10], 0), vec![None, None]);
    }
}
