//! Stage "observe": the GPU / host memory samplers, the in-process allocator probe, the node's
//! I/O state and the checkpoint folders' sizes: what only a running job shows. The readers of
//! what a job wrote, which judging reads too, are the base's: the log stream and parser
//! (`goldgate_core::log`) and the TensorBoard reader (`goldgate_core::tensorboard`).

pub(crate) mod ckpt_folders;
pub(crate) mod node;
pub mod probe;
pub mod sample;
