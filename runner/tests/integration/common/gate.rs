//! The rules of tests that bless one real job and gate an unchanged rerun of it.
//!
//! Such a gate also judges goldgate's own per-save wall time, `checkpoint-blocking-time`,
//! whenever the golden has it. A fake-trainer save of 2 MiB takes 2–30 ms, most of it the
//! `fsync`, which waits behind every other writer on the disk: with three copies of the suite
//! at once on the 2-core machine one took 92 ms against a golden of 20 ms, beyond the built-in
//! 10 % + 50 ms, and the unchanged rerun failed. Tests whose subject is something else (losses,
//! the resumed half, memory read from TensorBoard) gate with these rules, so the load cannot
//! fail them; the gate on save time is tested on records whose times are given
//! (`two_sample_e2e`, `compare_e2e`) and with a delay planted far above the noise (`ab_e2e`:
//! 0.6 s per save).

/// `rules:` for a `goldgate.yaml`: save time judged with a tolerance of 60 s, which no load
/// on a 2 MiB save reaches. Every other rule stays built in.
pub const UNTIMED_SAVES: &str = "rules:\n  checkpoint-blocking-time:\n    atol: 60\n";

/// A `goldgate.yaml` with the built-in default platform (`dev_cpu`, one GPU slot) and
/// [`UNTIMED_SAVES`].
pub fn untimed_config() -> String {
    format!(
        "default_platform: dev_cpu\nplatforms:\n  dev_cpu:\n    gpus_per_node: 1\n{UNTIMED_SAVES}"
    )
}
