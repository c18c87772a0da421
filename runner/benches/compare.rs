//! Benchmark: compare every Megatron corpus golden file against results synthesised from it
//! (the same series with ±0.5 % seeded noise, three repeats, on a matching GPU), reading each
//! golden file from disk inside the timed loop. Inference goldens (keyed by request id) are
//! read and reported as unsupported, as `goldgate compare` would.
//!
//! Run: `cargo bench -p goldgate --bench compare`. Target: ≤ 0.5 s for the whole corpus.

#![allow(clippy::unwrap_used, clippy::print_stdout)] // a benchmark harness, not product code

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use goldgate_core::golden;
use goldgate_core::rules::RuleSet;
use goldgate_judge::compare::CompareOptions;
use goldgate_judge::compare::golden::engine::{judge_against, skeleton};
use goldgate_judge::compare::golden::platform;
use goldgate_schema::Verdict;
use goldgate_schema::{Fingerprint, RunRecord, StepValues, VariantRecord};

// The tests' corpus lookup: `$GOLDGATE_MEGATRON_CORPUS`, else `../shared/megatron_corpus`
// (when there is none: skip, or fail under CI=true).
use goldgate_core::fixtures::corpus;

fn golden_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            golden_files(&p, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("golden_values") && n.ends_with(".json"))
        {
            out.push(p);
        }
    }
    out.sort();
}

/// Deterministic noise in [-0.5 %, +0.5 %].
fn noise(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01
}

/// Three repeats synthesised from a golden file; `None` for unreadable or inference goldens.
fn synthesise(path: &Path, seed: &mut u64) -> Option<Vec<(PathBuf, RunRecord)>> {
    let file = golden::read_golden(path).ok()?;
    let platform = golden::GoldenName::parse(path.file_name()?.to_str()?)?
        .platform
        .unwrap_or_else(|| "dev_cpu".into());
    let gpu = platform::expected_gpu(&platform).map(|g| format!("NVIDIA {g}"));
    let repeats = (1..=3)
        .map(|repeat| {
            let metrics = file
                .metrics
                .iter()
                .map(|(name, s)| {
                    let values = s
                        .values
                        .iter()
                        .map(|(k, v)| (*k, v.as_f64() * (1.0 + noise(seed))))
                        .collect();
                    (name.clone(), StepValues(values))
                })
                .collect();
            let r = record(path, &platform, gpu.clone(), repeat, metrics);
            (path.to_path_buf(), r)
        })
        .collect();
    Some(repeats)
}

fn record(
    path: &Path,
    platform: &str,
    gpu: Option<String>,
    repeat: u32,
    metrics: BTreeMap<String, StepValues>,
) -> RunRecord {
    let case = path.parent().unwrap().display().to_string();
    RunRecord {
        run_id: "bench".into(),
        fingerprint: Fingerprint {
            gpu_model: gpu,
            ..Fingerprint::default()
        },
        nondeterministic: true,
        metrics,
        ..RunRecord::passed(&case, VariantRecord::baseline(), repeat, platform)
    }
}

/// The repeats synthesised for one golden file (`None`: unreadable or inference).
type Synthesised = (PathBuf, Option<Vec<(PathBuf, RunRecord)>>);

/// Compares every file; returns (compared, unsupported, verdict counts).
fn compare_all(
    files: &[Synthesised],
    opts: &CompareOptions,
) -> (usize, usize, BTreeMap<Verdict, usize>) {
    let (mut compared, mut unsupported) = (0, 0);
    let mut verdicts = BTreeMap::new();
    let mut warnings = Vec::new();
    for (path, group) in files {
        let Some(group) = group else {
            // Read it as compare would, and count the refusal.
            assert!(golden::read_golden(path).is_err());
            unsupported += 1;
            continue;
        };
        let job = judge_against(
            skeleton(group, opts),
            group,
            path,
            None,
            opts,
            &mut warnings,
        )
        .unwrap();
        compared += 1;
        *verdicts.entry(job.verdict).or_insert(0) += 1;
    }
    (compared, unsupported, verdicts)
}

fn bench(c: &mut Criterion) {
    let Some(corpus) = corpus::megatron_corpus() else {
        return;
    };
    let mut paths = Vec::new();
    golden_files(&corpus, &mut paths);
    let mut seed = 0x5eed;
    let files: Vec<_> = paths
        .into_iter()
        .map(|p| {
            let g = synthesise(&p, &mut seed);
            (p, g)
        })
        .collect();
    let opts = CompareOptions {
        golden_root: corpus.clone(),
        root: corpus.clone(),
        platform: None,
        allow_env_mismatch: true,
        rules: RuleSet::megatron(),
        axis_defaults: Default::default(),
        rules_ref: None,
        current_case: false,
        ab_clock_platforms: Vec::new(),
        clocks: None,
    };
    let (compared, unsupported, verdicts) = compare_all(&files, &opts);
    println!(
        "corpus: {} golden files, {compared} compared, {unsupported} unreadable or inference; job verdicts {verdicts:?}",
        files.len()
    );
    let mut group = c.benchmark_group("compare");
    group.sample_size(10);
    group.bench_function("corpus", |b| b.iter(|| compare_all(&files, &opts)));
    // The share of the above spent reading golden files (the `golden` module's parser).
    group.bench_function("corpus-read-goldens-only", |b| {
        b.iter(|| {
            files
                .iter()
                .filter(|(p, _)| golden::read_golden(p).is_ok())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
