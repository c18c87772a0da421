//! Stage "observe": the memory sampler — GPU (NVML) and host (process-tree PSS and RSS,
//! `/dev/shm`, `MemAvailable`).

mod gpu;
mod host;
mod procfs;
mod pss;
mod sampler;
mod timeline;

pub use gpu::{DeviceSummary, GpuEnvironment, GpuSummary, MemoryQuery, ProcessPeak};
pub use host::{HostSummary, MemAvailableSummary};
pub use sampler::{DEFAULT_INTERVAL, SampleError, SampleSummary, Sampler, SamplerConfig};
pub use timeline::{MAX_BUCKETS, Point, SeriesSummary};
