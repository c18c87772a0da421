//! Stage "observe": the streaming Megatron log parser, the GPU / host memory samplers, the
//! in-process allocator probe and the checkpoint folders' sizes.

pub mod ckpt_folders;
pub mod log;
pub mod node;
pub mod probe;
pub mod sample;
