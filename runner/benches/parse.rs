//! Throughput of the Megatron log parser on a ≥ 1 GiB log built in memory: the whole path
//! `goldgate extract` takes (the one log stream: split → redact → clean → parse → summary), one thread.
//!
//! Run: `cargo bench -p goldgate --bench parse` (size: `GOLDGATE_BENCH_MIB`, default 1024).
//! Each benchmark runs twice: `parse-wall` measures wall time, `parse-cpu` the CPU time of
//! the benchmarking thread (from `/proc/thread-self/schedstat`), which stays meaningful on a
//! machine shared with other jobs.
//!
//! The log mixes what a long multi-rank Megatron run prints: an iteration line per step
//! (timestamped, every field), a noise line per step (NCCL INFO, Python warnings,
//! torchrun-prefixed output), a `(min, max)` timer block every 10 steps, and every 100 steps
//! memory reports from 8 ranks and a checkpoint save with its before/after reports and timer.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use goldgate_core::log::{MAX_LINE, summarize_reader};

const NOISE: [&str; 4] = [
    "node-3:41234:41502 [5] NCCL INFO Channel 07/0 : 5[5] -> 6[6] via P2P/CUMEM/read",
    "[default3]:/usr/local/lib/python3.12/site-packages/torch/distributed/c10d_logger.py:83: FutureWarning: `torch.distributed._all_gather_base` is a private function and will be deprecated.",
    "[default6]:  warnings.warn(",
    "Number of parameters in transformer block in billions:  0.15",
];

const TIMERS: [&str; 8] = [
    "forward-backward",
    "forward-compute",
    "backward-compute",
    "batch-generator",
    "layernorm-grads-all-reduce",
    "all-grads-sync",
    "optimizer-copy-to-main-grad",
    "optimizer",
];

fn stamp(step: u64) -> String {
    let s = step * 321 / 1000;
    format!(
        "[2026-11-29 {:02}:{:02}:{:02}.{:06}]",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        (step * 321_000) % 1_000_000
    )
}

fn iteration(out: &mut String, step: u64, total: u64) {
    let loss = 10.9 / (1.0 + step as f64 * 1e-5);
    let _ = writeln!(
        out,
        " {} iteration {step:8}/{total:8} | consumed samples: {:12} | elapsed time per iteration (ms): {:.1} | throughput per GPU (TFLOP/s/GPU): {:.1} | learning rate: {:.6E} | global batch size: {:5} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {:.3} | num zeros: {:.1} | params norm: {:.3} | number of skipped iterations: {:3} | number of nan iterations: {:3} |",
        stamp(step),
        step * 32,
        321.2 + (step % 7) as f64 * 0.3,
        402.0 + (step % 5) as f64,
        1e-5 * (1.0 - step as f64 / total as f64),
        32,
        2.2 + (step % 11) as f64 * 0.01,
        27854.0 + (step % 13) as f64,
        274.878 + step as f64 * 1e-4,
        0,
        0,
    );
}

fn save(out: &mut String, step: u64) {
    let mem = |out: &mut String, rank: u64, name: &str| {
        let _ = writeln!(
            out,
            "[default{rank}]:[Rank {rank}] ({name}) memory (MB) | allocated: 3496.66 | max allocated: 15991.74 | reserved: 16668.00 | max reserved: 16668.00"
        );
    };
    mem(
        out,
        0,
        &format!("before save_checkpoint for iteration {step}"),
    );
    let _ = writeln!(
        out,
        "{} saving checkpoint at iteration {step:7} to /tmp/ckpt in torch_dist format",
        stamp(step)
    );
    let _ = writeln!(
        out,
        "  {} successfully saved checkpoint from iteration {step:7} to /tmp/ckpt [ t 1/1, gtp_remat 1/1, p 1/1 ]",
        stamp(step + 11)
    );
    mem(
        out,
        0,
        &format!("after save_checkpoint for iteration {step}"),
    );
    let _ = writeln!(
        out,
        "INFO:megatron.core.timers:(min, max) time across ranks (ms):"
    );
    let _ = writeln!(
        out,
        "    {}: (3485.51, 3502.17)",
        "save-checkpoint ".to_owned() + &".".repeat(32)
    );
}

/// The synthetic log, at least `bytes` long.
fn build_log(bytes: usize) -> Vec<u8> {
    let mut out = String::with_capacity(bytes + (1 << 20));
    let total = (bytes / 600) as u64 + 100;
    let mut step = 0;
    while out.len() < bytes {
        step += 1;
        iteration(&mut out, step, total);
        out.push_str(NOISE[(step % 4) as usize]);
        out.push('\n');
        if step % 10 == 0 {
            out.push_str("(min, max) time across ranks (ms):\n");
            for t in TIMERS {
                let _ = writeln!(
                    out,
                    "    {}: ({:.2}, {:.2})",
                    format!("{t} ").to_owned() + &".".repeat(47 - t.len()),
                    12.5,
                    13.75
                );
            }
        }
        if step % 100 == 0 {
            for rank in 0..8 {
                let _ = writeln!(
                    out,
                    "[default{rank}]:[Rank {rank}] (after {step} iterations) memory (MB) | allocated: 3496.66 | max allocated: 15991.74 | reserved: 16668.00 | max reserved: 16668.00"
                );
            }
            save(&mut out, step);
        }
    }
    out.into_bytes()
}

/// CPU time of the current thread, ns, from `/proc/thread-self/schedstat` (first field).
/// Reading it fails only off Linux; the bench then reports zero rather than a wrong figure.
fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A criterion measurement of thread CPU time (ns), formatted like wall time.
struct CpuTime {
    wall: WallTime,
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.wall.formatter()
    }
}

/// The log, built once for both measurements.
#[allow(clippy::print_stdout)]
fn log() -> &'static [u8] {
    static LOG: OnceLock<Vec<u8>> = OnceLock::new();
    LOG.get_or_init(|| {
        let mib: usize = std::env::var("GOLDGATE_BENCH_MIB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1024);
        let log = build_log(mib << 20);
        let summary = summarize_reader(log.as_slice(), Path::new("bench.log")).unwrap_or_default();
        println!(
            "log: {} bytes, {} lines, {} steps, {} saves",
            log.len(),
            summary.lines,
            summary.steps_seen,
            summary.checkpoints.len()
        );
        log
    })
}

fn bench<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let log = log();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("summarize", |b| {
        b.iter(|| summarize_reader(black_box(log), Path::new("bench.log")).map(|s| s.lines))
    });
    group.bench_function("split_lines_only", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for line in black_box(log).split(|b| *b == b'\n') {
                n += line.len().min(MAX_LINE) as u64;
            }
            n
        })
    });
    group.finish();
}

fn bench_wall(c: &mut Criterion) {
    bench(c, "parse-wall");
}

fn bench_cpu(c: &mut Criterion<CpuTime>) {
    bench(c, "parse-cpu");
}

criterion_group!(wall, bench_wall);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(CpuTime { wall: WallTime });
    targets = bench_cpu
}
criterion_main!(wall, cpu);
