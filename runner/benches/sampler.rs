//! Benchmarks of stage "launch" and "observe/sample" (run by `benches/sampler.sh`).
//!
//! `cost`: CPU time goldgate itself spends (utime+stime of this process, all threads) while
//! a job of `--seconds` runs, with no samplers, the host sampler, and host+NVML samplers.
//! `overhead`: wall time of `launch()` for a job that exits at once, against a bare
//! `Command::status()`, median of `--runs`.
//!
//! ```text
//! cargo bench -p goldgate --bench sampler -- cost --seconds 60 --interval 10ms
//! cargo bench -p goldgate --bench sampler -- overhead --runs 21
//! ```
//!
//! `job`: runs any command with both samplers and prints what they recorded (used on the
//! H200 with `workloads/spike/spike.py`, whose printed `expected_nvml_peak` the GPU peak
//! should match).

// A benchmark is a program whose output is its result.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use goldgate::launch::{LaunchEvent, LaunchSpec, StopFlag, launch};
use goldgate::observe::sample::{Sampler, SamplerConfig};

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
    let seconds: u64 = flag("--seconds").map_or(60, |s| s.parse().unwrap());
    let runs: usize = flag("--runs").map_or(21, |s| s.parse().unwrap());
    let intervals: Vec<Duration> = flag("--interval")
        .unwrap_or_else(|| "10ms".to_owned())
        .split(',')
        .map(|ms| Duration::from_millis(ms.trim_end_matches("ms").parse().unwrap()))
        .collect();
    match args.first().map(String::as_str) {
        Some("cost") => {
            for interval in intervals {
                cost(seconds, interval);
            }
        }
        Some("overhead") => overhead(runs),
        Some("job") => {
            let argv: Vec<String> = args
                .iter()
                .skip_while(|a| *a != "--")
                .skip(1)
                .cloned()
                .collect();
            for interval in intervals {
                job(argv.clone(), interval);
            }
        }
        _ => println!(
            "usage: sampler (cost [--seconds N] [--interval 10ms,20ms] | overhead [--runs N] \
             | job [--interval 10ms] -- PROGRAM ARGS...)"
        ),
    }
}

/// utime + stime of this process in seconds (exited threads included), from /proc/self/stat.
/// Linux reports both in USER_HZ ticks, which the ABI fixes at 100 per second.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // After ")": state(0) ... utime is field 14 of the line, i.e. index 11 here.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

fn sleep_spec(dir: &Path, seconds: u64) -> LaunchSpec {
    LaunchSpec::new(
        vec!["sleep".to_owned(), seconds.to_string()],
        dir.to_path_buf(),
        dir.join("job.log"),
    )
}

fn cost(seconds: u64, interval: Duration) {
    let dir = tempfile::tempdir().unwrap();
    println!(
        "job: sleep {seconds}; sampler interval {} ms",
        interval.as_millis()
    );
    println!(
        "{:<26} {:>10} {:>12} {:>9} {:>9}",
        "samplers", "cpu (s)", "% of a core", "samples", "gpus"
    );
    for (name, host, gpu) in [
        ("none (launch only)", false, false),
        ("host", true, false),
        ("host + nvml", true, true),
    ] {
        let stop = StopFlag::new();
        let cpu0 = cpu_seconds();
        let wall0 = Instant::now();
        let config = SamplerConfig {
            interval,
            gpu,
            shm_path: host.then(|| "/dev/shm".into()),
            ..Default::default()
        };
        let sampler = host.then(|| Sampler::start(&config).unwrap());
        launch(&sleep_spec(dir.path(), seconds), &stop, |event| {
            if let (LaunchEvent::Spawned { pgid, .. }, Some(s)) = (event, &sampler) {
                s.attach(pgid);
            }
        })
        .unwrap();
        let summary = sampler.map(Sampler::stop);
        let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
        let samples = summary
            .as_ref()
            .and_then(|s| s.host.rss.as_ref())
            .map_or(0, |r| r.samples);
        let gpus = summary
            .as_ref()
            .and_then(|s| s.gpu.as_ref())
            .map_or(0, |g| g.devices.len());
        println!(
            "{name:<26} {cpu:>10.3} {:>11.3}% {samples:>9} {gpus:>9}",
            100.0 * cpu / wall
        );
        if let Some(reason) = summary
            .as_ref()
            .and_then(|s| s.gpu_unavailable.as_ref())
            .filter(|_| gpu)
        {
            println!("  ({reason})");
        }
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn overhead(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(
        vec!["/bin/true".to_owned()],
        dir.path().to_path_buf(),
        dir.path().join("job.log"),
    );
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

fn job(argv: Vec<String>, interval: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(
        argv,
        std::env::current_dir().unwrap(),
        dir.path().join("job.log"),
    );
    let config = SamplerConfig {
        interval,
        ..Default::default()
    };
    let cpu0 = cpu_seconds();
    let sampler = Sampler::start(&config).unwrap();
    let report = launch(&spec, &StopFlag::new(), |event| match event {
        LaunchEvent::Spawned { pgid, .. } => sampler.attach(pgid),
        LaunchEvent::Line(line) => println!("  | {}", String::from_utf8_lossy(line)),
    })
    .unwrap();
    let s = sampler.stop();
    println!(
        "interval {} ms: {:?} in {:.2} s, goldgate cpu {:.3} s",
        interval.as_millis(),
        report.outcome,
        report.wall.as_secs_f64(),
        cpu_seconds() - cpu0
    );
    println!(
        "  gpu-peak-memory-bytes {:?}  host-peak-rss-bytes {:?}  shm-peak-bytes {:?}",
        s.gpu_peak_memory_bytes(),
        s.host_peak_rss_bytes(),
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
