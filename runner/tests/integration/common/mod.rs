//! Support shared by the integration tests, compiled once in `main.rs`: a test module that
//! needs it says `use crate::common;`. What every crate's tests share (the prerequisite rule,
//! the corpus lookup) is `goldgate_core::fixtures`'s.

pub mod cli;
pub mod gate;
pub mod redact;
pub mod results;
pub mod shm;
pub mod steps;
