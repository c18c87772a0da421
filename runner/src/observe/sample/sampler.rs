//! Stage "observe": starts the sampler thread for one job (GPU and host memory on one
//! schedule, baselines taken before the job is spawned), attaches it to the job's process
//! group and collects the [`SampleSummary`] when the job is over.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::gpu::{self, GpuSummary, Gpus};
use super::host::{Host, HostSummary};
use crate::exit::{Classify, Exit};

/// Per-process GPU memory is asked for at most this often (the query is costlier than
/// `memory_info` and the numbers move slowly).
const PROCESS_EVERY: Duration = Duration::from_millis(100);

/// Default `--sample-interval` (see README, "How goldgate measures").
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);

/// What to sample and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerConfig {
    pub interval: Duration,
    /// Sample GPUs through NVML.
    pub gpu: bool,
    /// Read the RSS of the job's process tree every interval. Off (to measure NVML alone),
    /// the tree is still followed for the per-process GPU figures.
    pub rss: bool,
    /// The job's `CUDA_VISIBLE_DEVICES`; `None` samples every GPU.
    pub cuda_visible_devices: Option<String>,
    /// Shared-memory filesystem to watch; `None` skips it.
    pub shm_path: Option<PathBuf>,
}

impl Default for SamplerConfig {
    fn default() -> SamplerConfig {
        SamplerConfig {
            interval: DEFAULT_INTERVAL,
            gpu: true,
            rss: true,
            cuda_visible_devices: None,
            shm_path: Some(PathBuf::from("/dev/shm")),
        }
    }
}

/// Everything the samplers recorded for one job. Times are milliseconds since the sampler
/// started, which is just before the job was spawned.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SampleSummary {
    pub interval_ms: f64,
    pub duration_ms: u64,
    /// `None` when NVML is unavailable or GPU sampling was off: never zeros.
    pub gpu: Option<GpuSummary>,
    /// Why `gpu` is `None`.
    pub gpu_unavailable: Option<String>,
    pub host: HostSummary,
    /// Problems worth one line each on the terminal.
    pub warnings: Vec<String>,
}

impl SampleSummary {
    /// `gpu-peak-memory-bytes`: the largest per-device peak above its baseline.
    pub fn gpu_peak_memory_bytes(&self) -> Option<u64> {
        let gpu = self.gpu.as_ref()?;
        gpu.devices
            .iter()
            .filter_map(|d| d.used.as_ref())
            .map(|s| s.peak_above_baseline_bytes)
            .max()
    }

    /// `host-peak-rss-bytes`.
    pub fn host_peak_rss_bytes(&self) -> Option<u64> {
        self.host.rss.as_ref().map(|s| s.peak_bytes)
    }

    /// `shm-peak-bytes`: peak `/dev/shm` usage above the baseline.
    pub fn shm_peak_bytes(&self) -> Option<u64> {
        self.host.shm.as_ref().map(|s| s.peak_above_baseline_bytes)
    }
}

/// The samplers could not be started.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SampleError {
    #[error("cannot start the sampler thread")]
    Thread {
        #[source]
        source: std::io::Error,
    },
}

impl Classify for SampleError {
    fn exit(&self) -> Exit {
        Exit::Failure
    }
}

/// What the sampler thread recorded.
struct Report {
    host: HostSummary,
    /// The GPU summary, or why there is none.
    gpu: Result<GpuSummary, String>,
    warnings: Vec<String>,
}

/// Settings the sampler thread owns.
struct Plan {
    interval: Duration,
    gpu: bool,
    rss: bool,
    cuda_visible_devices: Option<String>,
    shm_path: Option<PathBuf>,
}

/// The running sampler thread of one job.
pub struct Sampler {
    pgid: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Report>,
    origin: Instant,
    interval: Duration,
}

impl Sampler {
    /// Starts the thread and returns once every baseline is taken: spawn the job after this.
    ///
    /// One thread samples the GPUs and the host on one schedule: the wakeup, not the reads,
    /// is most of what a tick costs, so a second thread would double the cost with GPUs.
    pub fn start(config: &SamplerConfig) -> Result<Sampler, SampleError> {
        let origin = Instant::now();
        let plan = Plan {
            interval: config.interval.max(Duration::from_millis(1)),
            gpu: config.gpu,
            rss: config.rss,
            cuda_visible_devices: config.cuda_visible_devices.clone(),
            shm_path: config.shm_path.clone(),
        };
        let interval = plan.interval;
        let pgid = Arc::new(AtomicU32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let (thread_pgid, thread_stop) = (pgid.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("goldgate-sampler".to_owned())
            .spawn(move || run(&plan, origin, &thread_pgid, &ready_tx, &thread_stop))
            .map_err(|source| SampleError::Thread { source })?;
        // The thread sends once after its baselines; if it died, its sender is dropped.
        let _ = ready_rx.recv();
        Ok(Sampler {
            pgid,
            stop,
            thread,
            origin,
            interval,
        })
    }

    /// Tells the sampler which process group is the job (`LaunchEvent::Spawned`).
    pub fn attach(&self, pgid: u32) {
        self.pgid.store(pgid, Ordering::SeqCst);
    }

    /// Stops the thread and gathers what it recorded.
    pub fn stop(self) -> SampleSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.thread().unpark();
        let duration_ms = self.origin.elapsed().as_millis() as u64;
        let report = self.thread.join().unwrap_or_else(|_| {
            let why = "the sampler thread panicked";
            Report {
                host: HostSummary {
                    rss: None,
                    shm: None,
                    max_processes: 0,
                },
                gpu: Err(why.to_owned()),
                warnings: vec![format!("{why}; host memory not recorded")],
            }
        });
        let (gpu, gpu_unavailable) = match report.gpu {
            Ok(summary) => (Some(summary), None),
            Err(reason) => (None, Some(reason)),
        };
        SampleSummary {
            interval_ms: self.interval.as_secs_f64() * 1000.0,
            duration_ms,
            gpu,
            gpu_unavailable,
            host: report.host,
            warnings: report.warnings,
        }
    }
}

/// The sampler thread: baselines, `ready`, then one tick per interval until `stop`.
fn run(
    plan: &Plan,
    origin: Instant,
    pgid: &AtomicU32,
    ready: &Sender<()>,
    stop: &AtomicBool,
) -> Report {
    let mut host = Host::start(plan.shm_path.as_deref(), plan.rss);
    let nvml = plan.gpu.then(gpu::init);
    let mut gpus = match &nvml {
        Some(Ok(nvml)) => Some(Gpus::open(nvml, plan.cuda_visible_devices.as_deref())),
        _ => None,
    };
    let _ = ready.send(());
    let proc_every = (PROCESS_EVERY.as_nanos() / plan.interval.as_nanos()).max(1) as u64;
    let mut pids = Vec::new();
    let mut ticker = Ticker::new(plan.interval);
    let mut now = Instant::now();
    for tick in 0u64.. {
        let t_ms = now.duration_since(origin).as_millis() as u64;
        host.sample(now, t_ms, pgid.load(Ordering::SeqCst));
        if let Some(gpus) = &mut gpus {
            gpus.sample(t_ms);
            if tick % proc_every == 0 {
                if let Some(changed) = host.changed_pids() {
                    pids = changed;
                }
                gpus.sample_processes(&pids, t_ms);
            }
        }
        match ticker.wait(stop) {
            Some(woke) => now = woke,
            None => break,
        }
    }
    let (host, mut warnings) = host.finish();
    let gpu = match (gpus, &nvml) {
        (Some(gpus), _) => {
            let (summary, gpu_warnings) = gpus.finish();
            warnings.extend(gpu_warnings);
            Ok(summary)
        }
        (None, Some(Err(reason))) => {
            warnings.push(reason.clone());
            Err(reason.clone())
        }
        (None, _) => Err("GPU sampling is off".to_owned()),
    };
    Report {
        host,
        gpu,
        warnings,
    }
}

/// Fixed-rate schedule that skips ticks it is too late for instead of bursting.
///
/// It parks the thread (woken early by `unpark` on stop). std turns the timeout into an
/// absolute `CLOCK_MONOTONIC` deadline (`FUTEX_WAIT_BITSET`), and the schedule advances by
/// whole intervals, so ticks do not drift. On the 2-core VM where the benchmark ran, a wakeup
/// cost ~29 µs of CPU, the same through `park_timeout`, a bare futex wait or
/// `clock_nanosleep(TIMER_ABSTIME)`, and ~35 µs through `thread::sleep`.
pub(crate) struct Ticker {
    interval: Duration,
    next: Instant,
}

impl Ticker {
    pub(crate) fn new(interval: Duration) -> Ticker {
        Ticker {
            interval,
            next: Instant::now(),
        }
    }

    /// Sleeps until the next tick and returns the time it woke; `None` once `stop` is set.
    pub(crate) fn wait(&mut self, stop: &AtomicBool) -> Option<Instant> {
        let mut now = Instant::now();
        self.next += self.interval;
        if self.next < now {
            self.next = now + self.interval;
        }
        loop {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            if now >= self.next {
                return Some(now);
            }
            std::thread::park_timeout(self.next - now);
            now = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_rss_of_an_attached_group_and_shm_baseline() {
        let config = SamplerConfig {
            gpu: false,
            ..SamplerConfig::default()
        };
        let sampler = Sampler::start(&config).unwrap();
        let pgid = rustix::process::getpgid(None)
            .unwrap()
            .as_raw_nonzero()
            .get() as u32;
        sampler.attach(pgid);
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(100) {
            std::hint::spin_loop();
        }
        let summary = sampler.stop();
        let rss = summary.host.rss.as_ref().unwrap();
        assert!(rss.samples >= 3, "{rss:?}");
        assert!(rss.peak_bytes > 1 << 20);
        assert_eq!(summary.host_peak_rss_bytes(), Some(rss.peak_bytes));
        assert!(summary.shm_peak_bytes().is_some());
        assert_eq!(summary.gpu, None);
        assert_eq!(summary.gpu_peak_memory_bytes(), None);
        assert_eq!(
            summary.gpu_unavailable.as_deref(),
            Some("GPU sampling is off")
        );
    }

    #[test]
    fn gpu_fields_are_none_without_nvml_and_filled_with_it() {
        let config = SamplerConfig {
            shm_path: None,
            ..SamplerConfig::default()
        };
        let summary = Sampler::start(&config).unwrap().stop();
        match nvml_wrapper::Nvml::init() {
            Err(_) => {
                assert_eq!(summary.gpu, None);
                assert_eq!(summary.gpu_peak_memory_bytes(), None);
                let reason = summary.gpu_unavailable.as_deref().unwrap();
                assert!(
                    reason.starts_with("GPU memory not sampled: NVML unavailable ("),
                    "{reason}"
                );
                assert_eq!(summary.warnings, [reason]);
            }
            Ok(_) => {
                let gpu = summary.gpu.as_ref().unwrap();
                assert!(!gpu.devices.is_empty() && gpu.environment.driver_version.is_some());
                assert!(summary.gpu_peak_memory_bytes().is_some());
            }
        }
        assert_eq!(summary.host.shm, None);
    }

    #[test]
    fn ticker_ticks_and_stops_when_unparked() {
        let mut ticker = Ticker::new(Duration::from_millis(1));
        let woke = ticker.wait(&AtomicBool::new(false)).unwrap();
        assert!(woke >= ticker.next);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let waiter =
            std::thread::spawn(move || Ticker::new(Duration::from_secs(3600)).wait(&thread_stop));
        stop.store(true, Ordering::SeqCst);
        waiter.thread().unpark();
        assert_eq!(waiter.join().unwrap(), None);
    }
}
