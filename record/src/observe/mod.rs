//! Stage "observe": the GPU / host memory samplers, the in-process allocator probe, the node's
//! I/O state and the checkpoint folders' sizes; the streaming Megatron log parser and the
//! TensorBoard reader are `goldgate_core::observe` (judging reads them too).

pub(crate) mod ckpt_folders;
pub(crate) mod node;
pub mod probe;
pub mod sample;
