//! The names of the metrics goldgate reads, writes or treats specially.
//! Megatron's golden names (`lm loss`, `num-zeros`, `iteration-time`) and goldgate's own keys
//! (also written to golden files; see `docs/book/src/reference/architecture.md`). Code names a metric through
//! these constants only, so a rename is one edit.

/// Megatron's language-model loss, per step.
pub const LM_LOSS: &str = "lm loss";
/// Megatron's count of zeros in the gradients, per step.
pub const NUM_ZEROS: &str = "num-zeros";
/// Seconds per iteration (Megatron prints milliseconds), per step.
pub const ITERATION_TIME: &str = "iteration-time";
/// Bytes PyTorch's allocator holds for tensors (`--log-memory-to-tensorboard`), per step.
pub const MEM_ALLOCATED: &str = "mem-allocated-bytes";
/// Peak of [`MEM_ALLOCATED`] so far, per step.
pub const MEM_MAX_ALLOCATED: &str = "mem-max-allocated-bytes";

/// The metrics Megatron's `get_test_results_from_tensorboard_logs.py` keeps in a golden file,
/// in its order: where a job's TensorBoard folder has them, they win over the log's.
pub const MEGATRON_TENSORBOARD_METRICS: [&str; 8] = [
    ITERATION_TIME,
    MEM_ALLOCATED,
    MEM_MAX_ALLOCATED,
    LM_LOSS,
    NUM_ZEROS,
    "mtp_1 loss",
    "mtp_2 loss",
    "total loss",
];

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

// Counters: what the save path and the allocator did, counted by the probe (or a
// workload writing probe files itself, as the fake trainer does). They do not drift with the
// machine, so they are judged exactly (counts) or tightly (bytes), with one job, no statistics.
// Job totals are the max across ranks; `checkpoint-*` counters are per save, keyed by the save
// iteration (counts: max across ranks; bytes: summed over ranks). See
// docs/book/src/guide/counters.md.

/// `torch.cuda.empty_cache()` calls of the job (max across ranks).
pub const EMPTY_CACHE_CALLS: &str = "empty-cache-calls";
/// The allocator's `num_alloc_retries`: cudaMalloc failures it retried after freeing its cache.
pub const ALLOC_RETRIES: &str = "alloc-retries";
/// The allocator's `num_ooms`: out-of-memory errors it raised.
pub const CUDA_OOMS: &str = "cuda-ooms";
/// The allocator's `num_device_alloc`: cudaMalloc calls (segments it asked the driver for).
pub const CUDA_MALLOC_CALLS: &str = "cuda-malloc-calls";
/// The allocator's `num_device_free`: cudaFree calls (segments it gave back).
pub const CUDA_FREE_CALLS: &str = "cuda-free-calls";
/// The allocator's `num_sync_all_streams`: device-wide synchronisations it made (each
/// `empty_cache`, each retry after a failed cudaMalloc).
pub const SYNC_ALL_STREAMS_CALLS: &str = "sync-all-streams-calls";
/// Calls of `torch.multiprocessing.reductions.rebuild_cuda_tensor`: CUDA tensors a process
/// received from another one (an async checkpoint worker's handoff), summed over processes.
pub const REBUILD_CUDA_TENSOR_CALLS: &str = "rebuild-cuda-tensor-calls";
/// `empty_cache` calls inside one save (from the start of `save_checkpoint_and_time`).
pub const CKPT_EMPTY_CACHE_CALLS: &str = "checkpoint-empty-cache-calls";
/// Seconds spent in those calls (a clock: recorded, judged only when a case's `METRICS` names it).
pub const CKPT_EMPTY_CACHE_SECONDS: &str = "checkpoint-empty-cache-seconds";
/// `num_alloc_retries` added during one save.
pub const CKPT_ALLOC_RETRIES: &str = "checkpoint-alloc-retries";
/// `num_device_alloc` added during one save.
pub const CKPT_CUDA_MALLOC_CALLS: &str = "checkpoint-cuda-malloc-calls";
/// `num_device_free` added during one save.
pub const CKPT_CUDA_FREE_CALLS: &str = "checkpoint-cuda-free-calls";
/// `num_sync_all_streams` added during one save.
pub const CKPT_SYNC_ALL_STREAMS_CALLS: &str = "checkpoint-sync-all-streams-calls";
/// Bytes the ranks passed to `write()` during one save (`wchar` of `/proc/self/io`), summed
/// over ranks.
pub const CKPT_WRITTEN_BYTES: &str = "checkpoint-written-bytes";
/// Bytes the ranks sent to the block layer during one save (`write_bytes`): recorded, not
/// gated (a file system without writeback, tmpfs, counts none; page-cache timing moves it).
pub const CKPT_DISK_WRITTEN_BYTES: &str = "checkpoint-disk-written-bytes";
/// Size of the save's checkpoint folder (`iter_NNNNNNN`) once the job ended, in bytes of file
/// content: an independent reading of what one save wrote.
pub const CKPT_FOLDER_BYTES: &str = "checkpoint-folder-bytes";
/// Bytes the job's probed processes passed to `write()` (`wchar` of `/proc/self/io` at each
/// one's exit, which includes the children it reaped), summed over processes: read in-process
/// at exit, since a sampler outside loses what a process writes after its last sample.
pub const JOB_WRITTEN_BYTES: &str = "job-written-bytes";

/// The counters judged exactly: any change of the count is a change of behaviour.
pub const EXACT_COUNTERS: [&str; 8] = [
    EMPTY_CACHE_CALLS,
    ALLOC_RETRIES,
    CUDA_OOMS,
    SYNC_ALL_STREAMS_CALLS,
    REBUILD_CUDA_TENSOR_CALLS,
    CKPT_EMPTY_CACHE_CALLS,
    CKPT_ALLOC_RETRIES,
    CKPT_SYNC_ALL_STREAMS_CALLS,
];

/// The allocator's segment counts (`num_device_alloc` / `num_device_free`), judged with a
/// tolerance: on real Megatron they do not repeat exactly between identical jobs (an H200 ab of
/// `gpt/h200-ckpt-power`, device call Q: 510 -> 517 cudaMalloc calls, 43 -> 44 in one save,
/// with nothing changed but a sleep in the save), while the exact counters above did.
pub const ALLOCATOR_COUNTERS: [&str; 4] = [
    CUDA_MALLOC_CALLS,
    CUDA_FREE_CALLS,
    CKPT_CUDA_MALLOC_CALLS,
    CKPT_CUDA_FREE_CALLS,
];

/// The byte counters judged tightly (a log line's digits or a file's metadata move them by a
/// few bytes, not by a percent).
pub const BYTE_COUNTERS: [&str; 3] = [CKPT_WRITTEN_BYTES, CKPT_FOLDER_BYTES, JOB_WRITTEN_BYTES];

/// goldgate's own metric keys: compared whenever a golden file has them (only goldgate writes
/// them), whatever the case's `METRICS` says. The counters are among them, so a golden blessed
/// with a count gates on it.
pub const GOLDGATE_METRICS: [&str; 20] = [
    GPU_PEAK,
    HOST_PEAK,
    SHM_PEAK,
    CHECKPOINT_BLOCKING,
    CHECKPOINT_ASYNC_LATENCY,
    EMPTY_CACHE_CALLS,
    ALLOC_RETRIES,
    CUDA_OOMS,
    CUDA_MALLOC_CALLS,
    CUDA_FREE_CALLS,
    SYNC_ALL_STREAMS_CALLS,
    REBUILD_CUDA_TENSOR_CALLS,
    CKPT_EMPTY_CACHE_CALLS,
    CKPT_ALLOC_RETRIES,
    CKPT_CUDA_MALLOC_CALLS,
    CKPT_CUDA_FREE_CALLS,
    CKPT_SYNC_ALL_STREAMS_CALLS,
    CKPT_WRITTEN_BYTES,
    CKPT_FOLDER_BYTES,
    JOB_WRITTEN_BYTES,
];
