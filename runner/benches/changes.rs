//! Benchmark: change-point detection (E-divisive means, Otava's defaults: window 50,
//! p ≤ 0.001) on a 10,000-point series with five planted steps and Gaussian noise — the size
//! `benches/otava_compare.py` times Apache Otava on (docs/results/otava-comparison.md).
//!
//! Run: `cargo bench -p goldgate --bench changes`.

#![allow(clippy::unwrap_used, clippy::print_stdout)] // a benchmark harness, not product code

use criterion::{Criterion, criterion_group, criterion_main};
use goldgate_judge::history::changes::{Options, detect};

/// 100 + steps + N(0, 1) noise (a seeded generator and Box-Muller), steps of ±5 %.
fn series(n: usize) -> Vec<f64> {
    let mut state: u64 = 42;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let steps = [
        (2000, 5.0),
        (4000, -5.0),
        (6000, 5.0),
        (8000, 5.0),
        (9000, -5.0),
    ];
    (0..n)
        .map(|i| {
            let level: f64 = steps.iter().filter(|(k, _)| i >= *k).map(|(_, d)| d).sum();
            let (u1, u2) = (uniform(), uniform());
            let gauss = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            100.0 + level + gauss
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let z = series(10_000);
    let found = detect(&z, &Options::default()).indices();
    println!("change points of the 10,000-point series: {found:?}");
    for planted in [2000, 4000, 6000, 8000, 9000] {
        assert!(
            found.iter().any(|i| i.abs_diff(planted) <= 1),
            "planted step at {planted} not found: {found:?}"
        );
    }
    c.bench_function("e-divisive 10,000 points", |b| {
        b.iter(|| detect(&z, &Options::default()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
