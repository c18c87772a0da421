//! Stage "observe": reads the probe files that each rank wrote
//! (`probe/probe-rank<R>-pid<P>.json`) and turns them into per-rank records and metrics
//! (the max across ranks), tolerating partial files from ranks that died.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use goldgate_schema::metric_names as names;

/// `torch.cuda.empty_cache()` calls seen in one process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyCache {
    /// Number of calls.
    pub calls: u64,
    /// Total wall time of the calls (s).
    pub seconds: f64,
    /// Longest single call (s).
    pub max_seconds: f64,
    /// Calls made while a checkpoint save was running.
    pub calls_in_checkpoint: u64,
    /// Their total wall time (s).
    pub seconds_in_checkpoint: f64,
}

/// One checkpoint save the probe wrapped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaveWindow {
    /// `megatron.save_checkpoint`, `torch.save`, `torch.distributed.checkpoint.save`, ...
    pub function: String,
    /// Seconds after the process started.
    pub start: f64,
    /// Wall time (s).
    pub seconds: f64,
    /// Iteration, when the function was given one.
    pub iteration: Option<u64>,
    /// What happened inside the save (Megatron's and DCP's saves; absent for `torch.save`).
    #[serde(default)]
    pub counters: Option<SaveCounters>,
    /// In-job A/B: the arm in force (`a`, `b`; `None` outside the design).
    #[serde(default)]
    pub arm: Option<String>,
    /// A switch the probe could not apply.
    #[serde(default)]
    pub switch_error: Option<String>,
    /// The outer counted window's place among the process's saves (what its async parts name).
    #[serde(default)]
    pub index: Option<u64>,
}

/// What the async parts of one save wrote (the work it handed to another thread or process:
/// a worker's `async_fn`, its finalizers, writer threads), credited to the save they belong to
/// whenever and wherever they ran. In the rank's own file (`parts`) for parts that ran in the
/// saving process, in a `probe-part-*.json` file of their own for the others.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SavePart {
    /// The saving process: its rank and pid, and the window's `index` there.
    pub rank: u32,
    pub pid: u32,
    pub index: u64,
    pub iteration: Option<u64>,
    /// Bytes passed to `write()` and sent to the block layer by the parts.
    pub wchar: u64,
    pub write_bytes: u64,
    /// Parts these bytes add up.
    pub parts: u64,
    /// The process the parts ran in, when not the saving one.
    #[serde(default)]
    pub writer_pid: Option<u32>,
}

/// Counters of one save window: each the change from the save's start to its end (`None`
/// where the process could not read it, e.g. no CUDA).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SaveCounters {
    pub empty_cache_calls: Option<u64>,
    pub empty_cache_seconds: Option<f64>,
    pub num_alloc_retries: Option<u64>,
    pub num_device_alloc: Option<u64>,
    pub num_device_free: Option<u64>,
    pub num_sync_all_streams: Option<u64>,
    /// Bytes passed to `write()` (`/proc/self/io` `wchar`).
    pub wchar: Option<u64>,
    /// Bytes sent to the block layer (`/proc/self/io` `write_bytes`).
    pub write_bytes: Option<u64>,
    /// Where the window's time went (absent from older probes).
    #[serde(default)]
    pub cpu_seconds: Option<f64>,
    #[serde(default)]
    pub dist_save_calls: Option<u64>,
    #[serde(default)]
    pub dist_save_seconds: Option<f64>,
    #[serde(default)]
    pub dist_save_cpu_seconds: Option<f64>,
    #[serde(default)]
    pub fsync_calls: Option<u64>,
    #[serde(default)]
    pub fsync_seconds: Option<f64>,
    #[serde(default)]
    pub minor_faults: Option<u64>,
    #[serde(default)]
    pub major_faults: Option<u64>,
    #[serde(default)]
    pub voluntary_switches: Option<u64>,
    #[serde(default)]
    pub involuntary_switches: Option<u64>,
    /// Async parts whose bytes `wchar` and `write_bytes` include (see [`SavePart`]).
    #[serde(default)]
    pub async_parts: Option<u64>,
}

/// `/proc/self/io` of one process at its last write (this process and the children it reaped).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcIo {
    pub wchar: u64,
    pub write_bytes: u64,
}

/// `torch.cuda.memory_stats()` at one moment (bytes and counts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryStats {
    pub t: Option<f64>,
    pub allocated_bytes: Option<u64>,
    pub peak_allocated_bytes: Option<u64>,
    pub reserved_bytes: Option<u64>,
    pub peak_reserved_bytes: Option<u64>,
    pub inactive_split_bytes: Option<u64>,
    pub peak_inactive_split_bytes: Option<u64>,
    pub segments: Option<u64>,
    pub peak_segments: Option<u64>,
    pub num_alloc_retries: Option<u64>,
    pub num_ooms: Option<u64>,
    pub num_device_alloc: Option<u64>,
    pub num_device_free: Option<u64>,
    #[serde(default)]
    pub num_sync_all_streams: Option<u64>,
}

/// What one rank's process recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankProbe {
    pub rank: u32,
    pub local_rank: u32,
    pub pid: u32,
    /// Whether the file was written at a clean exit (false: the rank died or was killed).
    #[serde(rename = "final")]
    pub final_: bool,
    pub wall_seconds: f64,
    pub empty_cache: EmptyCache,
    pub saves: Vec<SaveWindow>,
    /// The last memory statistics taken.
    pub memory: Option<MemoryStats>,
    /// The allocator settings in force (`PYTORCH_CUDA_ALLOC_CONF`, backend).
    pub allocator: BTreeMap<String, Option<String>>,
    /// Memory snapshot written on an out-of-memory error (file name in the probe folder).
    pub oom_snapshot: Option<String>,
    /// Wall time the probe spent writing its file, waits for the GIL included (s).
    pub overhead_seconds: f64,
    /// CPU time of the probe's polling thread (s): its real cost to the process.
    #[serde(default)]
    pub poller_cpu_seconds: f64,
    /// Calls of `torch.multiprocessing.reductions.rebuild_cuda_tensor` in this process.
    #[serde(default)]
    pub rebuild_cuda_tensor_calls: u64,
    /// `/proc/self/io` at the file's last write.
    #[serde(default)]
    pub io: Option<ProcIo>,
    /// What the async parts of this process's saves wrote in this process.
    #[serde(default)]
    pub parts: Vec<SavePart>,
    /// When Python loaded the probe in this process (seconds since the epoch): the process's
    /// start, on the clock of goldgate's `started_at` (absent from older probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix: Option<f64>,
    /// Start-up marks, seconds after `started_unix`: `torch_imported`,
    /// `megatron_training_imported`, `pretrain_entered` (those the process reached).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub startup: BTreeMap<String, f64>,
}

/// Every rank's probe record of one job, with problems found while reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub ranks: Vec<RankProbe>,
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawFile {
    schema_version: u32,
    #[serde(flatten)]
    rank: RankProbe,
}

#[derive(Deserialize)]
struct RawPart {
    schema_version: u32,
    #[serde(flatten)]
    part: SavePart,
}

/// Largest probe file read (one rank's summary and history are a few hundred KiB).
const MAX_PROBE_FILE_BYTES: u64 = 64 << 20;

/// Reads `<job_dir>/probe/probe-rank*.json`. `None` when the probe did not run or no process
/// used CUDA; unreadable files become warnings naming the file (one bad rank never hides
/// the others).
pub fn read(job_dir: &Path) -> Option<ProbeSummary> {
    let dir = job_dir.join("probe");
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut summary = ProbeSummary::default();
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("probe-") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    let mut parts = Vec::new();
    for path in paths {
        if let Err(warning) = read_file(&path, &mut summary, &mut parts) {
            summary.warnings.push(warning);
        }
    }
    summary.ranks.sort_by_key(|r| (r.rank, r.pid));
    let own: Vec<SavePart> = summary.ranks.iter().flat_map(|r| r.parts.clone()).collect();
    for part in own.iter().chain(&parts) {
        if let Err(why) = credit(&mut summary.ranks, part) {
            summary.warnings.push(why);
        }
    }
    if summary.ranks.is_empty() && summary.warnings.is_empty() {
        return None;
    }
    Some(summary)
}

/// Reads one probe file into `summary` (a rank's) or `parts` (a save part's); Err: the warning
/// that names it.
fn read_file(
    path: &Path,
    summary: &mut ProbeSummary,
    parts: &mut Vec<SavePart>,
) -> Result<(), String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let (is_part, what) = match name {
        n if n.starts_with("probe-part-") => (true, "probe part file"),
        n if n.starts_with("probe-rank") => (false, "probe file"),
        _ => return Ok(()),
    };
    // The job wrote these files: a link to a device or a huge file must not stall goldgate.
    let bytes = goldgate_core::fsio::read_bounded(path, MAX_PROBE_FILE_BYTES)
        .map_err(|e| format!("{}: unreadable {what}: {e}", path.display()))?;
    let unreadable = |e: serde_json::Error| format!("{}: unreadable {what}: {e}", path.display());
    let unsupported = |v: u32| {
        format!(
            "{}: probe schema_version {v} is not supported",
            path.display()
        )
    };
    if is_part {
        let raw: RawPart = serde_json::from_slice(&bytes).map_err(unreadable)?;
        if raw.schema_version != 1 {
            return Err(unsupported(raw.schema_version));
        }
        parts.push(raw.part);
    } else {
        let raw: RawFile = serde_json::from_slice(&bytes).map_err(unreadable)?;
        if raw.schema_version != 1 {
            return Err(unsupported(raw.schema_version));
        }
        summary.ranks.push(raw.rank);
    }
    Ok(())
}

/// Adds what a save's async parts wrote to that save's window (matched by the saving
/// process's pid and the window's index). Err: the save has no window to add it to.
fn credit(ranks: &mut [RankProbe], part: &SavePart) -> Result<(), String> {
    let window = ranks
        .iter_mut()
        .filter(|r| r.pid == part.pid)
        .flat_map(|r| r.saves.iter_mut())
        .find(|w| w.index == Some(part.index) && w.counters.is_some());
    let Some(counters) = window.and_then(|w| w.counters.as_mut()) else {
        return Err(format!(
            "{} B written by the async part of save {} (rank {}, pid {}) have no save window \
             to count in",
            part.wchar,
            part.iteration
                .map_or_else(|| format!("#{}", part.index), |i| i.to_string()),
            part.rank,
            part.pid
        ));
    };
    counters.wchar = counters.wchar.map(|w| w + part.wchar);
    counters.write_bytes = counters.write_bytes.map(|w| w + part.write_bytes);
    counters.async_parts = Some(counters.async_parts.unwrap_or(0) + part.parts);
    Ok(())
}

impl ProbeSummary {
    /// Probe metrics (max across ranks), named as in `results.json` and golden files.
    /// `saves` is the number of checkpoint saves the log showed (for per-checkpoint cost).
    pub fn metrics(&self, saves: usize) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let max = |f: &dyn Fn(&RankProbe) -> Option<f64>| {
            self.ranks.iter().filter_map(f).reduce(f64::max)
        };
        let mem = |f: fn(&MemoryStats) -> Option<u64>| {
            move |r: &RankProbe| r.memory.as_ref().and_then(f).map(|v| v as f64)
        };
        let mut put = |name: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(name.to_string(), v);
            }
        };
        put(
            names::EMPTY_CACHE_CALLS,
            max(&|r| Some(r.empty_cache.calls as f64)),
        );
        put("empty-cache-seconds", max(&|r| Some(r.empty_cache.seconds)));
        put(
            "empty-cache-seconds-per-checkpoint",
            (saves > 0)
                .then(|| max(&|r| Some(r.empty_cache.seconds_in_checkpoint)))
                .flatten()
                .map(|s| s / saves as f64),
        );
        put(
            "torch-peak-allocated-bytes",
            max(&mem(|s| s.peak_allocated_bytes)),
        );
        put(
            "torch-peak-reserved-bytes",
            max(&mem(|s| s.peak_reserved_bytes)),
        );
        put(
            "reserved-minus-allocated-bytes",
            max(&|r| {
                let s = r.memory.as_ref()?;
                Some(s.peak_reserved_bytes? as f64 - s.peak_allocated_bytes? as f64)
            }),
        );
        put(
            "inactive-split-peak-bytes",
            max(&mem(|s| s.peak_inactive_split_bytes)),
        );
        put("probe-cpu-seconds", max(&|r| Some(r.poller_cpu_seconds)));
        self.counter_metrics(&mut m);
        m
    }

    /// The job-total counters: allocator counts (max across ranks), CUDA tensors
    /// received and bytes written (summed over processes).
    fn counter_metrics(&self, m: &mut BTreeMap<String, f64>) {
        let max = |f: fn(&MemoryStats) -> Option<u64>| {
            self.ranks
                .iter()
                .filter_map(|r| r.memory.as_ref().and_then(f))
                .max()
                .map(|v| v as f64)
        };
        let mut put = |name: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(name.to_string(), v);
            }
        };
        put(names::ALLOC_RETRIES, max(|s| s.num_alloc_retries));
        put(names::CUDA_OOMS, max(|s| s.num_ooms));
        put(names::CUDA_MALLOC_CALLS, max(|s| s.num_device_alloc));
        put(names::CUDA_FREE_CALLS, max(|s| s.num_device_free));
        put(
            names::SYNC_ALL_STREAMS_CALLS,
            max(|s| s.num_sync_all_streams),
        );
        put(
            names::REBUILD_CUDA_TENSOR_CALLS,
            (!self.ranks.is_empty()).then(|| {
                let calls: u64 = self.ranks.iter().map(|r| r.rebuild_cuda_tensor_calls).sum();
                calls as f64
            }),
        );
        put(
            names::JOB_WRITTEN_BYTES,
            self.ranks
                .iter()
                .filter_map(|r| r.io.as_ref().map(|io| io.wchar as f64))
                .reduce(|a, b| a + b),
        );
    }

    /// The probe's view of the save at `iteration` (its outer counted windows: Megatron's and
    /// DCP's saves): the longest window across ranks, rank 0's arm and parts (the lowest rank
    /// that recorded it). `None` when no rank recorded a counted window there.
    pub fn save_probe(&self, iteration: u64) -> Option<goldgate_schema::SaveProbe> {
        let mut seconds: Option<f64> = None;
        let mut first: Option<(u32, &SaveWindow)> = None;
        for rank in &self.ranks {
            for w in &rank.saves {
                if w.iteration != Some(iteration) || w.counters.is_none() {
                    continue;
                }
                seconds = Some(seconds.map_or(w.seconds, |s| s.max(w.seconds)));
                if first.is_none_or(|(r, _)| rank.rank < r) {
                    first = Some((rank.rank, w));
                }
            }
        }
        let (_, w) = first?;
        let c = w.counters.clone().unwrap_or_default();
        Some(goldgate_schema::SaveProbe {
            seconds: seconds?,
            arm: w.arm.clone(),
            switch_error: w.switch_error.clone(),
            parts: goldgate_schema::SaveParts {
                cpu_seconds: c.cpu_seconds,
                dist_save_calls: c.dist_save_calls,
                dist_save_seconds: c.dist_save_seconds,
                dist_save_cpu_seconds: c.dist_save_cpu_seconds,
                fsync_calls: c.fsync_calls,
                fsync_seconds: c.fsync_seconds,
                empty_cache_calls: c.empty_cache_calls,
                empty_cache_seconds: c.empty_cache_seconds,
                minor_faults: c.minor_faults,
                major_faults: c.major_faults,
                voluntary_switches: c.voluntary_switches,
                involuntary_switches: c.involuntary_switches,
            },
        })
    }

    /// Per-save counters, keyed by the save's iteration: counts the max across ranks, bytes
    /// summed over ranks. Only saves that recorded counters and an iteration take part; a
    /// counter no rank could read is left out.
    pub fn per_save_metrics(&self) -> BTreeMap<String, BTreeMap<u64, f64>> {
        type Field = fn(&SaveCounters) -> Option<f64>;
        fn n(v: Option<u64>) -> Option<f64> {
            v.map(|v| v as f64)
        }
        // (metric, field, summed over ranks)
        let fields: [(&str, Field, bool); 8] = [
            (
                names::CKPT_EMPTY_CACHE_CALLS,
                |c| n(c.empty_cache_calls),
                false,
            ),
            (
                names::CKPT_EMPTY_CACHE_SECONDS,
                |c| c.empty_cache_seconds,
                false,
            ),
            (names::CKPT_ALLOC_RETRIES, |c| n(c.num_alloc_retries), false),
            (
                names::CKPT_CUDA_MALLOC_CALLS,
                |c| n(c.num_device_alloc),
                false,
            ),
            (names::CKPT_CUDA_FREE_CALLS, |c| n(c.num_device_free), false),
            (
                names::CKPT_SYNC_ALL_STREAMS_CALLS,
                |c| n(c.num_sync_all_streams),
                false,
            ),
            (names::CKPT_WRITTEN_BYTES, |c| n(c.wchar), true),
            (names::CKPT_DISK_WRITTEN_BYTES, |c| n(c.write_bytes), true),
        ];
        let mut out: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
        for (name, field, summed) in fields {
            let mut series: BTreeMap<u64, f64> = BTreeMap::new();
            for rank in &self.ranks {
                // One rank's windows of one iteration add up (a save split in two calls).
                let mut own: BTreeMap<u64, f64> = BTreeMap::new();
                for w in &rank.saves {
                    let (Some(it), Some(c)) = (w.iteration, w.counters.as_ref()) else {
                        continue;
                    };
                    if let Some(v) = field(c) {
                        *own.entry(it).or_default() += v;
                    }
                }
                for (it, v) in own {
                    let slot = series.entry(it).or_insert(if summed { 0.0 } else { v });
                    *slot = if summed { *slot + v } else { slot.max(v) };
                }
            }
            if !series.is_empty() {
                out.insert(name.to_owned(), series);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_json(rank: u32, calls: u64, in_ckpt: f64, reserved: u64) -> String {
        format!(
            r#"{{"schema_version":1,"rank":{rank},"local_rank":{rank},"pid":{},"final":true,
            "wall_seconds":12.5,"empty_cache":{{"calls":{calls},"seconds":1.5,"max_seconds":0.9,
            "calls_in_checkpoint":3,"seconds_in_checkpoint":{in_ckpt}}},
            "saves":[{{"function":"megatron.save_checkpoint","start":3.0,"seconds":2.5,"iteration":5}}],
            "memory":{{"t":12.0,"peak_allocated_bytes":1000,"peak_reserved_bytes":{reserved},
            "num_alloc_retries":2,"num_ooms":0}},"samples":[],
            "allocator":{{"PYTORCH_CUDA_ALLOC_CONF":"expandable_segments:True","backend":"native"}},
            "oom_snapshot":null,"overhead_seconds":0.002}}"#,
            100 + rank
        )
    }

    #[test]
    fn reads_ranks_and_takes_the_max_across_them() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        std::fs::create_dir_all(&probe).unwrap();
        std::fs::write(
            probe.join("probe-rank0-pid100.json"),
            rank_json(0, 4, 0.6, 1500),
        )
        .unwrap();
        std::fs::write(
            probe.join("probe-rank1-pid101.json"),
            rank_json(1, 7, 0.3, 1800),
        )
        .unwrap();
        std::fs::write(
            probe.join("probe-rank2-pid102.json"),
            "{\"schema_version\":1,",
        )
        .unwrap();
        let s = read(dir.path()).unwrap();
        assert_eq!(s.ranks.len(), 2);
        assert_eq!(s.warnings.len(), 1);
        assert!(
            s.warnings[0].contains("probe-rank2-pid102.json"),
            "{:?}",
            s.warnings
        );
        let m = s.metrics(3);
        assert_eq!(m["empty-cache-calls"], 7.0);
        assert!((m["empty-cache-seconds-per-checkpoint"] - 0.2).abs() < 1e-12);
        assert_eq!(m["reserved-minus-allocated-bytes"], 800.0);
        assert_eq!(m["alloc-retries"], 2.0);
    }

    #[test]
    fn per_save_counters_take_the_max_of_counts_and_the_sum_of_bytes_across_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let probe = dir.path().join("probe");
        std::fs::create_dir_all(&probe).unwrap();
        let rank = |r: u32, calls: u64, wchar: u64| {
            format!(
                r#"{{"schema_version":1,"rank":{r},"local_rank":{r},"pid":{},"final":true,
                "wall_seconds":1.0,"empty_cache":{{"calls":{calls},"seconds":0.1,"max_seconds":0.1,
                "calls_in_checkpoint":{calls},"seconds_in_checkpoint":0.1}},
                "saves":[{{"function":"megatron.save_checkpoint","start":0.5,"seconds":0.2,"iteration":3,
                "counters":{{"empty_cache_calls":{calls},"empty_cache_seconds":0.1,"num_alloc_retries":0,
                "num_device_alloc":null,"num_device_free":2,"num_sync_all_streams":{calls},
                "wchar":{wchar},"write_bytes":4096}}}},
                {{"function":"torch.save","start":0.9,"seconds":0.01,"iteration":null}}],
                "memory":null,"allocator":{{}},"oom_snapshot":null,"overhead_seconds":0.0,
                "io":{{"wchar":{wchar},"write_bytes":4096}},"rebuild_cuda_tensor_calls":{r}}}"#,
                100 + r
            )
        };
        std::fs::write(probe.join("probe-rank0-pid100.json"), rank(0, 1, 1000)).unwrap();
        std::fs::write(probe.join("probe-rank1-pid101.json"), rank(1, 2, 3000)).unwrap();
        let s = read(dir.path()).unwrap();
        let per_save = s.per_save_metrics();
        let at3 = |name: &str| per_save[name][&3];
        assert_eq!(at3(names::CKPT_EMPTY_CACHE_CALLS), 2.0);
        assert_eq!(at3(names::CKPT_SYNC_ALL_STREAMS_CALLS), 2.0);
        assert_eq!(at3(names::CKPT_CUDA_FREE_CALLS), 2.0);
        assert_eq!(at3(names::CKPT_WRITTEN_BYTES), 4000.0);
        assert_eq!(at3(names::CKPT_DISK_WRITTEN_BYTES), 8192.0);
        // No rank could read it: left out, not zero.
        assert!(!per_save.contains_key(names::CKPT_CUDA_MALLOC_CALLS));
        let m = s.metrics(1);
        assert_eq!(m[names::REBUILD_CUDA_TENSOR_CALLS], 1.0);
        assert_eq!(m[names::JOB_WRITTEN_BYTES], 4000.0);
        assert!(!m.contains_key(names::CUDA_MALLOC_CALLS));
    }

    #[test]
    fn no_probe_folder_means_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_none());
    }
}
