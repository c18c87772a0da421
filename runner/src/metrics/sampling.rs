//! Stage "metrics": drives the memory samplers around one launch and converts what they saw
//! into the `memory` and `fingerprint` parts of `results.json` (peaks, per-device figures, one
//! timeline on a common time axis), plus goldgate's own CPU time while the job ran.

use std::time::Duration;

use super::record::{Fingerprint, GpuDevicePeak, GpuMemory, MemoryRecord, Timeline};
use crate::observe::sample::{Point, SampleSummary, Sampler, SamplerConfig};

/// Samplers running for one launch.
pub struct Running {
    sampler: Option<Sampler>,
    error: Option<String>,
    cpu_at_start: Option<f64>,
}

/// What the samplers recorded (or why they could not).
#[derive(Clone, Debug, Default)]
pub struct Sampled {
    pub summary: Option<SampleSummary>,
    pub warnings: Vec<String>,
    /// CPU seconds goldgate itself used while the job ran (all its threads: samplers, log parser).
    pub observer_cpu_seconds: Option<f64>,
}

/// Starts the samplers; returns once their baselines are taken (spawn the job after this).
pub fn start(interval: Duration, cuda_visible_devices: Option<&str>) -> Running {
    let config = SamplerConfig {
        interval,
        cuda_visible_devices: cuda_visible_devices.map(str::to_owned),
        ..SamplerConfig::default()
    };
    let cpu_at_start = own_cpu_seconds();
    match Sampler::start(&config) {
        Ok(sampler) => Running {
            sampler: Some(sampler),
            error: None,
            cpu_at_start,
        },
        Err(e) => Running {
            sampler: None,
            error: Some(format!("memory samplers did not start: {e}")),
            cpu_at_start,
        },
    }
}

impl Running {
    /// Points the samplers at the job's process group.
    pub fn watch(&self, pgid: u32) {
        if let Some(s) = &self.sampler {
            s.attach(pgid);
        }
    }

    /// Stops the samplers and returns what they recorded.
    pub fn stop(self) -> Sampled {
        let observer_cpu_seconds = match (self.cpu_at_start, own_cpu_seconds()) {
            (Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        };
        let summary = self.sampler.map(Sampler::stop);
        let mut warnings: Vec<String> = self.error.into_iter().collect();
        if let Some(s) = &summary {
            warnings.extend(s.warnings.iter().cloned());
            if let Some(why) = &s.gpu_unavailable {
                warnings.push(format!("no GPU memory figures: {why}"));
            }
        }
        Sampled {
            summary,
            warnings,
            observer_cpu_seconds,
        }
    }
}

/// utime + stime of this process (all threads) from `/proc/self/stat`, in seconds.
/// `/proc` reports these in USER_HZ, which Linux fixes at 100 for user space.
fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 2 (comm) may hold spaces; the fields after its closing parenthesis are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

impl Sampled {
    /// `gpu-peak-memory-bytes`.
    pub fn gpu_peak_above_baseline(&self) -> Option<u64> {
        self.summary.as_ref()?.gpu_peak_memory_bytes()
    }

    /// `host-peak-rss-bytes`.
    pub fn host_peak_rss(&self) -> Option<u64> {
        self.summary.as_ref()?.host_peak_rss_bytes()
    }

    /// `shm-peak-bytes`.
    pub fn shm_peak(&self) -> Option<u64> {
        self.summary.as_ref()?.shm_peak_bytes()
    }

    /// GPU model, count and driver versions for the environment fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        let Some(gpu) = self.summary.as_ref().and_then(|s| s.gpu.as_ref()) else {
            return Fingerprint::default();
        };
        Fingerprint {
            gpu_model: gpu.devices.iter().find_map(|d| d.name.clone()),
            gpu_count: Some(gpu.devices.len() as u32),
            driver_version: gpu.environment.driver_version.clone(),
            cuda_version: gpu.environment.cuda_driver_version.clone(),
            ..Fingerprint::default()
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
        MemoryRecord {
            gpu,
            host_peak_rss_bytes: s.host_peak_rss_bytes(),
            shm_peak_bytes: s.shm_peak_bytes(),
            host_interval_seconds: interval,
            timeline: timeline(s),
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

    #[test]
    fn own_cpu_time_is_readable_and_grows() {
        let a = own_cpu_seconds().unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = own_cpu_seconds().unwrap();
        assert!(b >= a);
    }
}
