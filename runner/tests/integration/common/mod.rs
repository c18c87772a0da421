//! Support shared by the integration tests: each test file that needs it says `mod common;`.

// Each test file is its own crate and uses only some of these helpers.
#![allow(dead_code)]

pub mod cli;
pub mod corpus;
pub mod prereq;
pub mod redact;
pub mod results;
