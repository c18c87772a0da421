//! `results.json`: everything recorded about one job ([`RunRecord`]) and its parts.
//!
//! Units are SI: bytes and seconds. Metric names follow Megatron's golden files (`lm loss`,
//! `num-zeros`, `iteration-time` in seconds, `mem-*-bytes`) plus goldgate's own keys
//! ([`crate::metric_names`]), so `bless` can write them into golden files unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;
use crate::step_values::StepValues;

/// Version of the `results.json` / `run.json` schema this goldgate writes. Bump on
/// incompatible changes.
///
/// 2: the host figure is PSS (`memory.host_peak_pss_bytes`, metric `host-peak-pss-bytes`);
/// RSS stays as `memory.host_peak_rss_bytes` (no longer a metric); `memory.mem_available`.
/// 3: `nodes`, each node's peaks and timeline for a job of several nodes (the memory metrics
/// are the max across nodes).
/// 4: `judging`, every input the job is judged by (the case's `METRICS`, `TEST_EVALUATION`,
/// `MODE`, the golden key, the rules' source and hash, the case file's hash), so a record is
/// judged without its case file.
/// 5: a save's blocking time is stored once, as the metric `checkpoint-blocking-time` (by save
/// iteration); `checkpoints[].blocking_max_seconds` is no longer written. Loading a version 1–4
/// record moves that field into the metric where the metric is absent.
pub const SCHEMA_VERSION: u32 = 5;

/// Versions this goldgate reads: older records read with the fields added since absent.
pub const READABLE_SCHEMA_VERSIONS: [u32; 5] = [1, 2, 3, 4, 5];

/// The variant a job ran under.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct VariantRecord {
    /// `allocator=gc80,checkpoint=async`, or `default`.
    pub name: String,
    /// Path-safe form used in output folders.
    pub slug: String,
    /// Axis → value.
    pub choices: BTreeMap<String, String>,
}

/// One attempt at a job (`--retries` may make several).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Attempt {
    /// 1-based attempt number.
    pub number: u32,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Wall time of the attempt.
    pub wall_seconds: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// The line that explains a failure: a failure marker's line (out of memory, NCCL
    /// timeout, NaN), else the exception line of the last Python traceback, else the last
    /// error-looking line.
    pub failure_line: Option<String>,
    /// The last lines of the log of a failed attempt (at most 30, each cut to 400 characters;
    /// absent for a passed one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Log file, relative to the job folder.
    pub log: PathBuf,
    /// Seconds the attempt waited in a batch scheduler's queue: from submission until it
    /// started, or, for one that never started, until it left the queue (then the outcome's
    /// `pending_seconds`, the same figure). Not part of `wall_seconds` nor of the timeout;
    /// absent where there is no queue (the local executor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_seconds: Option<f64>,
}

/// Where and on what the job ran: compared with the golden's platform before judging.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Fingerprint {
    /// GPU model as NVML names it (`NVIDIA H200`); null without a GPU.
    pub gpu_model: Option<String>,
    /// GPUs visible to the job.
    pub gpu_count: Option<u32>,
    /// NVIDIA driver version (`580.159.04`).
    pub driver_version: Option<String>,
    /// CUDA driver API version (`13.0`).
    pub cuda_version: Option<String>,
    /// Host name.
    pub host: String,
    /// goldgate's version.
    pub goldgate_version: String,
    /// The workload's git commit, when its folder is a git checkout.
    pub workload_commit: Option<String>,
    /// The node's I/O state around the job (page cache, checkpoint filesystem, node I/O, what
    /// `--settle` did): what moves save times besides the code. Absent in older results.
    #[serde(default)]
    pub io: Option<NodeIo>,
}

/// One checkpoint save seen in the log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct CheckpointRecord {
    /// Iteration the checkpoint was saved at.
    pub iteration: u64,
    /// Blocking time of `save_checkpoint()` from the `save-checkpoint` timer, min across ranks
    /// (s). The save's blocking time itself (the timer's max across ranks, or the wall time of
    /// a synchronous save without the timer) is the metric `checkpoint-blocking-time`, keyed
    /// by this save's iteration.
    pub blocking_min_seconds: Option<f64>,
    /// Wall time from the `saving checkpoint` line to `successfully saved` (s): for an async
    /// save the scheduling only, never its blocking time.
    pub saving_to_saved_seconds: Option<f64>,
    /// Whether the save was asynchronous (`scheduled an async checkpoint save`).
    pub asynchronous: bool,
    /// Async saves: scheduled → successfully saved (s).
    pub async_latency_seconds: Option<f64>,
    /// The save started before the previous async save finished (Megatron: `Starting a
    /// checkpoint save before previous has finished`): its blocking time includes waiting for
    /// that write. Absent (false) in version 1 records.
    #[serde(default)]
    pub started_before_previous_finished: bool,
    /// The next save started while this async save was being written: its latency ends when
    /// the next save finalized it (the schedule, not the write), so `checkpoint-async-latency`
    /// leaves it out.
    #[serde(default)]
    pub overlapped_by_next: bool,
    /// Allocated bytes reported before the save (rank 0).
    pub memory_before_bytes: Option<u64>,
    /// Allocated bytes reported after the save (rank 0).
    pub memory_after_bytes: Option<u64>,
    /// What goldgate's probe saw of this save (its window around `save_checkpoint_and_time`),
    /// when the probe ran. Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<SaveProbe>,
}

/// The probe's window around one save: its wall time, the in-job A/B arm it ran under, and
/// where rank 0's time went.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct SaveProbe {
    /// Wall time of the window, the max across ranks (s): Megatron's `save-checkpoint` timer
    /// plus what `save_checkpoint_and_time` does before it (its `empty_cache` call).
    pub seconds: f64,
    /// In-job A/B (`goldgate ab --within-job`): the arm in force, `a` or `b`; absent for a save
    /// outside the design (the first, set-up save) or a job without in-job A/B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// A switch the probe could not apply to this save, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_error: Option<String>,
    /// Where rank 0's window went.
    pub parts: SaveParts,
}

/// Where one save window's time went, as the probe counted it in one process (`None`: not
/// readable there, or a probe that did not count it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct SaveParts {
    /// Process CPU time, every thread (s).
    pub cpu_seconds: Option<f64>,
    /// `megatron.core.dist_checkpointing.save`: calls, wall time and process CPU time (s).
    pub dist_save_calls: Option<u64>,
    pub dist_save_seconds: Option<f64>,
    pub dist_save_cpu_seconds: Option<f64>,
    /// `os.fsync` / `os.fdatasync` calls and their time (s).
    pub fsync_calls: Option<u64>,
    pub fsync_seconds: Option<f64>,
    /// `torch.cuda.empty_cache()` calls and their time (s).
    pub empty_cache_calls: Option<u64>,
    pub empty_cache_seconds: Option<f64>,
    /// `getrusage`: page faults and context switches.
    pub minor_faults: Option<u64>,
    pub major_faults: Option<u64>,
    pub voluntary_switches: Option<u64>,
    pub involuntary_switches: Option<u64>,
}

/// Peak of one GPU over the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct GpuDevicePeak {
    /// NVML index.
    pub index: u32,
    /// Model name.
    pub name: String,
    /// Used memory before the job started (other processes, driver reserve).
    pub baseline_bytes: u64,
    /// Highest used memory sampled.
    pub peak_bytes: u64,
    /// Seconds after the job started when the peak was sampled.
    pub peak_at_seconds: f64,
    /// Highest used memory attributed to the job's own processes, where the driver reports it.
    pub process_peak_bytes: Option<u64>,
}

/// GPU memory as NVML saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct GpuMemory {
    /// Sampling interval (s).
    pub interval_seconds: f64,
    /// Samples taken per device.
    pub samples: u64,
    /// One entry per sampled device.
    pub devices: Vec<GpuDevicePeak>,
}

/// A downsampled memory timeline for the SVG chart (seconds since the job started).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Timeline {
    /// Sample times (s).
    pub t_seconds: Vec<f64>,
    /// GPU used memory summed over the job's devices, minus baseline; null without a GPU.
    pub gpu_used_bytes: Vec<Option<u64>>,
    /// Host RSS of the job's process tree.
    pub host_rss_bytes: Vec<u64>,
    /// Host PSS of the job's process tree (the last read at each time; empty in version 1).
    #[serde(default)]
    pub host_pss_bytes: Vec<u64>,
    /// `/dev/shm` usage above the baseline.
    pub shm_bytes: Vec<u64>,
    /// Seconds since start of each checkpoint save (start, end, iteration).
    pub saves: Vec<(f64, Option<f64>, u64)>,
}

/// `MemAvailable` around one job (bytes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct MemAvailableRecord {
    /// Before the job started.
    pub baseline_bytes: u64,
    /// The lowest value sampled while the job ran.
    pub min_bytes: u64,
    /// Seconds after the job started when the minimum was sampled.
    pub min_at_seconds: f64,
    /// `baseline_bytes - min_bytes`.
    pub drop_bytes: u64,
}

/// Memory peaks of the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct MemoryRecord {
    /// NVML view; null when no driver or GPU was found (never zero).
    pub gpu: Option<GpuMemory>,
    /// Peak PSS summed over the job's process tree (bytes): the gated host figure (metric
    /// `host-peak-pss-bytes`). Absent in version 1 records.
    #[serde(default)]
    pub host_peak_pss_bytes: Option<u64>,
    /// Walks of the process tree that read PSS (`/proc/PID/smaps_rollup` of every member).
    #[serde(default)]
    pub host_pss_reads: Option<u64>,
    /// CPU seconds goldgate spent on those reads.
    #[serde(default)]
    pub host_pss_read_cpu_seconds: Option<f64>,
    /// Peak RSS summed over the job's process tree (bytes): pages shared between the job's
    /// processes count once per process, so this over-counts forked workers.
    pub host_peak_rss_bytes: Option<u64>,
    /// The system-wide `MemAvailable` (`/proc/meminfo`) before the job and at its lowest while
    /// the job ran: an independent reading of the job's host memory (other processes and the
    /// page cache move it too). Absent in version 1 records.
    #[serde(default)]
    pub mem_available: Option<MemAvailableRecord>,
    /// Peak `/dev/shm` usage above the baseline (bytes).
    pub shm_peak_bytes: Option<u64>,
    /// Host sampling interval (s).
    pub host_interval_seconds: f64,
    /// Downsampled timeline for charts.
    pub timeline: Timeline,
    /// Memory metrics the samplers tried and could not read, with why (the job's processes
    /// were gone at every read): `compare` reports them `not-sampled`, not missing. Absent
    /// when there are none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_sampled: BTreeMap<String, String>,
}

/// Everything recorded about one job: `OUT/<run-id>/<case>/<variant>/<repeat>/results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct RunRecord {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The run this job belongs to.
    pub run_id: String,
    /// `<case>@<variant>#<repeat>`.
    pub job_id: String,
    /// `<model>/<case>`.
    pub case: String,
    /// The variant.
    pub variant: VariantRecord,
    /// 1-based repeat.
    pub repeat: u32,
    /// Platform name from goldgate.yaml.
    pub platform: String,
    /// Final outcome (of the last attempt).
    pub outcome: Outcome,
    /// Every attempt, oldest first.
    pub attempts: Vec<Attempt>,
    /// RFC 3339 start of the first attempt.
    pub started_at: String,
    /// Wall time of all attempts (s).
    pub wall_seconds: f64,
    /// The exact argv of each run (two for ckpt-resume tests).
    pub argv: Vec<Vec<String>>,
    /// The environment the plan set; secrets redacted.
    pub env: BTreeMap<String, String>,
    /// Variables the plan removed.
    pub env_unset: Vec<String>,
    /// Where it ran.
    pub fingerprint: Fingerprint,
    /// Whether exact-match checks are off (`NON_DETERMINSTIC_RESULTS` / `NVTE_ALLOW_NONDETERMINISTIC_ALGO`).
    pub nondeterministic: bool,
    /// Metric name → per-step values (golden names; goldgate metrics keyed by final step or save).
    pub metrics: BTreeMap<String, StepValues>,
    /// Checkpoint saves, in order.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Megatron's `Starting a checkpoint save before previous has finished` warnings (the saves
    /// concerned are flagged in `checkpoints`). Absent (0) in version 1 records.
    #[serde(default)]
    pub overlapping_saves: u64,
    /// Memory peaks and timeline.
    pub memory: MemoryRecord,
    /// Per-rank probe data (allocator statistics), when the probe ran.
    pub probe: Option<serde_json::Value>,
    /// CPU seconds goldgate itself used while the job ran (samplers and log parsing).
    #[serde(default)]
    pub observer_cpu_seconds: Option<f64>,
    /// Problems worth knowing about the measurement (e.g. no NVIDIA driver: GPU fields are null).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// A warm-up job (`goldgate run --warmup`): recorded, never compared, blessed or calibrated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// ckpt-resume and frozen-resume jobs: the second run, which resumes from a checkpoint.
    /// `metrics` above are the first run's, as Megatron compares the first run with the golden
    /// values and the second run's resumed steps with the first run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<ResumedRun>,
    /// A job of several nodes (Slurm): each node's peaks and timeline, node 0 first. The
    /// memory metrics are the max across them; `memory` is node 0's. Absent for one node and
    /// in records before version 3.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeMemory>,
    /// What the job is judged by, as the case and goldgate.yaml said when it ran. Absent in
    /// records before version 4: `compare` then reads them from today's case file, and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judging: Option<Judging>,
    /// `goldgate run --tensorboard`: what the job's TensorBoard folder gave the metrics above
    /// (for a resume test, the first run's folder). Absent without the option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorboard: Option<TensorboardRecord>,
    /// A job of a `goldgate ab` sequence: which A/B and which arm. Such a job is one arm of a
    /// comparison, never an ordinary run: `compare`, `bless`, `report` and `history` leave it
    /// out unless its run is named. Absent for every other job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbMember>,
}

/// Where a job of a `goldgate ab` sequence belongs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct AbMember {
    /// The A/B's id: its folder under `ab --out`, holding `ab.json`.
    pub ab_id: String,
    /// `a` (baseline) or `b` (candidate).
    pub arm: String,
    /// 1-based block and pair; 0 for a warm-up job.
    pub block: u32,
    pub pair: u32,
}

/// The variable `goldgate ab` sets in each job's environment to its arm: how records written
/// before [`RunRecord::ab`] existed are still known as A/B jobs.
pub const AB_ARM_VARIABLE: &str = "GOLDGATE_AB_ARM";

/// Every input of a job's judgement, recorded when it ran: `compare` judges a record by these,
/// never by the case file as it is today (unless asked to), and says when the case file or the
/// rules changed since.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Judging {
    /// The case's `METRICS` (Megatron's default `lm loss`, `num-zeros` when it names none):
    /// the golden metrics compared, besides goldgate's own keys.
    pub metrics: Vec<String>,
    /// `TEST_EVALUATION` as written in the case (`xpass`), absent when the case has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_evaluation: Option<String>,
    /// `MODE`: `pretraining`, `inference` (judged by its requests) or `rl`.
    pub mode: String,
    /// `TEST_EVALUATION: xpass`: a failure of the program under test is the expected result.
    pub expect_failure: bool,
    /// `SKIP_PYTEST=1` in the job's environment: judged by its outcome alone.
    pub skip_checks: bool,
    /// Which golden file judges the job.
    pub golden: GoldenKey,
    /// The metric rules the run was planned with.
    pub rules: RulesRef,
    /// The case's `model_config.yaml` as the run read it.
    pub case_file: PathBuf,
    /// SHA-256 of that file's bytes (hex).
    pub case_sha256: String,
}

/// The key of a job's golden file: `golden_values_<environment>_<platform>.json` in the
/// case's folder, or under `variants/<variant>/` for a non-default variant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct GoldenKey {
    /// Megatron's `environment` (`dev`, `lts`) of a recipe case; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The variant folder (`allocator-gc80+checkpoint-async`: the non-default choices); absent
    /// for the default variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// Where the rules came from and what they were.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct RulesRef {
    /// The goldgate.yaml read (`<builtin>` for the shipped copy).
    pub source: String,
    /// SHA-256 (hex) of the rules as goldgate resolved them (the file's rules in front of the
    /// built-in ones, serialised as JSON): equal hashes, equal rules.
    pub sha256: String,
}

/// What a run's TensorBoard folder (Megatron's `--tensorboard-dir`) gave its metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct TensorboardRecord {
    /// The folder read (relative to the job folder when inside it).
    pub dir: String,
    /// The event files read, oldest first (names).
    pub files: Vec<String>,
    /// Metrics whose values in `metrics` are (some of them) TensorBoard's: Megatron's golden
    /// metrics it has, and the steps of any other that the log did not print (memory with
    /// `--log-memory-to-tensorboard`, timers).
    pub metrics: Vec<String>,
    /// Metrics both the log and TensorBoard have whose values differ by more than the log's
    /// printed digits explain; `metrics` keeps one source, `other` holds the other's values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<SourceDisagreement>,
    /// Why the folder could not be read; the metrics are then the log's alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One metric the log and TensorBoard both have and disagree on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct SourceDisagreement {
    pub metric: String,
    /// Which source `metrics` keeps: `tensorboard` (Megatron's golden metrics) or `log`.
    pub kept: String,
    /// Steps both sources have.
    pub steps_compared: u64,
    /// Of those, the steps where they differ.
    pub steps_differing: u64,
    /// The first such step.
    pub first_step: u64,
    /// The largest relative difference, |log - tensorboard| / max(|log|, |tensorboard|).
    pub max_relative_difference: f64,
    /// The other source's values (all its steps).
    pub other: StepValues,
}

/// One node's memory peaks and timeline (bytes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct NodeMemory {
    /// The node's name (Slurm's, `SLURMD_NODENAME`).
    pub host: String,
    /// GPU used memory above the baseline, the largest over the node's devices; null without
    /// NVML.
    pub gpu_peak_above_baseline_bytes: Option<u64>,
    pub host_peak_pss_bytes: Option<u64>,
    pub host_peak_rss_bytes: Option<u64>,
    pub shm_peak_bytes: Option<u64>,
    pub timeline: Timeline,
}

/// The second run of a resume test: its log metrics after the step it resumed from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct ResumedRun {
    /// `TRAIN_ITERS / 2`: the steps after it are compared with the first run's.
    pub from_step: u64,
    /// The first step the second run printed (`from_step + 1` when it resumed as planned).
    pub first_step: Option<u64>,
    /// Metric name → the second run's values at steps after `from_step`.
    pub metrics: BTreeMap<String, StepValues>,
    /// `goldgate run --tensorboard`: what the second run's TensorBoard folder gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorboard: Option<TensorboardRecord>,
}

impl VariantRecord {
    /// The variant of a job that picked no axis value: `default`.
    pub fn baseline() -> VariantRecord {
        VariantRecord {
            name: "default".into(),
            slug: "default".into(),
            choices: BTreeMap::new(),
        }
    }
}

impl RunRecord {
    /// A passed job of `case` under `variant` (`job_id` `<case>@<variant>#<repeat>`) on
    /// `platform` that recorded nothing else: no run id, start time, argv, metrics or memory.
    /// The one base every hand-made record (tests, benchmarks) fills in with struct update
    /// syntax; `goldgate run` builds its records in `metrics::build`.
    pub fn passed(case: &str, variant: VariantRecord, repeat: u32, platform: &str) -> RunRecord {
        RunRecord {
            schema_version: SCHEMA_VERSION,
            run_id: String::new(),
            job_id: format!("{case}@{}#{repeat}", variant.name),
            case: case.into(),
            variant,
            repeat,
            platform: platform.into(),
            outcome: Outcome::Passed,
            attempts: Vec::new(),
            started_at: String::new(),
            wall_seconds: 0.0,
            argv: Vec::new(),
            env: BTreeMap::new(),
            env_unset: Vec::new(),
            fingerprint: Fingerprint::default(),
            nondeterministic: false,
            metrics: BTreeMap::new(),
            checkpoints: Vec::new(),
            overlapping_saves: 0,
            memory: MemoryRecord::default(),
            probe: None,
            observer_cpu_seconds: None,
            warnings: Vec::new(),
            warmup: false,
            resumed: None,
            nodes: Vec::new(),
            judging: None,
            tensorboard: None,
            ab: None,
        }
    }

    /// Whether this job is an arm of a `goldgate ab` sequence ([`RunRecord::ab`], or for older
    /// records the arm variable in its environment).
    pub fn is_ab(&self) -> bool {
        self.ab.is_some() || self.env.contains_key(AB_ARM_VARIABLE)
    }

    /// The folder of this job relative to the run folder.
    pub fn rel_dir(&self) -> PathBuf {
        job_rel_dir(&self.case, &self.variant.slug, self.repeat)
    }

    /// `gpu-peak-memory-bytes`, or (for records without it) the largest per-device NVML peak
    /// above its baseline.
    pub fn gpu_peak_bytes(&self) -> Option<f64> {
        self.last_value(crate::metric_names::GPU_PEAK).or_else(|| {
            let gpu = self.memory.gpu.as_ref()?;
            gpu.devices
                .iter()
                .map(|d| d.peak_bytes.saturating_sub(d.baseline_bytes))
                .max()
                .map(|b| b as f64)
        })
    }

    /// The last value of a metric (scalar metrics have one value).
    pub fn last_value(&self, metric: &str) -> Option<f64> {
        self.metrics
            .get(metric)
            .and_then(|s| s.0.values().next_back().copied())
    }
}

/// `<case>/<variant slug>/<repeat>`: where a job's files live under the run folder.
fn job_rel_dir(case: &str, variant_slug: &str, repeat: u32) -> PathBuf {
    Path::new(case).join(variant_slug).join(repeat.to_string())
}

/// The node's I/O state around one job, as `results.json` keeps it in the fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct NodeIo {
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): jobs with the same one ran on
    /// the same machine without a reboot in between (host names repeat across virtual machines).
    #[serde(default)]
    pub boot_id: Option<String>,
    /// What goldgate did before the job (`--settle`): `none`, `sync` or `drop-caches`.
    pub settle: String,
    /// Seconds the settle step took.
    pub settle_seconds: Option<f64>,
    /// Filesystem of the checkpoint folder (`ext4`, `xfs`, `tmpfs`, `nfs`, `lustre`, or the
    /// `statfs` magic number as `0x...`).
    pub checkpoint_fs: Option<String>,
    /// `Dirty` and `Writeback` of `/proc/meminfo` when the job started, and their highest
    /// value while it ran (bytes).
    pub dirty_start_bytes: Option<u64>,
    pub dirty_peak_bytes: Option<u64>,
    pub writeback_start_bytes: Option<u64>,
    pub writeback_peak_bytes: Option<u64>,
    /// Block I/O of the node's disks while the job ran (`/proc/diskstats`, whole disks only;
    /// the job's own writes included).
    pub disk_read_bytes: Option<u64>,
    pub disk_write_bytes: Option<u64>,
    pub disk_discard_bytes: Option<u64>,
    /// Milliseconds the busiest disk had I/O in flight.
    pub disk_busy_ms: Option<u64>,
    /// Time some / all tasks stalled on I/O while the job ran (`/proc/pressure/io` totals, µs).
    pub io_pressure_some_us: Option<u64>,
    pub io_pressure_full_us: Option<u64>,
}
