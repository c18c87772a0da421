//! Stage "run", Slurm executor: per-node measurement. `goldgate sample` runs on every node of
//! a batch job (`srun --overlap --ntasks-per-node=1`, started before training): it takes the
//! samplers' baselines, says it is ready, attaches to the process group the node's training
//! task names, and when the batch script says training ended (a stop file) or it is
//! signalled, writes what it saw into the shared job folder as `node<N>.json`. The executor
//! reads those files back, node 0 first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::launch::StopFlag;
use crate::metrics::Sampled;
use crate::observe::sample::{SampleSummary, Sampler, SamplerConfig};

/// What one node's sampler wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeSamples {
    /// `SLURM_NODEID`.
    pub node: u32,
    pub host: String,
    pub summary: Option<SampleSummary>,
    pub warnings: Vec<String>,
    pub sampler_cpu_seconds: Option<f64>,
}

/// The file node `node`'s sampler writes in `dir`.
pub fn node_file(dir: &Path, node: u32) -> PathBuf {
    dir.join(format!("node{node}.json"))
}

/// Runs one node's sampler until `stop_file` exists or `stop` is requested; writes
/// `node<N>.json` in `dir`. `node` is `SLURM_NODEID`.
pub fn sample_node(
    dir: &Path,
    stop_file: &Path,
    interval: Duration,
    node: u32,
    stop: &StopFlag,
) -> std::io::Result<()> {
    let config = SamplerConfig {
        interval,
        cuda_visible_devices: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
        ..SamplerConfig::default()
    };
    let cpu_at_start = crate::run::local::own_cpu_seconds();
    let (sampler, mut warnings) = match Sampler::start(&config) {
        Ok(s) => (Some(s), Vec::new()),
        Err(e) => (None, vec![format!("memory samplers did not start: {e}")]),
    };
    goldgate_core::fsio::write_atomic(&dir.join(format!("ready.{node}")), b"")?;
    let pgid_file = dir.join(format!("pgid.{node}"));
    let mut attached = false;
    while !stop_file.exists() && !stop.is_requested() {
        if !attached && let Some(pgid) = read_pgid(&pgid_file) {
            if let Some(s) = &sampler {
                s.attach(pgid);
            }
            attached = true;
        }
        std::thread::sleep(interval.clamp(Duration::from_millis(20), Duration::from_millis(200)));
    }
    if !attached {
        warnings.push("the node's training task never named its process group".to_owned());
    }
    let summary = sampler.map(Sampler::stop);
    if let Some(s) = &summary {
        warnings.extend(s.warnings.iter().cloned());
    }
    let samples = NodeSamples {
        node,
        // Slurm's name of the node (several nodes may share a host, as in tests).
        host: std::env::var("SLURMD_NODENAME")
            .unwrap_or_else(|_| crate::run::provenance::hostname()),
        summary,
        warnings,
        sampler_cpu_seconds: cpu_at_start
            .zip(crate::run::local::own_cpu_seconds())
            .map(|(a, b)| (b - a).max(0.0)),
    };
    let json = serde_json::to_vec_pretty(&samples).map_err(std::io::Error::other)?;
    goldgate_core::fsio::write_atomic(&node_file(dir, node), &json)
}

fn read_pgid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Largest `node<N>.json` goldgate reads.
const MAX_NODE_FILE: u64 = 64 << 20;

/// Every node's samples of a job of `nodes` nodes, node 0 first; a node whose file is
/// missing or unreadable gets a warning instead of figures. Waits up to `wait` for files the
/// samplers are still writing.
pub(crate) fn read_nodes(dir: &Path, nodes: u32, wait: Duration) -> Vec<Sampled> {
    let deadline = Instant::now() + wait;
    while (0..nodes).any(|n| !node_file(dir, n).exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    (0..nodes).map(|n| read_node(dir, n)).collect()
}

fn read_node(dir: &Path, node: u32) -> Sampled {
    let path = node_file(dir, node);
    let parsed = goldgate_core::fsio::read_bounded(&path, MAX_NODE_FILE)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<NodeSamples>(&b).map_err(|e| e.to_string()));
    match parsed {
        Ok(s) => Sampled {
            host: s.host,
            summary: s.summary,
            warnings: s.warnings,
            observer_cpu_seconds: s.sampler_cpu_seconds,
            io: None,
        },
        Err(why) => Sampled {
            host: format!("node {node}"),
            summary: None,
            warnings: vec![format!(
                "no memory samples from node {node} ({}: {why})",
                path.display()
            )],
            observer_cpu_seconds: None,
            io: None,
        },
    }
}
