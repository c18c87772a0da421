//! Stage "compare": writing golden files — `bless` from recorded jobs (`files`) and Megatron's
//! golden file from a TensorBoard folder (`tensorboard`, `bless --tensorboard`).

mod files;
pub mod tensorboard;

pub use files::{BlessFile, plan, render_diff, write};
