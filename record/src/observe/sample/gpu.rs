//! Stage "observe": the NVML side of a job — used device memory of the job's GPUs at every
//! tick of the sampler thread, per-process use at a lower rate, and the driver facts for the
//! environment fingerprint. Without a driver it reports "unavailable", never zeros.
//!
//! The tick's query is NVML's first memory call, `nvmlDeviceGetMemoryInfo`, made through
//! the loaded library (the one `unsafe` block of the crate): `nvml-wrapper`'s
//! `memory_info()` calls `nvmlDeviceGetMemoryInfo_v2`, which cost 7 % more CPU per call on the
//! H200 (`docs/book/src/results/h200.md`, "Why NVML costs 90 µs a tick"). The first call's `used` also counts the memory the driver
//! reserves; that reserve is read once through the second call when a device is opened and
//! subtracted, so every recorded value means what the second call's `used` means.

use std::collections::BTreeMap;

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlMemory_t;

use super::timeline::{Point, Series, SeriesSummary};

/// Driver facts for the environment fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuEnvironment {
    pub driver_version: Option<String>,
    /// e.g. `12.8`.
    pub cuda_driver_version: Option<String>,
    /// Every GPU on the node, not only the job's.
    pub device_count: u32,
    pub names: Vec<String>,
}

/// One of the job's GPUs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessPeak {
    pub pid: u32,
    pub peak_bytes: u64,
    pub peak_at_ms: u64,
}

/// What the NVML sampler recorded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuSummary {
    pub environment: GpuEnvironment,
    pub devices: Vec<DeviceSummary>,
}

/// Which NVML call reads used memory at each tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryQuery {
    /// `nvmlDeviceGetMemoryInfo`, less the driver's reserve read once at the start.
    #[default]
    V1,
    /// `nvmlDeviceGetMemoryInfo_v2` at every tick (`nvml-wrapper`'s `memory_info()`); kept to
    /// measure the two against each other (`benches/sampler.rs`, row `nvml-v2`).
    V2,
}

/// Loads NVML, or says why it cannot be used (the reason becomes `gpu_unavailable`).
pub(crate) fn init() -> Result<Nvml, String> {
    Nvml::init().map_err(|e| format!("GPU memory not sampled: NVML unavailable ({e})"))
}

/// The job's GPUs being sampled; driven by the sampler thread's loop.
pub(crate) struct Gpus<'n> {
    environment: GpuEnvironment,
    devs: Vec<Dev<'n>>,
    warnings: Vec<String>,
}

impl<'n> Gpus<'n> {
    /// Picks the job's devices and takes their baselines.
    pub(crate) fn open(nvml: &'n Nvml, visible: Option<&str>, query: MemoryQuery) -> Gpus<'n> {
        let mut warnings = Vec::new();
        let devs = select_devices(nvml, visible, query, &mut warnings);
        Gpus {
            environment: environment(nvml),
            devs,
            warnings,
        }
    }

    /// One memory query per device.
    pub(crate) fn sample(&mut self, t_ms: u64) {
        for d in &mut self.devs {
            match d.used() {
                Ok(bytes) => d.series.push(Point { t_ms, bytes }),
                Err(e) => warn_once(&mut d.failed, &mut self.warnings, || {
                    format!("GPU {}: {e}", d.info.index)
                }),
            }
        }
    }

    /// Per-process use of the job's `pids` (the query is costlier than `memory_info` and
    /// the numbers move slowly: the caller asks at a lower rate).
    pub(crate) fn sample_processes(&mut self, pids: &[u32], t_ms: u64) {
        if pids.is_empty() {
            return;
        }
        for d in &mut self.devs {
            d.sample_processes(pids, t_ms);
        }
    }

    pub(crate) fn finish(self) -> (GpuSummary, Vec<String>) {
        let summary = GpuSummary {
            environment: self.environment,
            devices: self.devs.into_iter().map(Dev::finish).collect(),
        };
        (summary, self.warnings)
    }
}

/// One device being sampled.
struct Dev<'n> {
    device: Device<'n>,
    query: MemoryQuery,
    /// What the driver reserves on this device: in `nvmlDeviceGetMemoryInfo`'s `used`, not in
    /// `nvmlDeviceGetMemoryInfo_v2`'s.
    reserved: u64,
    info: DeviceSummary,
    series: Series,
    procs: BTreeMap<u32, ProcessPeak>,
    failed: bool,
}

impl Dev<'_> {
    /// Used memory as `nvmlDeviceGetMemoryInfo_v2` counts it.
    fn used(&self) -> Result<u64, NvmlError> {
        match self.query {
            MemoryQuery::V1 => used_v1(&self.device).map(|used| used.saturating_sub(self.reserved)),
            MemoryQuery::V2 => self.device.memory_info().map(|m| m.used),
        }
    }

    fn finish(self) -> DeviceSummary {
        DeviceSummary {
            used: self.series.summary(),
            processes: self.procs.into_values().collect(),
            ..self.info
        }
    }
    fn sample_processes(&mut self, pids: &[u32], t_ms: u64) {
        let Ok(list) = self.device.running_compute_processes() else {
            return;
        };
        for p in list {
            let UsedGpuMemory::Used(bytes) = p.used_gpu_memory else {
                continue;
            };
            if !pids.contains(&p.pid) {
                continue;
            }
            let peak = self.procs.entry(p.pid).or_insert(ProcessPeak {
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

fn warn_once(flag: &mut bool, warnings: &mut Vec<String>, msg: impl FnOnce() -> String) {
    if !*flag {
        *flag = true;
        warnings.push(msg());
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
    query: MemoryQuery,
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
            Ok(device) => devs.push(open(device, query)),
            Err(e) => warnings.push(format!("GPU `{token}` from CUDA_VISIBLE_DEVICES: {e}")),
        }
    }
    devs
}

/// `used` from `nvmlDeviceGetMemoryInfo`: total minus free, the driver's reserve included.
#[allow(unsafe_code)]
fn used_v1(device: &Device<'_>) -> Result<u64, NvmlError> {
    let query = nvml_sym(device.nvml().lib().nvmlDeviceGetMemoryInfo.as_ref())?;
    let mut memory = nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: the handle belongs to a device of the `Nvml` that `device` borrows, so the
    // library is initialised and the handle valid for this call; `memory` is the struct this
    // entry point writes, and lives across the call.
    nvml_try(unsafe { query(device.handle(), &mut memory) })?;
    Ok(memory.used)
}

fn open(device: Device<'_>, query: MemoryQuery) -> Dev<'_> {
    let memory = device.memory_info().ok();
    let info = DeviceSummary {
        index: device.index().unwrap_or(u32::MAX),
        uuid: device.uuid().ok(),
        name: device.name().ok(),
        total_bytes: memory.as_ref().map(|m| m.total),
        used: None,
        processes: Vec::new(),
    };
    let mut dev = Dev {
        device,
        query,
        reserved: memory.map_or(0, |m| m.reserved),
        info,
        series: Series::new(0),
        procs: BTreeMap::new(),
        failed: false,
    };
    // The baseline comes from the call every tick makes, so that the reserve cancels.
    dev.series = Series::new(dev.used().unwrap_or(0));
    dev
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
