//! goldgate's judging crate: `compare → report`, the sticky PR comment (`github`) and the
//! history store. It reads records and golden files through `goldgate-core` and builds without
//! the recording crate (no NVML, no rustix, no launch code; a test checks its dependencies).

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod compare;
pub mod github;
pub mod history;
pub mod report;

use goldgate_core::{
    case, config, exit, fsio, golden, hash, metric_names, metrics, observe, rules,
};
