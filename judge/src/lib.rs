//! goldgate's judging crate: what happens to a run's records after it ran.
//!
//! - [`compare`]: a run's records against their golden values under the metric rules, the A/B
//!   test, `bless` and `calibrate`;
//! - [`report`]: pure renderers of a comparison (terminal, markdown, JUnit, JSON, the site);
//! - [`github`]: the sticky PR comment;
//! - [`history`]: the history store and its trends.
//!
//! It reads records and golden files through `goldgate_core` and builds without the recording
//! crate (no NVML, no rustix, no launch code; a test checks its dependencies). The comparison
//! types are `goldgate_schema`'s.

// A `pub` item no other crate can reach is `pub(crate)`: `pub` says "used from outside".
#![warn(unreachable_pub)]

pub mod compare;
pub mod github;
pub mod history;
pub mod report;
