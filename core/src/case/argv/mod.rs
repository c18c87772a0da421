//! Stage "case": MODEL_ARGS → argv words, by the semantics of Megatron's `_run_training.sh`.

mod eval;
mod line;
mod xargs;

pub use eval::{EvalError, Expansion, eval_words};
pub use line::{ArgvError, Lookups, ModelArgv, model_argv};
