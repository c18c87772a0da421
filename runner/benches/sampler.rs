//! Benchmarks of stage "launch" and "observe/sample" (run by `benches/sampler.sh`).
//!
//! `cost`: CPU time goldgate itself spends (`CLOCK_PROCESS_CPUTIME_ID`: every thread of this
//! process, exited ones included) while a `sleep` job of `--seconds` runs, as a share of one
//! core, for each row of `--rows` (default all): no sampler (the launch supervisor only),
//! `host` (process-tree RSS and `/dev/shm`), `nvml` (GPU memory alone: no RSS reads, no
//! `/dev/shm`), `nvml-v2` (the same through `nvmlDeviceGetMemoryInfo_v2`, the call goldgate
//! made before) and `host+nvml` (what `goldgate run` does). `--repeat N` runs every row N
//! times, interleaving rows and intervals round by round so that noise on a shared machine
//! falls on all of them, and prints each run as it ends, then the median, min and max. The
//! NVML rows sample the GPUs of `CUDA_VISIBLE_DEVICES` (all when unset); without a driver
//! they print why and are not run.
//! `overhead`: wall time of `launch()` for a job that exits at once, against a bare
//! `Command::status()`, median of `--runs`.
//!
//! ```text
//! cargo bench -p goldgate --bench sampler -- cost --seconds 60 --interval 10ms,20ms --repeat 5
//! target/bench-bin/sampler cost --seconds 30 --interval 10ms --rows nvml,host+nvml
//! cargo bench -p goldgate --bench sampler -- overhead --runs 21
//! ```
//!
//! `job`: runs any command with both samplers and prints what they recorded (used on the
//! H200 with `workloads/spike/spike.py`, whose printed `expected_nvml_peak` the GPU peak
//! should match), once per `--query` (`v1`, `v2` or both: `v1,v2`) and interval.

// A benchmark is a program whose output is its result.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use goldgate_record::launch::{LaunchEvent, LaunchSpec, StopFlag, launch};
use goldgate_record::observe::sample::{MemoryQuery, SampleSummary, Sampler, SamplerConfig};

const USAGE: &str = "usage: sampler cost [--seconds 60] [--interval 10ms[,20ms...]] [--repeat 1] \
[--rows none,host,nvml,nvml-v2,host+nvml]
       sampler overhead [--runs 21]
       sampler job [--interval 10ms] [--query v1[,v2]] -- PROGRAM ARGS...";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let number = |name: &str, default: usize| {
        flag(name).map_or(default, |s| {
            s.parse()
                .unwrap_or_else(|_| exit_usage(&format!("{name} {s}: not a number")))
        })
    };
    let seconds = number("--seconds", 60) as u64;
    let runs = number("--runs", 21);
    let repeat = number("--repeat", 1).max(1);
    let intervals: Vec<Duration> = flag("--interval")
        .unwrap_or_else(|| "10ms".to_owned())
        .split(',')
        .map(|ms| match ms.trim_end_matches("ms").parse() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => exit_usage(&format!("--interval {ms}: expected milliseconds like 10ms")),
        })
        .collect();
    let rows: Vec<Row> = flag("--rows")
        .unwrap_or_else(|| "none,host,nvml,nvml-v2,host+nvml".to_owned())
        .split(',')
        .map(|r| Row::parse(r).unwrap_or_else(|| exit_usage(&format!("unknown row `{r}`"))))
        .collect();
    match args.first().map(String::as_str) {
        Some("cost") => cost(seconds, &intervals, &rows, repeat),
        Some("overhead") => overhead(runs),
        Some("job") => {
            let argv: Vec<String> = args
                .iter()
                .skip_while(|a| *a != "--")
                .skip(1)
                .cloned()
                .collect();
            let queries: Vec<MemoryQuery> = flag("--query")
                .unwrap_or_else(|| "v1".to_owned())
                .split(',')
                .map(|q| match q.trim() {
                    "v1" => MemoryQuery::V1,
                    "v2" => MemoryQuery::V2,
                    _ => exit_usage(&format!("--query {q}: expected v1 or v2")),
                })
                .collect();
            for &query in &queries {
                for &interval in &intervals {
                    job(argv.clone(), interval, query);
                }
            }
        }
        _ => exit_usage("expected cost, overhead or job"),
    }
}

fn exit_usage(problem: &str) -> ! {
    println!("{problem}\n{USAGE}");
    std::process::exit(2)
}

/// CPU seconds of this process so far: every thread, exited ones included, in nanoseconds.
fn cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The 1-minute load average.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split(' ').next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn sleep_spec(dir: &Path, seconds: u64) -> LaunchSpec {
    LaunchSpec::new(
        vec!["sleep".to_owned(), seconds.to_string()],
        dir.to_path_buf(),
    )
}

/// One configuration measured by `cost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    None,
    Host,
    Nvml,
    NvmlV2,
    HostNvml,
}

impl Row {
    fn parse(s: &str) -> Option<Row> {
        match s.trim() {
            "none" => Some(Row::None),
            "host" => Some(Row::Host),
            "nvml" => Some(Row::Nvml),
            "nvml-v2" => Some(Row::NvmlV2),
            "host+nvml" => Some(Row::HostNvml),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Row::None => "none (launch only)",
            Row::Host => "host",
            Row::Nvml => "nvml",
            Row::NvmlV2 => "nvml (v2 query)",
            Row::HostNvml => "host + nvml",
        }
    }

    fn gpu(self) -> bool {
        matches!(self, Row::Nvml | Row::NvmlV2 | Row::HostNvml)
    }

    /// The sampler settings, `None` for no sampler.
    fn config(self, interval: Duration) -> Option<SamplerConfig> {
        let host = matches!(self, Row::Host | Row::HostNvml);
        (self != Row::None).then(|| SamplerConfig {
            interval,
            gpu: self.gpu(),
            rss: host,
            cuda_visible_devices: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
            shm_path: host.then(|| "/dev/shm".into()),
            memory_query: if self == Row::NvmlV2 {
                MemoryQuery::V2
            } else {
                MemoryQuery::V1
            },
        })
    }
}

/// What one run of one row measured.
struct Run {
    percent: f64,
    samples: u64,
    gpus: usize,
}

/// NVML's devices (count and first name), or why it cannot be used.
fn probe_gpus() -> Result<String, String> {
    let nvml = nvml_wrapper::Nvml::init().map_err(|e| format!("NVML unavailable ({e})"))?;
    let count = nvml.device_count().map_err(|e| format!("NVML: {e}"))?;
    let name = nvml.device_by_index(0).and_then(|d| d.name());
    Ok(format!(
        "{count} x {}",
        name.unwrap_or_else(|_| "?".to_owned())
    ))
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores ({cpu})")
}

fn cost(seconds: u64, intervals: &[Duration], rows: &[Row], repeat: usize) {
    let gpus = probe_gpus();
    println!("machine: {}", machine());
    match &gpus {
        Ok(gpus) => println!("GPUs: {gpus}"),
        Err(why) => println!("GPUs: none ({why}); the nvml rows are not run"),
    }
    println!(
        "job: sleep {seconds}; {repeat} run(s) per row, rounds interleaved; CPU time of this \
         process (all threads) / wall time"
    );
    let runnable = |row: &Row| !row.gpu() || gpus.is_ok();
    let mut results: Vec<(Duration, Row, Vec<Run>)> = intervals
        .iter()
        .flat_map(|&i| rows.iter().map(move |&r| (i, r, Vec::new())))
        .collect();
    for round in 1..=repeat {
        for (interval, row, runs) in results.iter_mut().filter(|(_, r, _)| runnable(r)) {
            let load_before = load();
            let run = measure(seconds, *row, *interval);
            println!(
                "  run {round}/{repeat}  {:>4} ms  {:<20} {:>7.3} % of a core  {:>6} samples  \
                 load {load_before} -> {}",
                interval.as_millis(),
                row.name(),
                run.percent,
                run.samples,
                load()
            );
            runs.push(run);
        }
    }
    println!();
    println!(
        "{:>8}  {:<20} {:>8} {:>8} {:>8}  {:>8} {:>5}  runs (% of a core)",
        "interval", "samplers", "median", "min", "max", "samples", "gpus"
    );
    for (interval, row, runs) in &results {
        let ms = format!("{} ms", interval.as_millis());
        if runs.is_empty() {
            let why = gpus.as_ref().err().map_or("not run", String::as_str);
            println!("{ms:>8}  {:<20} unavailable: {why}", row.name());
            continue;
        }
        let pcts: Vec<f64> = runs.iter().map(|r| r.percent).collect();
        let list: Vec<String> = pcts.iter().map(|p| format!("{p:.3}")).collect();
        println!(
            "{ms:>8}  {:<20} {:>7.3}% {:>7.3}% {:>7.3}%  {:>8} {:>5}  {}",
            row.name(),
            median(pcts.clone()),
            pcts.iter().copied().fold(f64::INFINITY, f64::min),
            pcts.iter().copied().fold(0.0, f64::max),
            runs[0].samples,
            runs[0].gpus,
            list.join(" ")
        );
    }
}

/// Launches `sleep seconds` with `row`'s sampler and measures this process's CPU time.
fn measure(seconds: u64, row: Row, interval: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let stop = StopFlag::new();
    let cpu0 = cpu_seconds();
    let wall0 = Instant::now();
    let sampler = row.config(interval).map(|c| Sampler::start(&c).unwrap());
    launch(&sleep_spec(dir.path(), seconds), &stop, |event| {
        if let (LaunchEvent::Spawned { pgid, .. }, Some(s)) = (event, &sampler) {
            s.attach(pgid);
        }
    })
    .unwrap();
    let summary = sampler.map(Sampler::stop);
    let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    Run {
        percent: 100.0 * cpu / wall,
        samples: summary.as_ref().map_or(0, samples),
        gpus: summary
            .as_ref()
            .and_then(|s| s.gpu.as_ref())
            .map_or(0, |g| g.devices.len()),
    }
}

/// Ticks the sampler recorded: host RSS samples, else the first GPU's.
fn samples(s: &SampleSummary) -> u64 {
    let gpu = || {
        s.gpu
            .as_ref()?
            .devices
            .first()?
            .used
            .as_ref()
            .map(|u| u.samples)
    };
    s.host
        .rss
        .as_ref()
        .map(|r| r.samples)
        .or_else(gpu)
        .unwrap_or(0)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn overhead(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(vec!["/bin/true".to_owned()], dir.path().to_path_buf());
    let stop = StopFlag::new();
    let (mut bare, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        assert!(
            std::process::Command::new("/bin/true")
                .status()
                .unwrap()
                .success()
        );
        bare.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        launch(&spec, &stop, |_| {}).unwrap();
        ours.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (b, o) = (median(bare), median(ours));
    println!(
        "/bin/true, median of {runs}: Command::status {b:.2} ms, launch() {o:.2} ms, extra {:.2} ms",
        o - b
    );
}

fn job(argv: Vec<String>, interval: Duration, query: MemoryQuery) {
    let spec = LaunchSpec::new(argv, std::env::current_dir().unwrap());
    let config = SamplerConfig {
        interval,
        memory_query: query,
        ..Default::default()
    };
    let cpu0 = cpu_seconds();
    let sampler = Sampler::start(&config).unwrap();
    let report = launch(&spec, &StopFlag::new(), |event| match event {
        LaunchEvent::Spawned { pgid, .. } => sampler.attach(pgid),
        LaunchEvent::Output(bytes) => print!("{}", String::from_utf8_lossy(bytes)),
    })
    .unwrap();
    let s = sampler.stop();
    println!(
        "interval {} ms, query {query:?}: {:?} in {:.2} s, goldgate cpu {:.3} s",
        interval.as_millis(),
        report.outcome,
        report.wall.as_secs_f64(),
        cpu_seconds() - cpu0
    );
    println!(
        "  gpu-peak-memory-bytes {:?}  host-peak-pss-bytes {:?} (summed RSS {:?}; {} PSS reads, {:.3} s CPU)  shm-peak-bytes {:?}",
        s.gpu_peak_memory_bytes(),
        s.host_peak_pss_bytes(),
        s.host_peak_rss_bytes(),
        s.host.pss_reads,
        s.host.pss_read_cpu_seconds,
        s.shm_peak_bytes()
    );
    for d in s.gpu.iter().flat_map(|g| &g.devices) {
        let used = d.used.as_ref();
        println!(
            "  gpu {} {:?}: baseline {:?} peak {:?} at {:?} ms, {} samples, {} timeline points, processes {:?}",
            d.index,
            d.name,
            used.map(|u| u.baseline_bytes),
            used.map(|u| u.peak_bytes),
            used.map(|u| u.peak_at_ms),
            used.map_or(0, |u| u.samples),
            used.map_or(0, |u| u.timeline.len()),
            d.processes
        );
    }
    if let Some(env) = s.gpu.as_ref().map(|g| &g.environment) {
        println!(
            "  driver {:?} cuda {:?} {} x {:?}",
            env.driver_version,
            env.cuda_driver_version,
            env.device_count,
            env.names.first()
        );
    }
    for w in &s.warnings {
        println!("  warning: {w}");
    }
}
