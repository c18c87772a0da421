//! Stage "observe": the GPU / host memory samplers, the in-process allocator probe, the node's
//! I/O state and the checkpoint folders' sizes; the streaming Megatron log parser and the
//! TensorBoard reader are `goldgate-core`'s (judging reads them too), re-exported here.

pub mod ckpt_folders;
pub(crate) mod node;
pub mod probe;
pub mod sample;

pub use goldgate_core::observe::{log, tensorboard};
