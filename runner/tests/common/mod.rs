//! Support shared by the integration tests: each test file that needs it says `mod common;`.

pub mod corpus;
