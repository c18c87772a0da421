//! Stage "metrics": the versioned `results.json` schema (one [`RunRecord`] per job) and the
//! `run.json` index of a run ([`RunIndex`]), with loading that names the file on any error.
//!
//! Units are SI: bytes and seconds. Metric names follow Megatron's golden files (`lm loss`,
//! `num-zeros`, `iteration-time` in seconds, `mem-*-bytes`) plus goldgate's own keys
//! (see `docs/architecture.md`), so `bless` can write them into golden files unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::observe::node::NodeIo;

/// Version of the `results.json` / `run.json` schema this goldgate writes. Bump on
/// incompatible changes.
///
/// 2: the host figure is PSS (`memory.host_peak_pss_bytes`, metric `host-peak-pss-bytes`);
/// RSS stays as `memory.host_peak_rss_bytes` (no longer a metric); `memory.mem_available`.
/// 3: `nodes`, each node's peaks and timeline for a job of several nodes (the memory metrics
/// are the max across nodes).
pub const SCHEMA_VERSION: u32 = 3;

/// Versions this goldgate reads: older records read with the fields added since absent.
const READABLE_SCHEMA_VERSIONS: [u32; 3] = [1, 2, 3];

/// Per-step values of one metric. NaN is written as the string `"nan"` (JSON has no NaN),
/// as Megatron's golden files do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepValues(pub BTreeMap<u64, f64>);

impl Serialize for StepValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (step, v) in &self.0 {
            if v.is_finite() {
                m.serialize_entry(&step.to_string(), v)?;
            } else {
                m.serialize_entry(&step.to_string(), &nan_text(*v))?;
            }
        }
        m.end()
    }
}

fn nan_text(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

impl<'de> Deserialize<'de> for StepValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Num {
            F(f64),
            S(String),
        }
        let raw = BTreeMap::<String, Num>::deserialize(d)?;
        let mut out = BTreeMap::new();
        for (k, v) in raw {
            let step: u64 = k
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("step `{k}` is not an integer")))?;
            let value = match v {
                Num::F(f) => f,
                Num::S(s) => match s.as_str() {
                    "nan" | "NaN" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    other => {
                        return Err(serde::de::Error::custom(format!(
                            "value `{other}` at step {k} is not a number"
                        )));
                    }
                },
            };
            out.insert(step, value);
        }
        Ok(StepValues(out))
    }
}

/// How a job ended. A job that did not pass is never compared as if it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Exit code 0 and no failure marker.
    Passed,
    /// Non-zero exit code.
    Failed { exit_code: i32 },
    /// Ended by a signal it did not ask for.
    Killed { signal: i32 },
    /// Ran past `--timeout`; stopped with SIGTERM, then SIGKILL.
    TimedOut { after_seconds: f64 },
    /// CUDA / NCCL out of memory.
    OutOfMemory,
    /// An NCCL or collective operation timed out.
    NcclTimeout,
    /// Training produced NaN.
    Nan,
    /// goldgate was interrupted (Ctrl-C / SIGTERM) while the job ran.
    Interrupted,
    /// The job could not be started (program not found, bad working directory, ...).
    LaunchError { message: String },
    /// The batch scheduler ended the job for exceeding its memory on a host (Slurm's
    /// `OUT_OF_MEMORY`: the job's cgroup limit, not a CUDA allocation).
    HostOutOfMemory,
    /// The cluster failed the job, not its program (Slurm's `NODE_FAIL`, `PREEMPTED`,
    /// `BOOT_FAIL`): retried under `--retries`.
    Infrastructure { state: String },
}

impl Outcome {
    /// Whether the job ran to a normal end.
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }

    /// A short human label: `passed`, `failed (exit 1)`, `out of memory`, ...
    pub fn label(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::Failed { exit_code } => format!("failed (exit {exit_code})"),
            Outcome::Killed { signal } => format!("killed (signal {signal})"),
            Outcome::TimedOut { after_seconds } => format!("timed out after {after_seconds:.0} s"),
            Outcome::OutOfMemory => "out of memory".into(),
            Outcome::NcclTimeout => "NCCL timeout".into(),
            Outcome::Nan => "NaN".into(),
            Outcome::Interrupted => "interrupted".into(),
            Outcome::LaunchError { message } => format!("launch error: {message}"),
            Outcome::HostOutOfMemory => "host out of memory".into(),
            Outcome::Infrastructure { state } => format!("infrastructure failure ({state})"),
        }
    }
}

/// The variant a job ran under.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Seconds the attempt waited in a batch scheduler's queue before it ran (not part of
    /// `wall_seconds` nor of the timeout); absent where there is no queue (the local executor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_seconds: Option<f64>,
}

/// Where and on what the job ran: compared with the golden's platform before judging.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct CheckpointRecord {
    /// Iteration the checkpoint was saved at.
    pub iteration: u64,
    /// Blocking time of `save_checkpoint()` from the `save-checkpoint` timer, min across ranks (s).
    pub blocking_min_seconds: Option<f64>,
    /// Same, max across ranks (s). The metric `checkpoint-blocking-time` uses this.
    pub blocking_max_seconds: Option<f64>,
    /// Wall time from the `saving checkpoint` line to `successfully saved` (sync saves) (s).
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
}

/// Peak of one GPU over the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

/// Everything recorded about one job: `OUT/<run-id>/<case>/<variant>/<repeat>/results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

/// One node's memory peaks and timeline (bytes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct ResumedRun {
    /// `TRAIN_ITERS / 2`: the steps after it are compared with the first run's.
    pub from_step: u64,
    /// The first step the second run printed (`from_step + 1` when it resumed as planned).
    pub first_step: Option<u64>,
    /// Metric name → the second run's values at steps after `from_step`.
    pub metrics: BTreeMap<String, StepValues>,
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
        }
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

/// One job in the run index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobEntry {
    /// `<case>@<variant>#<repeat>`.
    pub job_id: String,
    /// Folder relative to the run folder.
    pub dir: PathBuf,
    /// Outcome, or null while it runs.
    pub outcome: Option<Outcome>,
}

/// `OUT/<run-id>/run.json`: what the run was asked to do and where each job's files are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunIndex {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Run id (`YYYYMMDD-HHMMSS-<4 hex>`).
    pub run_id: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339, null while running.
    pub finished_at: Option<String>,
    /// Platform name.
    pub platform: String,
    /// goldgate's version.
    pub goldgate_version: String,
    /// The command line (secrets never appear in it: they come from the environment).
    pub command: Vec<String>,
    /// Jobs in plan order.
    pub jobs: Vec<JobEntry>,
}

/// Reading recorded results back.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RecordError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON of the schema.
    #[error("{}: line {line}, column {column}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A file has a schema version this goldgate does not read.
    #[error("{}: schema_version {found} is not supported (this goldgate reads 1 and {SCHEMA_VERSION})", path.display())]
    #[diagnostic(help("re-record with this goldgate version, or use the version that wrote it"))]
    Version { path: PathBuf, found: u64 },
    /// A name in a file cannot be part of a path (`"case": "../../x"`).
    #[error("{}: {message}", path.display())]
    #[diagnostic(help(
        "this file was not written by goldgate as it is, or was edited; goldgate never uses such \
         a name in a path"
    ))]
    Name { path: PathBuf, message: String },
    /// A file is larger than goldgate reads.
    #[error("{} is {bytes} bytes, more than the {MAX_RECORD_BYTES} goldgate reads", path.display())]
    #[diagnostic(help("re-record with this goldgate version, which downsamples long series"))]
    TooLarge { path: PathBuf, bytes: u64 },
    /// No results were found where the user pointed.
    #[error("no results.json under {}", path.display())]
    #[diagnostic(help("pass the folder that `goldgate run --out` wrote, e.g. results/<run-id>"))]
    Empty { path: PathBuf },
}

/// Largest `results.json` or `run.json` goldgate reads. Long series are downsampled when a
/// record is built, so a record of a million-step run stays a few MiB.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, RecordError> {
    let bytes = match crate::fsio::read_limited(path, MAX_RECORD_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(bytes)) => {
            return Err(RecordError::TooLarge {
                path: path.to_path_buf(),
                bytes,
            });
        }
        Err(source) => {
            return Err(RecordError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    /// Only the version, read without building the whole document.
    #[derive(serde::Deserialize)]
    struct Version {
        #[serde(default)]
        schema_version: Option<u64>,
    }
    let version: Version = serde_json::from_slice(&bytes).map_err(|e| parse_error(path, &e))?;
    let found = version.schema_version.unwrap_or(0);
    if !READABLE_SCHEMA_VERSIONS.contains(&u32::try_from(found).unwrap_or(0)) {
        return Err(RecordError::Version {
            path: path.to_path_buf(),
            found,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| parse_error(path, &e))
}

fn parse_error(path: &Path, e: &serde_json::Error) -> RecordError {
    RecordError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    }
}

/// Reads one `results.json`.
pub fn load_record(path: &Path) -> Result<RunRecord, RecordError> {
    let mut record: RunRecord = read_json(path)?;
    check_names(&record).map_err(|message| RecordError::Name {
        path: path.to_path_buf(),
        message,
    })?;
    scrub_output(&mut record);
    Ok(record)
}

/// The job output a record carries (failure lines, log tails, warnings), with what looks like
/// a secret by itself masked (`observe::log::scrub`): a record may come from another machine
/// or an older goldgate, whose output did not pass this machine's redactor, and every report
/// and PR comment is rendered from loaded records.
fn scrub_output(record: &mut RunRecord) {
    let scrub = |t: &mut String| {
        if let std::borrow::Cow::Owned(clean) = crate::observe::log::scrub(t) {
            *t = clean;
        }
    };
    for a in &mut record.attempts {
        a.failure_line.iter_mut().for_each(scrub);
        a.log_tail.iter_mut().for_each(scrub);
    }
    record.warnings.iter_mut().for_each(scrub);
}

/// Reads one `run.json`.
pub fn load_index(path: &Path) -> Result<RunIndex, RecordError> {
    let index: RunIndex = read_json(path)?;
    let names = || -> Result<(), String> {
        crate::fsio::check_component("run id", &index.run_id)?;
        index
            .jobs
            .iter()
            .try_for_each(|j| crate::fsio::check_relative("job folder", &j.dir.to_string_lossy()))
    };
    names().map_err(|message| RecordError::Name {
        path: path.to_path_buf(),
        message,
    })?;
    Ok(index)
}

/// The names of a record that become parts of paths (`bless` writes
/// `<golden root>/<case>/variants/<slug>/golden_values_dev_<platform>.json`): a record with
/// `"case": "../../../x"` must never reach a path.
fn check_names(r: &RunRecord) -> Result<(), String> {
    crate::fsio::check_relative("case", &r.case)?;
    crate::fsio::check_component("variant slug", &r.variant.slug)?;
    crate::fsio::check_component("run id", &r.run_id)?;
    if !r.platform.is_empty() {
        crate::fsio::check_component("platform", &r.platform)?;
    }
    Ok(())
}

/// Every `results.json` under `dir` (a run folder, or a folder of run folders) except those of
/// warm-up jobs, which ran only to warm the machine and nothing judges, sorted by path so
/// reports are stable. Errors name the file.
pub fn load_results(dir: &Path) -> Result<Vec<(PathBuf, RunRecord)>, RecordError> {
    let mut records = load_all_results(dir)?;
    records.retain(|(_, r)| !r.warmup);
    Ok(records)
}

/// Every `results.json` under `dir`, warm-up jobs included (`goldgate power` reports them).
pub fn load_all_results(dir: &Path) -> Result<Vec<(PathBuf, RunRecord)>, RecordError> {
    let mut paths = Vec::new();
    collect(dir, &mut paths, 0)?;
    paths.sort();
    if paths.is_empty() {
        return Err(RecordError::Empty {
            path: dir.to_path_buf(),
        });
    }
    paths
        .into_iter()
        .map(|p| load_record(&p).map(|r| (p, r)))
        .collect()
}

/// Every `run.json` of a results folder: `dir/run.json` (a run folder) and `dir/*/run.json` (a
/// folder of runs), sorted by path. A folder without any (results from `extract`, or written by
/// hand) has none, which is not an error.
pub fn load_indexes(dir: &Path) -> Result<Vec<(PathBuf, RunIndex)>, RecordError> {
    let mut paths = vec![dir.join("run.json")];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                paths.push(entry.path().join("run.json"));
            }
        }
    }
    paths.retain(|p| crate::fsio::exists(p));
    paths.sort();
    paths
        .into_iter()
        .map(|p| load_index(&p).map(|i| (p, i)))
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), RecordError> {
    // <run>/<model>/<case>/<variant>/<repeat>/results.json is 5 deep; allow one more level
    // for a folder of runs and stop there (checkpoint folders can be huge).
    if depth > 6 {
        return Ok(());
    }
    let read_err = |source| RecordError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(read_err)?;
        if file_type.is_dir() {
            let name = entry.file_name();
            if matches!(
                name.to_str(),
                Some("checkpoints" | "tensorboard" | "data-cache" | "logs" | "output")
            ) {
                continue;
            }
            collect(&path, out, depth + 1)?;
        } else if entry.file_name() == "results.json" {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> RunRecord {
        let mut metrics = BTreeMap::new();
        metrics.insert(
            "lm loss".to_string(),
            StepValues(BTreeMap::from([(1, 10.5), (2, f64::NAN)])),
        );
        RunRecord {
            run_id: "20261130-062900-abcd".into(),
            outcome: Outcome::Failed { exit_code: 1 },
            started_at: "2026-11-30T06:29:00Z".into(),
            wall_seconds: 1.5,
            argv: vec![vec![
                "fake-trainer".into(),
                "--train-iters".into(),
                "3".into(),
            ]],
            metrics,
            ..RunRecord::passed("demo/ckpt-demo", VariantRecord::baseline(), 1, "dev_cpu")
        }
    }

    #[test]
    fn round_trips_with_nan_as_string() {
        let r = sample();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""2":"nan""#), "{text}");
        assert!(
            text.contains(r#""status":"failed","exit_code":1"#),
            "{text}"
        );
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.metrics["lm loss"].0[&1], 10.5);
        assert!(back.metrics["lm loss"].0[&2].is_nan());
        assert_eq!(back.outcome, r.outcome);
    }

    #[test]
    fn a_record_from_elsewhere_loads_with_secret_shaped_output_masked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let mut r = sample();
        r.warnings = vec!["job said HF_TOKEN=hf_0123456789abcdefghijXYZ".into()];
        let text = serde_json::to_string(&r).unwrap();
        std::fs::write(&p, text).unwrap();
        let back = load_record(&p).unwrap();
        assert_eq!(back.warnings, ["job said HF_TOKEN=<redacted>"]);
    }

    #[test]
    fn load_names_the_file_on_bad_json_and_bad_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        std::fs::write(&p, "{\n  \"schema_version\": 1,\n  oops").unwrap();
        let e = load_record(&p).unwrap_err().to_string();
        assert!(e.contains("results.json: line 3"), "{e}");
        std::fs::write(&p, r#"{"schema_version": 99}"#).unwrap();
        let e = load_record(&p).unwrap_err().to_string();
        assert!(e.contains("schema_version 99 is not supported"), "{e}");
    }

    #[test]
    fn version_1_records_still_read_with_the_new_fields_absent() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.json");
        let mut v1 = serde_json::to_value(sample()).unwrap();
        v1["schema_version"] = 1.into();
        let memory = v1["memory"].as_object_mut().unwrap();
        for new in [
            "host_peak_pss_bytes",
            "host_pss_reads",
            "host_pss_read_cpu_seconds",
            "mem_available",
        ] {
            assert!(memory.remove(new).is_some(), "{new}");
        }
        memory.insert("host_peak_rss_bytes".into(), 5.into());
        v1["memory"]["timeline"]
            .as_object_mut()
            .unwrap()
            .remove("host_pss_bytes");
        std::fs::write(&p, serde_json::to_vec(&v1).unwrap()).unwrap();
        let r = load_record(&p).unwrap();
        assert_eq!(r.schema_version, 1);
        assert_eq!(r.memory.host_peak_rss_bytes, Some(5));
        assert_eq!(r.memory.host_peak_pss_bytes, None);
        assert_eq!(r.memory.mem_available, None);
    }

    #[test]
    fn load_results_walks_job_folders_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = sample();
        for (repeat, slug) in [(2, "b"), (1, "a")] {
            r.repeat = repeat;
            r.variant.slug = slug.into();
            let p = dir.path().join(r.rel_dir()).join("results.json");
            crate::fsio::write_atomic(&p, &serde_json::to_vec(&r).unwrap()).unwrap();
        }
        let found = load_results(dir.path()).unwrap();
        let repeats: Vec<_> = found.iter().map(|(_, r)| r.repeat).collect();
        assert_eq!(repeats, vec![1, 2]);
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_results(empty.path()),
            Err(RecordError::Empty { .. })
        ));
    }
}
