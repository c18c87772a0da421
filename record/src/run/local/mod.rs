//! Stage "run": the local executor — each attempt's runs as process groups on this machine.

mod executor;
mod sampling;
mod scripts;

pub use executor::LocalExecutor;
pub(crate) use sampling::own_cpu_seconds;
