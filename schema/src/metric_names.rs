//! The names of the metrics goldgate reads, writes or treats specially.
//! Megatron's golden names (`lm loss`, `num-zeros`, `iteration-time`) and goldgate's own keys
//! (also written to golden files; see `docs/architecture.md`). Code names a metric through
//! these constants only, so a rename is one edit.

/// Megatron's language-model loss, per step.
pub const LM_LOSS: &str = "lm loss";
/// Megatron's count of zeros in the gradients, per step.
pub const NUM_ZEROS: &str = "num-zeros";
/// Seconds per iteration (Megatron prints milliseconds), per step.
pub const ITERATION_TIME: &str = "iteration-time";
/// Seconds `save_checkpoint()` blocked training, per save iteration.
pub const CHECKPOINT_BLOCKING: &str = "checkpoint-blocking-time";
/// Seconds from scheduling an async save to its completion, per save iteration.
pub const CHECKPOINT_ASYNC_LATENCY: &str = "checkpoint-async-latency";
/// NVML peak used memory above the pre-job baseline, max over devices (bytes).
pub const GPU_PEAK: &str = "gpu-peak-memory-bytes";
/// Peak PSS summed over the job's process tree (bytes): a page shared by `n` of the job's
/// processes counts `1/n` in each.
pub const HOST_PEAK: &str = "host-peak-pss-bytes";
/// The host figure of `results.json` version 1: peak RSS summed over the process tree, which
/// counts shared pages once per process. No longer recorded as a metric (RSS stays in
/// `memory.host_peak_rss_bytes`) nor compared; golden files blessed before keep it.
pub const HOST_PEAK_RSS_V1: &str = "host-peak-rss-bytes";
/// Peak `/dev/shm` usage above the pre-job baseline (bytes).
pub const SHM_PEAK: &str = "shm-peak-bytes";

/// goldgate's own metric keys: compared whenever a golden file has them (only goldgate writes
/// them), whatever the case's `METRICS` says.
pub const GOLDGATE_METRICS: [&str; 5] = [
    GPU_PEAK,
    HOST_PEAK,
    SHM_PEAK,
    CHECKPOINT_BLOCKING,
    CHECKPOINT_ASYNC_LATENCY,
];
