//! Stage "observe": starts the GPU and host samplers for one job (each on its own thread,
//! baselines taken before the job is spawned), attaches them to the job's process group and
//! collects the [`SampleSummary`] when the job is over.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::gpu::{GpuReport, GpuSummary, sample_gpus};
use super::host::{ProcTree, fd_used_bytes, fs_used_bytes};
use super::timeline::{Point, Series, SeriesSummary};
use crate::exit::{Classify, Exit};

/// Default `--sample-interval` (see README, "How goldgate measures").
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);

/// What to sample and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerConfig {
    pub interval: Duration,
    /// Sample GPUs through NVML.
    pub gpu: bool,
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

/// The host side of one job.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostSummary {
    /// RSS summed over the job's process tree (shared pages count once per process).
    pub rss: Option<SeriesSummary>,
    /// Used bytes of `/dev/shm`; the baseline is the value before the job.
    pub shm: Option<SeriesSummary>,
    /// Most processes seen in the job's tree at once.
    pub max_processes: usize,
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
    #[error("cannot start the {which} sampler thread")]
    Thread {
        which: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl Classify for SampleError {
    fn exit(&self) -> Exit {
        Exit::Failure
    }
}

struct HostReport {
    rss: Series,
    shm: Option<Series>,
    max_processes: usize,
    warnings: Vec<String>,
}

/// Running samplers for one job.
pub struct Sampler {
    pgid: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    host: JoinHandle<HostReport>,
    gpu: Option<JoinHandle<GpuReport>>,
    origin: Instant,
    interval: Duration,
}

impl Sampler {
    /// Starts the threads and returns once every baseline is taken: spawn the job after this.
    pub fn start(config: &SamplerConfig) -> Result<Sampler, SampleError> {
        let origin = Instant::now();
        let interval = config.interval.max(Duration::from_millis(1));
        let pgid = Arc::new(AtomicU32::new(0));
        let job_pids = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let (shm, thread_pgid, thread_pids, ready, host_stop) = (
            config.shm_path.clone(),
            pgid.clone(),
            job_pids.clone(),
            ready_tx.clone(),
            stop.clone(),
        );
        let host = std::thread::Builder::new()
            .name("goldgate-host-sampler".to_owned())
            .spawn(move || {
                sample_host(
                    shm,
                    interval,
                    origin,
                    &thread_pgid,
                    &thread_pids,
                    &ready,
                    &host_stop,
                )
            })
            .map_err(|source| SampleError::Thread {
                which: "host",
                source,
            })?;
        let gpu = if config.gpu {
            let (visible, gpu_stop) = (config.cuda_visible_devices.clone(), stop.clone());
            let handle = std::thread::Builder::new()
                .name("goldgate-gpu-sampler".to_owned())
                .spawn(move || {
                    sample_gpus(
                        visible.as_deref(),
                        interval,
                        origin,
                        &job_pids,
                        &ready_tx,
                        &gpu_stop,
                    )
                })
                .map_err(|source| SampleError::Thread {
                    which: "GPU",
                    source,
                })?;
            Some(handle)
        } else {
            drop(ready_tx);
            None
        };
        // Each thread sends once after its baseline; a thread that died drops its sender.
        for _ in 0..1 + usize::from(gpu.is_some()) {
            if ready_rx.recv().is_err() {
                break;
            }
        }
        Ok(Sampler {
            pgid,
            stop,
            host,
            gpu,
            origin,
            interval,
        })
    }

    /// Tells the host sampler which process group is the job (`LaunchEvent::Spawned`).
    pub fn attach(&self, pgid: u32) {
        self.pgid.store(pgid, Ordering::SeqCst);
    }

    /// Stops the threads and gathers what they recorded.
    pub fn stop(self) -> SampleSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.host.thread().unpark();
        if let Some(gpu) = &self.gpu {
            gpu.thread().unpark();
        }
        let duration_ms = self.origin.elapsed().as_millis() as u64;
        let mut warnings = Vec::new();
        let host = match self.host.join() {
            Ok(report) => {
                warnings.extend(report.warnings);
                HostSummary {
                    rss: report.rss.summary(),
                    shm: report.shm.and_then(|s| s.summary()),
                    max_processes: report.max_processes,
                }
            }
            Err(_) => {
                warnings
                    .push("the host sampler thread panicked; host memory not recorded".to_owned());
                HostSummary {
                    rss: None,
                    shm: None,
                    max_processes: 0,
                }
            }
        };
        let (gpu, gpu_unavailable) = match self.gpu.map(JoinHandle::join) {
            None => (None, Some("GPU sampling is off".to_owned())),
            Some(Err(_)) => (None, Some("the GPU sampler thread panicked".to_owned())),
            Some(Ok(report)) => {
                warnings.extend(report.warnings);
                match report.summary {
                    Ok(summary) => (Some(summary), None),
                    Err(reason) => {
                        warnings.push(reason.clone());
                        (None, Some(reason))
                    }
                }
            }
        };
        let interval_ms = self.interval.as_secs_f64() * 1000.0;
        SampleSummary {
            interval_ms,
            duration_ms,
            gpu,
            gpu_unavailable,
            host,
            warnings,
        }
    }
}

fn sample_host(
    shm_path: Option<PathBuf>,
    interval: Duration,
    origin: Instant,
    pgid: &AtomicU32,
    job_pids: &Mutex<Vec<u32>>,
    ready: &Sender<()>,
    stop: &AtomicBool,
) -> HostReport {
    let mut warnings = Vec::new();
    let shm_baseline = shm_path.as_deref().and_then(|p| match fs_used_bytes(p) {
        Ok(used) => Some(used),
        Err(e) => {
            warnings.push(format!("{} not sampled: {e}", p.display()));
            None
        }
    });
    let mut shm = shm_baseline.map(Series::new);
    // An open handle spares the path lookup of `statvfs` on every tick.
    let shm_dir = shm_path
        .as_deref()
        .and_then(|p| std::fs::File::open(p).ok());
    let _ = ready.send(());
    let (mut rss, mut tree, mut max_processes) = (Series::new(0), None::<ProcTree>, 0);
    let mut ticker = Ticker::new(interval);
    loop {
        let now = Instant::now();
        let t_ms = now.duration_since(origin).as_millis() as u64;
        let job = pgid.load(Ordering::SeqCst);
        if tree.is_none() && job != 0 {
            tree = Some(ProcTree::new(job));
        }
        if let Some(tree) = &mut tree {
            let bytes = tree.sample(now);
            if tree.len() > 0 {
                rss.push(Point { t_ms, bytes });
                max_processes = max_processes.max(tree.len());
            }
            if tree.take_changed()
                && let Ok(mut pids) = job_pids.lock()
            {
                *pids = tree.pids();
            }
        }
        if let (Some(series), Some(dir)) = (&mut shm, &shm_dir)
            && let Ok(bytes) = fd_used_bytes(dir)
        {
            series.push(Point { t_ms, bytes });
        }
        if ticker.wait(stop) {
            return HostReport {
                rss,
                shm,
                max_processes,
                warnings,
            };
        }
    }
}

/// Fixed-rate schedule that skips ticks it is too late for instead of bursting.
///
/// It parks the thread (woken early by `unpark` on stop): on the 2-core VM where the
/// benchmark ran, a `park_timeout` wakeup cost ~25 µs of CPU against ~30–57 µs for an mpsc
/// `recv_timeout`, and the wakeup is most of what a tick costs.
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

    /// Sleeps until the next tick; true when `stop` is set.
    pub(crate) fn wait(&mut self, stop: &AtomicBool) -> bool {
        let now = Instant::now();
        self.next += self.interval;
        if self.next < now {
            self.next = now + self.interval;
        }
        loop {
            if stop.load(Ordering::SeqCst) {
                return true;
            }
            let now = Instant::now();
            if now >= self.next {
                return false;
            }
            std::thread::park_timeout(self.next - now);
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
        assert!(!ticker.wait(&AtomicBool::new(false)));
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let waiter =
            std::thread::spawn(move || Ticker::new(Duration::from_secs(3600)).wait(&thread_stop));
        stop.store(true, Ordering::SeqCst);
        waiter.thread().unpark();
        assert!(waiter.join().unwrap());
    }
}
