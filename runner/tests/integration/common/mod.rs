//! Support shared by the integration tests, compiled once in `main.rs`: a test module that
//! needs it says `use crate::common;`.

pub mod cli;
pub mod corpus;
pub mod gate;
pub mod prereq;
pub mod redact;
pub mod results;
pub mod shm;
pub mod steps;
