//! A test whose prerequisite (python3, PyYAML, the Megatron-LM corpus) is missing skips only on
//! a developer machine; under `CI=true` it fails. Every skip in the workspace goes through
//! `goldgate_core::fixtures::prereq`, which decides that in one place (its own unit test checks the
//! rule); this test checks that no test prints a skip of its own.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// Files whose skips are about hardware that `.ci/run` cannot always provide, each with its
/// own switch that makes the skip a failure.
const HARDWARE: &[(&str, &str)] = &[
    (
        "slurm.rs",
        "a Slurm cluster: GOLDGATE_SLURM_REQUIRED, set by .ci/run once its cluster is up",
    ),
    ("sampler.rs", "a GPU with NVML: GOLDGATE_GPU_REQUIRED"),
];

/// No test prints its own `skipped:` line: one that did would pass under CI without checking.
#[test]
fn every_skip_goes_through_the_one_prerequisite_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let crates = ["core", "record", "judge", "runner", "schema"];
    for dir in crates
        .iter()
        .flat_map(|c| ["src", "tests", "benches"].map(|d| format!("{c}/{d}")))
        .chain(["workloads".to_owned()])
    {
        let dir = root.join(dir);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    assert!(files.len() > 100, "{} Rust files found", files.len());
    let own = ["prereq.rs", "prerequisites.rs"];
    let mut offenders = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if own.contains(&name.as_str()) || HARDWARE.iter().any(|(f, _)| *f == name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("\"skipped: ") {
                offenders.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "skips that ignore CI=true: {offenders:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
