//! Stage "observe": the streaming Megatron log parser, the GPU / host memory samplers and the
//! in-process allocator probe, and the TensorBoard event files a job writes.

pub mod log;
pub mod node;
pub mod probe;
pub mod sample;
pub mod tensorboard;
