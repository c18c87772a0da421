//! goldgate's recording crate: `plan → launch → observe → metrics`, and `run`, which
//! orchestrates them (the scheduler, the local and the Slurm executor).
//!
//! - [`plan`]: test cases and variants become validated [`plan::Job`]s;
//! - [`launch`]: a job's process (argv, environment, signals, process group, settling);
//! - [`observe`]: what only a running job shows — the GPU and host memory samplers, the
//!   in-process allocator probe, the node's I/O state, the checkpoint folders' sizes;
//! - [`metrics`]: the pure builder of a job's `results.json` record from what was observed;
//! - [`run`]: the scheduler and the local and Slurm executors.
//!
//! The base it builds on is `goldgate_core`'s (cases, config, the log and TensorBoard readers,
//! record loading) and the record types are `goldgate_schema`'s; code names them there.

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod launch;
pub mod metrics;
pub mod observe;
pub mod plan;
pub mod run;
