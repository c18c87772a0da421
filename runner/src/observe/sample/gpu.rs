//! Stage "observe": the NVML side of a job — used device memory of the job's GPUs at the
//! sampling interval, per-process use at a lower rate, and the driver facts for the
//! environment fingerprint. Without a driver it reports "unavailable", never zeros.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;

use super::sampler::Ticker;
use super::timeline::{Point, Series, SeriesSummary};

/// Per-process memory is asked for at most this often (the query is costlier than
/// `memory_info` and the numbers move slowly).
const PROCESS_EVERY: Duration = Duration::from_millis(100);

/// Driver facts for the environment fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuEnvironment {
    pub driver_version: Option<String>,
    /// e.g. `12.8`.
    pub cuda_driver_version: Option<String>,
    /// Every GPU on the node, not only the job's.
    pub device_count: u32,
    pub names: Vec<String>,
}

/// One of the job's GPUs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceSummary {
    /// NVML index (PCI bus order).
    pub index: u32,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub total_bytes: Option<u64>,
    /// NVML used memory; the baseline is the value before the job started.
    pub used: Option<SeriesSummary>,
    /// Peaks of the job's processes on this device, where the driver reports them.
    pub processes: Vec<ProcessPeak>,
}

/// The highest memory one process of the job used on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProcessPeak {
    pub pid: u32,
    pub peak_bytes: u64,
    pub peak_at_ms: u64,
}

/// What the NVML sampler recorded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuSummary {
    pub environment: GpuEnvironment,
    pub devices: Vec<DeviceSummary>,
}

/// The GPU thread's result: a summary, or why there is none, plus warnings.
pub(crate) struct GpuReport {
    pub(crate) summary: Result<GpuSummary, String>,
    pub(crate) warnings: Vec<String>,
}

struct Dev<'n> {
    device: nvml_wrapper::Device<'n>,
    info: DeviceSummary,
    series: Series,
    procs: BTreeMap<u32, ProcessPeak>,
    failed: bool,
}

/// Runs on the GPU sampler thread until `stop` fires. `ready` is sent once the baselines
/// are taken (or NVML turned out to be unavailable).
pub(crate) fn sample_gpus(
    visible: Option<&str>,
    interval: Duration,
    origin: Instant,
    job_pids: &Mutex<Vec<u32>>,
    ready: &Sender<()>,
    stop: &AtomicBool,
) -> GpuReport {
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(e) => {
            let _ = ready.send(());
            let reason = format!("GPU memory not sampled: NVML unavailable ({e})");
            return GpuReport {
                summary: Err(reason),
                warnings: Vec::new(),
            };
        }
    };
    let environment = environment(&nvml);
    let mut warnings = Vec::new();
    let mut devs = select_devices(&nvml, visible, &mut warnings);
    let _ = ready.send(());
    let proc_every = (PROCESS_EVERY.as_nanos() / interval.as_nanos().max(1)).max(1) as u64;
    let mut ticker = Ticker::new(interval);
    for tick in 0u64.. {
        let t_ms = origin.elapsed().as_millis() as u64;
        for d in &mut devs {
            match d.device.memory_info() {
                Ok(m) => d.series.push(Point {
                    t_ms,
                    bytes: m.used,
                }),
                Err(e) => warn_once(&mut d.failed, &mut warnings, || {
                    format!("GPU {}: {e}", d.info.index)
                }),
            }
        }
        if tick % proc_every == 0 {
            let pids = job_pids.lock().map(|p| p.clone()).unwrap_or_default();
            sample_processes(&mut devs, &pids, t_ms);
        }
        if ticker.wait(stop) {
            break;
        }
    }
    let devices = devs.into_iter().map(Dev::finish).collect();
    GpuReport {
        summary: Ok(GpuSummary {
            environment,
            devices,
        }),
        warnings,
    }
}

impl Dev<'_> {
    fn finish(self) -> DeviceSummary {
        DeviceSummary {
            used: self.series.summary(),
            processes: self.procs.into_values().collect(),
            ..self.info
        }
    }
}

fn warn_once(flag: &mut bool, warnings: &mut Vec<String>, msg: impl FnOnce() -> String) {
    if !*flag {
        *flag = true;
        warnings.push(msg());
    }
}

fn sample_processes(devs: &mut [Dev<'_>], pids: &[u32], t_ms: u64) {
    if pids.is_empty() {
        return;
    }
    for d in devs {
        let Ok(list) = d.device.running_compute_processes() else {
            continue;
        };
        for p in list {
            let UsedGpuMemory::Used(bytes) = p.used_gpu_memory else {
                continue;
            };
            if !pids.contains(&p.pid) {
                continue;
            }
            let peak = d.procs.entry(p.pid).or_insert(ProcessPeak {
                pid: p.pid,
                peak_bytes: 0,
                peak_at_ms: t_ms,
            });
            if bytes > peak.peak_bytes {
                *peak = ProcessPeak {
                    pid: p.pid,
                    peak_bytes: bytes,
                    peak_at_ms: t_ms,
                };
            }
        }
    }
}

fn environment(nvml: &Nvml) -> GpuEnvironment {
    let device_count = nvml.device_count().unwrap_or(0);
    let names = (0..device_count)
        .map(|i| {
            nvml.device_by_index(i)
                .and_then(|d| d.name())
                .unwrap_or_else(|_| "unknown".to_owned())
        })
        .collect();
    GpuEnvironment {
        driver_version: nvml.sys_driver_version().ok(),
        cuda_driver_version: nvml.sys_cuda_driver_version().ok().map(cuda_version),
        device_count,
        names,
    }
}

/// `12080` → `12.8` (NVML encodes major * 1000 + minor * 10).
fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The job's devices: those named by its `CUDA_VISIBLE_DEVICES` (indices or `GPU-` UUIDs),
/// else all. CUDA numbers devices fastest-first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`; on a
/// node of identical GPUs that is PCI order too, which is NVML's.
fn select_devices<'n>(
    nvml: &'n Nvml,
    visible: Option<&str>,
    warnings: &mut Vec<String>,
) -> Vec<Dev<'n>> {
    let tokens: Vec<String> = match visible {
        Some(list) => list
            .split(',')
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect(),
        None => (0..nvml.device_count().unwrap_or(0))
            .map(|i| i.to_string())
            .collect(),
    };
    let mut devs = Vec::new();
    for token in tokens {
        let device = match token.parse::<u32>() {
            Ok(i) => nvml.device_by_index(i),
            Err(_) if token.starts_with("GPU-") => nvml.device_by_uuid(token.as_str()),
            Err(_) => {
                warnings.push(format!("GPU `{token}` in CUDA_VISIBLE_DEVICES is not sampled (only indices and GPU- UUIDs are)"));
                continue;
            }
        };
        match device {
            Ok(device) => devs.push(open(device)),
            Err(e) => warnings.push(format!("GPU `{token}` from CUDA_VISIBLE_DEVICES: {e}")),
        }
    }
    devs
}

fn open(device: nvml_wrapper::Device<'_>) -> Dev<'_> {
    let memory = device.memory_info().ok();
    let info = DeviceSummary {
        index: device.index().unwrap_or(u32::MAX),
        uuid: device.uuid().ok(),
        name: device.name().ok(),
        total_bytes: memory.as_ref().map(|m| m.total),
        used: None,
        processes: Vec::new(),
    };
    let baseline = memory.map_or(0, |m| m.used);
    Dev {
        device,
        info,
        series: Series::new(baseline),
        procs: BTreeMap::new(),
        failed: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_versions_read_like_nvidia_smi() {
        assert_eq!(cuda_version(12080), "12.8");
        assert_eq!(cuda_version(11020), "11.2");
        assert_eq!(cuda_version(13000), "13.0");
    }
}
