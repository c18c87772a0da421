//! Stage "observe": the streaming Megatron log parser, the GPU / host memory samplers, the
//! in-process allocator probe, the checkpoint folders' sizes and the TensorBoard event files a
//! job writes.

pub mod ckpt_folders;
pub(crate) mod node;
pub mod probe;
pub mod sample;

pub use goldgate_core::observe::{log, tensorboard};
