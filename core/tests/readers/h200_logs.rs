//! The log parser on real Megatron logs: four runs of `megatron-core` 0.19.2 on an H200
//! (torchrun with `--tee 3`, so every line carries `[default0]:`), sync, async (mcore),
//! async through /dev/shm (nvrx) and `--empty-unused-memory-level 2`. The expected figures are
//! read off the logs' own timer and checkpoint lines.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use goldgate_core::log::summarize_file;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/h200")
        .join(name)
}

#[test]
fn sync_log_has_every_step_and_the_timer_blocking_time_per_save() {
    let s = summarize_file(&fixture("sync.log")).unwrap();
    assert_eq!(s.ranks, vec![0]);
    assert_eq!(
        (s.first_step, s.last_step, s.train_iters),
        (Some(1), Some(30), Some(30))
    );
    assert_eq!(s.metrics["lm loss"].len(), 30);
    assert!((s.metrics["lm loss"].get(30).unwrap() - 3.672763).abs() < 1e-9);
    // `elapsed time per iteration (ms): 222.5` at step 30, in seconds.
    assert!((s.metrics["iteration-time"].get(30).unwrap() - 0.2225).abs() < 1e-12);
    let saves: Vec<_> = s
        .checkpoints
        .iter()
        .map(|c| (c.iteration, c.blocking_max_s))
        .collect();
    assert_eq!(
        saves,
        vec![
            (10, Some(14.84221)),
            (20, Some(2.80021)),
            (30, Some(2.07113))
        ]
    );
    assert!(s.checkpoints.iter().all(|c| !c.is_async && c.completed));
    assert!(s.failures.is_empty());
}

#[test]
fn async_logs_give_latency_from_scheduled_to_saved() {
    for (log, first_latency) in [
        ("async_mcore.log", 1.839453),
        ("async_nvrx_shm.log", 2.352455),
    ] {
        let s = summarize_file(&fixture(log)).unwrap();
        assert_eq!(s.checkpoints.len(), 3, "{log}");
        assert!(
            s.checkpoints.iter().all(|c| c.is_async && c.completed),
            "{log}"
        );
        let latency = s.checkpoints[0].async_latency_s.unwrap();
        assert!((latency - first_latency).abs() < 1e-6, "{log}: {latency}");
    }
}

#[test]
fn memory_reports_show_the_cache_emptied_before_each_save() {
    let s = summarize_file(&fixture("sync.log")).unwrap();
    // Megatron 0.19.2 calls torch.cuda.empty_cache() before save_checkpoint(): by the
    // `(before save_checkpoint ...)` report, reserved (2894 MB) is far below its peak (12856 MB).
    let before = s.checkpoints[1].memory_before.unwrap();
    assert_eq!(before.reserved, 2894.0);
    assert_eq!(before.max_reserved, 12856.0);
    assert_eq!(s.checkpoints[1].memory_after.unwrap().allocated, 2614.2);
}
