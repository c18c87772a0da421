//! Stage "observe": starts the sampler thread for one job (GPU and host memory on one
//! schedule, baselines taken before the job is spawned), attaches it to the job's process
//! group and collects the [`SampleSummary`] when the job is over.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::thread::futex;
use rustix::time::{ClockId, Timespec, clock_gettime};

use super::gpu::{self, GpuSummary, Gpus, MemoryQuery};
use super::host::{Host, HostSummary};
use super::pss::AttachRead;

/// Per-process GPU memory is asked for at most this often (the query is costlier than
/// `memory_info` and the numbers move slowly).
const PROCESS_EVERY: Duration = Duration::from_millis(100);

/// Default `--sample-interval` (see README, "How goldgate measures").
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// What to sample and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerConfig {
    pub interval: Duration,
    /// Sample GPUs through NVML.
    pub gpu: bool,
    /// Read the RSS of the job's process tree every interval, and its PSS as `pss` schedules
    /// it. Off (to measure NVML alone), the tree is still followed for the per-process GPU
    /// figures.
    pub rss: bool,
    /// The job's `CUDA_VISIBLE_DEVICES`; `None` samples every GPU.
    pub cuda_visible_devices: Option<String>,
    /// Shared-memory filesystem to watch; `None` skips it.
    pub shm_path: Option<PathBuf>,
    /// The NVML call each tick makes.
    pub memory_query: MemoryQuery,
}

impl Default for SamplerConfig {
    fn default() -> SamplerConfig {
        SamplerConfig {
            interval: DEFAULT_INTERVAL,
            gpu: true,
            rss: true,
            cuda_visible_devices: None,
            shm_path: Some(PathBuf::from("/dev/shm")),
            memory_query: MemoryQuery::default(),
        }
    }
}

/// Everything the samplers recorded for one job. Times are milliseconds since the sampler
/// started, which is just before the job was spawned.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

    /// `host-peak-pss-bytes`: peak PSS summed over the job's process tree.
    pub fn host_peak_pss_bytes(&self) -> Option<u64> {
        self.host.pss.as_ref().map(|s| s.peak_bytes)
    }

    /// Peak RSS summed over the job's process tree (shared pages counted in every process).
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
    memory_query: MemoryQuery,
}

/// The running sampler thread of one job.
pub struct Sampler {
    pgid: Arc<AtomicU32>,
    /// Reads the leader's PSS at attach (`None` when PSS is off or its thread did not start).
    attach_read: Option<AttachRead>,
    stop: Arc<StopSignal>,
    thread: JoinHandle<Report>,
    origin: Instant,
    interval: Duration,
}

impl Sampler {
    /// Starts the thread and returns once every baseline is taken: spawn the job after this.
    ///
    /// One thread samples the GPUs and the host on one schedule: one wakeup per interval
    /// instead of two, and a wakeup costs more CPU than a tick's reads (see [`Ticker`]).
    pub fn start(config: &SamplerConfig) -> Result<Sampler, SampleError> {
        let origin = Instant::now();
        let plan = Plan {
            interval: config.interval.max(Duration::from_millis(1)),
            gpu: config.gpu,
            rss: config.rss,
            cuda_visible_devices: config.cuda_visible_devices.clone(),
            shm_path: config.shm_path.clone(),
            memory_query: config.memory_query,
        };
        let interval = plan.interval;
        let pgid = Arc::new(AtomicU32::new(0));
        let stop = Arc::new(StopSignal::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let (thread_pgid, thread_stop) = (pgid.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("goldgate-sampler".to_owned())
            .spawn(move || run(&plan, origin, &thread_pgid, &ready_tx, &thread_stop))
            .map_err(|source| SampleError::Thread { source })?;
        // The thread sends once after its baselines; if it died, its sender is dropped.
        let attach_read = ready_rx.recv().ok().flatten();
        Ok(Sampler {
            pgid,
            attach_read,
            stop,
            thread,
            origin,
            interval,
        })
    }

    /// Tells the sampler which process group is the job (`LaunchEvent::Spawned`), reading the
    /// leader's PSS first, here: a job may end before the sampler's next tick (10 ms, longer
    /// under load), and its memory is then still sampled once.
    pub fn attach(&self, pgid: u32) {
        if let Some(read) = &self.attach_read {
            read.read(self.origin.elapsed().as_millis() as u64, pgid);
        }
        self.pgid.store(pgid, Ordering::SeqCst);
    }

    /// Stops the thread and gathers what it recorded.
    pub fn stop(self) -> SampleSummary {
        // The PSS thread ends when its last sender is gone: this one first.
        drop(self.attach_read);
        self.stop.request();
        let duration_ms = self.origin.elapsed().as_millis() as u64;
        let report = self.thread.join().unwrap_or_else(|_| {
            let why = "the sampler thread panicked";
            Report {
                host: HostSummary::default(),
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
    ready: &Sender<Option<AttachRead>>,
    stop: &StopSignal,
) -> Report {
    let mut host = Host::start(plan.shm_path.as_deref(), plan.rss);
    let nvml = plan.gpu.then(gpu::init);
    let mut gpus = match &nvml {
        Some(Ok(nvml)) => Some(Gpus::open(
            nvml,
            plan.cuda_visible_devices.as_deref(),
            plan.memory_query,
        )),
        _ => None,
    };
    let _ = ready.send(host.attach_read());
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

/// Tells the sampler thread to stop, waking it at once (it sleeps on this word).
#[derive(Default)]
pub(crate) struct StopSignal(AtomicU32);

impl StopSignal {
    pub(crate) fn request(&self) {
        self.0.store(1, Ordering::SeqCst);
        let _ = futex::wake(&self.0, futex::Flags::PRIVATE, 1);
    }

    fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst) != 0
    }
}

/// Fixed-rate schedule that skips ticks it is too late for instead of bursting.
///
/// Deadlines are absolute `CLOCK_MONOTONIC` times a whole number of intervals apart, so ticks
/// do not drift; the thread sleeps in one `FUTEX_WAIT_BITSET` on the [`StopSignal`] until the
/// deadline, or until a stop wakes it. On the 2-core VM where the benchmark ran, the wakeup is
/// the largest part of a tick (~26–30 µs of CPU in a bare futex or `clock_nanosleep` loop).
/// In a loop of 10 ms ticks with two reads, 6 interleaved 10 s rounds, this cost a median
/// 41.6 µs a tick against 45.6 µs with `thread::park_timeout` (which reads the clock and
/// updates its park state around the same system call); in the 60 s benchmark the two were
/// within its noise.
pub(crate) struct Ticker {
    interval: Timespec,
    next: Timespec,
}

/// A deadline for intervals too long to add up.
const NEVER: Timespec = Timespec {
    tv_sec: i64::MAX,
    tv_nsec: 0,
};

impl Ticker {
    pub(crate) fn new(interval: Duration) -> Ticker {
        Ticker {
            interval: Timespec::try_from(interval).unwrap_or(NEVER),
            next: clock_gettime(ClockId::Monotonic),
        }
    }

    /// Sleeps until the next tick and returns the time it woke; `None` once a stop is
    /// requested.
    pub(crate) fn wait(&mut self, stop: &StopSignal) -> Option<Instant> {
        let now = clock_gettime(ClockId::Monotonic);
        self.next = self.next.checked_add(self.interval).unwrap_or(NEVER);
        if self.next < now {
            self.next = now.checked_add(self.interval).unwrap_or(NEVER);
        }
        let any = NonZeroU32::MAX;
        while !stop.is_requested() {
            // Returns at the deadline (`TIMEDOUT`), when woken, on a signal, or at once if
            // the word is no longer 0; only the first is a tick.
            match futex::wait_bitset(&stop.0, futex::Flags::PRIVATE, 0, Some(&self.next), any) {
                Err(Errno::TIMEDOUT) => return (!stop.is_requested()).then(Instant::now),
                Ok(()) | Err(Errno::INTR | Errno::AGAIN) => {}
                // Not expected (std parks threads with the same call): poll, never spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(1));
                    if clock_gettime(ClockId::Monotonic) >= self.next {
                        return (!stop.is_requested()).then(Instant::now);
                    }
                }
            }
        }
        None
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
    fn a_job_that_ends_before_the_first_tick_still_has_its_pss() {
        use std::os::unix::process::CommandExt;
        let config = SamplerConfig {
            gpu: false,
            shm_path: None,
            // No tick after the one at start: only the read at attach can see the job.
            interval: Duration::from_secs(3600),
            ..SamplerConfig::default()
        };
        let sampler = Sampler::start(&config).unwrap();
        let mut job = std::process::Command::new("sleep")
            .arg("0.2")
            .process_group(0)
            .spawn()
            .unwrap();
        sampler.attach(job.id());
        job.wait().unwrap();
        let summary = sampler.stop();
        let pss = summary.host.pss.as_ref().expect("PSS sampled at attach");
        assert!(pss.peak_bytes > 0 && pss.samples == 1, "{pss:?}");
        assert_eq!(summary.host.pss_reads, 1);
        assert_eq!(summary.host_peak_pss_bytes(), Some(pss.peak_bytes));
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
    fn ticker_ticks_and_stops_when_woken() {
        let start = Instant::now();
        let mut ticker = Ticker::new(Duration::from_millis(2));
        let stop = StopSignal::default();
        let woke: Vec<Instant> = (0..3).map(|_| ticker.wait(&stop).unwrap()).collect();
        assert!(
            woke[0] >= start + Duration::from_millis(2),
            "{:?}",
            woke[0] - start
        );
        assert!(woke.windows(2).all(|w| w[1] > w[0]));
        let stop = Arc::new(StopSignal::default());
        let thread_stop = stop.clone();
        let waiter = std::thread::spawn(move || Ticker::new(Duration::MAX).wait(&thread_stop));
        stop.request();
        assert_eq!(waiter.join().unwrap(), None);
    }
    #[test]
    fn both_nvml_queries_read_the_same_used_memory() {
        if nvml_wrapper::Nvml::init().is_err() {
            // A GPU is hardware `.ci/run` cannot install: a machine that has one says so.
            assert!(
                std::env::var_os("GOLDGATE_GPU_REQUIRED").is_none(),
                "GOLDGATE_GPU_REQUIRED is set but NVML does not load"
            );
            eprintln!("skipped: no NVML driver here (this test needs a GPU)");
            return;
        }
        let baselines = |memory_query| {
            let config = SamplerConfig {
                shm_path: None,
                rss: false,
                memory_query,
                ..SamplerConfig::default()
            };
            let summary = Sampler::start(&config).unwrap().stop();
            let gpu = summary.gpu.unwrap();
            gpu.devices
                .iter()
                .map(|d| d.used.as_ref().unwrap().baseline_bytes)
                .collect::<Vec<_>>()
        };
        let (v1, v2) = (baselines(MemoryQuery::V1), baselines(MemoryQuery::V2));
        assert_eq!(v1.len(), v2.len());
        for (a, b) in v1.iter().zip(&v2) {
            // Another process may allocate in between; 64 MiB is far below what a job uses.
            assert!(a.abs_diff(*b) < 64 << 20, "v1 {a} B, v2 {b} B");
        }
    }
}
