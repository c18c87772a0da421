//! Stage "observe": the streaming Megatron log parser and the GPU / host memory samplers.

pub mod log;
pub mod probe;
pub mod sample;
