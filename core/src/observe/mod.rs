//! Stage "observe", its readers: the streaming Megatron log parser and the TensorBoard event
//! files a job writes (what judging reads too). The samplers, the probe and the node's I/O
//! state are `goldgate-record`'s `observe`.

pub mod log;
pub mod tensorboard;
