//! goldgate's recording crate: `plan → launch → observe → metrics`, and `run`, which
//! orchestrates them (the scheduler, the local and the Slurm executor). The base modules
//! (`case`, `config`, `fsio`, …) are `goldgate-core`'s, used here under their old paths.

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod launch;
pub mod metrics;
pub mod observe;
pub mod plan;
pub mod run;

use goldgate_core::{
    case, config, duration, fsio, golden, hash, metric_names, printable, redact, rules,
};
