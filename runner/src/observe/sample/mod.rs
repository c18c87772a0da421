//! Stage "observe": the GPU (NVML) and host (process-tree RSS, `/dev/shm`) memory samplers.

mod gpu;
mod host;
mod sampler;
mod timeline;

pub use gpu::{DeviceSummary, GpuEnvironment, GpuSummary, ProcessPeak};
pub use sampler::{
    DEFAULT_INTERVAL, HostSummary, SampleError, SampleSummary, Sampler, SamplerConfig,
};
pub use timeline::{MAX_BUCKETS, Point, SeriesSummary};
