//! Stage "observe": the memory sampler — GPU (NVML) and host (process-tree RSS, `/dev/shm`).

mod gpu;
mod host;
mod sampler;
mod timeline;

pub use gpu::{DeviceSummary, GpuEnvironment, GpuSummary, MemoryQuery, ProcessPeak};
pub use host::HostSummary;
pub use sampler::{DEFAULT_INTERVAL, SampleError, SampleSummary, Sampler, SamplerConfig};
pub use timeline::{MAX_BUCKETS, Point, SeriesSummary};
