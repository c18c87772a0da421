//! goldgate-core's readers on real files, as one test binary: the Megatron-LM corpus's cases
//! and golden files (`corpus`, skipped without the corpus, failing under `CI=true`; see
//! `goldgate_core::fixtures::corpus`), this repository's own cases and goldens, and the log parser on
//! real Megatron logs of an H200 (`h200_logs`, `core/tests/fixtures/h200/`). Run one module's
//! tests with `cargo test -p goldgate-core --test readers <module>::`.

mod corpus;
mod h200_logs;
