//! `goldgate extract` and the log parser on fixture logs (runner/tests/fixtures/logs): table
//! and JSON snapshots per fixture, checkpoint timing, and the edge cases a live pipe brings
//! (invalid UTF-8, CRLF, a 3 MB line, a cut last line, an empty file).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use goldgate_core::log::{FailureKind, LogSummary, MAX_LINE, summarize_file, summarize_reader};

use crate::common;

use common::cli;

/// Every fixture log. Adding a log (e.g. a real H200 run) is one line here plus its snapshots.
const FIXTURES: &[&str] = &[
    "new_sync.log",
    "old_format.log",
    "torchrun_async.log",
    "failure_oom.log",
    "crlf_invalid_utf8.log",
    "empty.log",
    "crash_demo.log",
];

fn fixture(name: &str) -> String {
    format!("tests/fixtures/logs/{name}")
}

fn extract(args: &[&str]) -> (i32, String, String) {
    let out = cli::goldgate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("extract")
        .args(args)
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap(),
        text(out.stdout),
        text(out.stderr),
    )
}

fn summary(name: &str) -> LogSummary {
    summarize_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture(name))).unwrap()
}

#[test]
fn table_and_json_for_every_fixture() {
    for name in FIXTURES {
        let stem = name.trim_end_matches(".log");
        let (code, table, err) = extract(&[&fixture(name)]);
        // Only the empty log has no iteration lines, and says so.
        let warning = match *name {
            "empty.log" => {
                "warning: tests/fixtures/logs/empty.log: no iteration lines \
                            (`iteration N/M | ...`) in 0 line(s): no per-step metrics\n"
            }
            _ => "",
        };
        assert_eq!((code, err.as_str()), (0, warning), "{name}");
        insta::assert_snapshot!(format!("table_{stem}"), table);
        let (code, json, _) = extract(&["--format", "json", &fixture(name)]);
        assert_eq!(code, 0, "{name}");
        insta::assert_snapshot!(format!("json_{stem}"), json);
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["schema_version"], 1, "{name}");
        let back: LogSummary =
            serde_json::from_value(parsed["logs"][0]["summary"].clone()).unwrap();
        assert_eq!(back, summary(name), "{name}: json round trip");
    }
}

#[test]
fn several_logs_in_one_table() {
    let (code, table, _) = extract(&[&fixture("old_format.log"), &fixture("empty.log")]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(table);
}

#[test]
fn a_missing_log_is_a_usage_error_naming_the_file() {
    let (code, out, err) = extract(&["tests/fixtures/logs/no-such.log"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.contains("cannot open log tests/fixtures/logs/no-such.log"),
        "{err}"
    );
}

#[test]
fn golden_metrics_use_megatron_names_and_units() {
    let s = summary("new_sync.log");
    assert_eq!(s.metrics["lm loss"].len(), 12);
    assert!((s.metrics["iteration-time"][1] - 0.3219).abs() < 1e-12);
    assert_eq!(s.metrics["num-zeros"][12], 27866.0);
    assert_eq!(
        s.metrics["mem-allocated-bytes"][1],
        3496.66 * 1024.0 * 1024.0
    );
    assert_eq!(
        s.metrics["mem-max-allocated-bytes"][1],
        15991.74 * 1024.0 * 1024.0
    );
    assert_eq!(s.exit_iteration, Some(12));
    let s = summary("torchrun_async.log");
    // Two ranks report step 1: the larger value is kept.
    assert_eq!(
        s.metrics["mem-allocated-bytes"][1],
        5120.75 * 1024.0 * 1024.0
    );
    assert_eq!(s.metrics["throughput"][10], 412.5);
    assert!(s.metrics.contains_key("mtp_1 loss") && s.metrics.contains_key("load_balancing_loss"));
}

#[test]
fn checkpoint_saves_take_the_timer_that_follows_them() {
    let s = summary("new_sync.log");
    let ms = |v: Option<f64>| v.map(|v| (v * 1000.0).round() / 1000.0);
    let c: Vec<_> = s
        .checkpoints
        .iter()
        .map(|c| (c.iteration, ms(c.blocking_max_s), c.is_async, c.completed))
        .collect();
    assert_eq!(
        c,
        vec![
            (6, Some(3.492), false, true),
            (12, Some(3.498), false, true)
        ]
    );
    assert_eq!(ms(s.checkpoints[0].wall_s), Some(3.483));
    assert_eq!(
        s.checkpoints[0].memory_before.unwrap().max_allocated,
        15991.74
    );
    assert_eq!(
        s.checkpoints[0].memory_after.unwrap().max_allocated,
        16001.0
    );

    let s = summary("torchrun_async.log");
    let first = &s.checkpoints[0];
    assert!(first.is_async && first.completed);
    assert_eq!(
        (ms(first.blocking_min_s), ms(first.blocking_max_s)),
        (Some(4.19), Some(4.201))
    );
    assert!((first.async_latency_s.unwrap() - 3.401).abs() < 1e-9);
    assert_eq!(s.overlapping_saves, 1);

    let s = summary("old_format.log");
    assert_eq!(ms(s.checkpoints[1].blocking_max_s), Some(1.208));
    assert_eq!(
        (s.checkpoints[1].saving_at, s.checkpoints[1].wall_s),
        (None, None)
    );
}

#[test]
fn failures_are_classified_with_retry_flag() {
    let s = summary("failure_oom.log");
    assert_eq!(s.failure_counts[&FailureKind::Oom], 2);
    assert_eq!(s.failure_counts[&FailureKind::NcclTimeout], 1);
    assert!(!s.failures[0].flaky && s.failures[2].flaky);
    assert_eq!(s.failures[0].rank, Some(0));
    // The cut last line (no newline) still counts.
    assert!(s.failures[2].line.ends_with("asynchronous nat"));
}

#[test]
fn edge_cases_never_panic() {
    let iteration = " iteration        7/      10 | lm loss: 2.5E+00 | num zeros: 3.0 |";
    let cases: Vec<(&str, Vec<u8>, u64, u64)> = vec![
        ("empty", b"".to_vec(), 0, 0),
        ("only newlines", b"\n\n\r\n".to_vec(), 3, 0),
        ("crlf", format!("{iteration}\r\n").into_bytes(), 1, 1),
        ("cut last line", iteration.as_bytes()[..40].to_vec(), 1, 1),
        (
            "invalid utf-8",
            [b"\xff\xfe\xfd\n", iteration.as_bytes()].concat(),
            2,
            1,
        ),
        (
            "3 MB line",
            [
                vec![b'|'; 3 << 20],
                b"\n".to_vec(),
                iteration.as_bytes().to_vec(),
            ]
            .concat(),
            2,
            1,
        ),
        (
            "3 MB iteration line",
            format!("{iteration}{}", " x: 1 |".repeat(450_000)).into_bytes(),
            1,
            1,
        ),
    ];
    for (what, data, lines, steps) in cases {
        let s = summarize_reader(data.as_slice(), Path::new(what)).unwrap();
        assert_eq!((s.lines, s.steps_seen), (lines, steps), "{what}");
        if steps == 1 {
            assert_eq!(s.last_step, Some(7), "{what}");
        }
    }
    let long = summarize_reader(
        [vec![b'a'; MAX_LINE * 3], b"\n".to_vec()]
            .concat()
            .as_slice(),
        Path::new("x"),
    )
    .unwrap();
    assert_eq!(long.long_lines, 1);
}

/// A progress line rewritten with lone `\r`s gives every step, colour codes do
/// not hide a line, milliseconds become seconds in decimal, and a log without iteration lines
/// says so.
#[test]
fn carriage_returns_colours_and_decimal_units() {
    let line = |i: u64, ms: &str| {
        format!(
            " [2026-11-29 20:15:0{i}.000000] iteration {i:>8}/      12 | consumed samples: {:>12} | \
             elapsed time per iteration (ms): {ms} | learning rate: 1.000000E-05 | global batch \
             size:    32 | lm loss: 1.000000E+01 | loss scale: 1.0 | grad norm: 2.220 | num \
             zeros: 27855.0 | params norm: 274.879 | number of skipped iterations:   0 | number \
             of nan iterations:   0 |",
            i * 32
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("progress.log");
    let progress: Vec<String> = (1..=5).map(|i| line(i, "318.1")).collect();
    let text = format!(
        "{}\n\x1b[32m{}\x1b[0m\nsaving checkpoint at iteration       6 to /x in torch_dist format\n\
         INFO:megatron.core.timers:(min, max) time across ranks (ms):\n    save-checkpoint ................................: (4068.24, 4068.24)\n",
        progress.join("\r"),
        line(6, "4068.24")
    );
    std::fs::write(&log, text).unwrap();
    let s = summarize_file(&log).unwrap();
    let it = &s.metrics["iteration-time"];
    let steps: Vec<(u64, f64)> = it.iter().collect();
    assert_eq!(
        steps,
        [
            (1, 0.3181),
            (2, 0.3181),
            (3, 0.3181),
            (4, 0.3181),
            (5, 0.3181),
            (6, 4.06824)
        ]
    );
    assert_eq!(s.checkpoints[0].blocking_max_s, Some(4.06824));
    let (code, json, err) = extract(&["--format", "json", log.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(
        json.contains("4.06824") && json.contains("0.3181"),
        "{json}"
    );
    assert!(!json.contains("4.068239999") && !json.contains("0.31810000000000005"));

    std::fs::write(&log, "\x1b[31mTraceback\x1b[0m\nsomething else\n").unwrap();
    let (code, _, err) = extract(&[log.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        err.contains("no iteration lines (`iteration N/M | ...`) in 2 line(s)"),
        "{err}"
    );
}

#[test]
fn a_crash_that_no_marker_names_is_a_failure_as_run_reports_it() {
    // The crash demo's console.log: iterations, then a traceback ending in `RuntimeError`.
    let (code, table, _) = extract(&[&fixture("crash_demo.log")]);
    assert_eq!(code, 0);
    assert!(
        table.contains(
            "  failures         crash: RuntimeError: fake-trainer planted crash at iteration 5 \
             (--crash-at-step)\n"
        ),
        "{table}"
    );
    let (_, json, _) = extract(&["--format", "json", &fixture("crash_demo.log")]);
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        parsed["logs"][0]["exception"],
        "RuntimeError: fake-trainer planted crash at iteration 5 (--crash-at-step)"
    );
    // A log that ends well has no exception key at all.
    let (_, json, _) = extract(&["--format", "json", &fixture("new_sync.log")]);
    assert!(!json.contains("\"exception\""), "{json}");
}

/// `extract --tensorboard`: a folder's files and a row per tag (tensor-form tags too).
#[test]
fn tensorboard_folder_table() {
    let (code, stdout, stderr) =
        extract(&["--tensorboard", "../core/tests/fixtures/tensorboard/tensor"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    insta::assert_snapshot!(stdout);
    let (code, json, _) = extract(&[
        "--tensorboard",
        "../core/tests/fixtures/tensorboard/tensor",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["tensorboard"][0]["scalars"]["lm loss"]["4"], 1.0);
    let total = doc["tensorboard"][0]["scalars"]["total loss"]
        .as_object()
        .unwrap();
    assert_eq!(total.len(), 20);
}

/// CRC-32C (Castagnoli), masked as TFRecord frames it.
fn masked_crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    let crc = !crc;
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// One TFRecord: length, its masked CRC, the data, the data's masked CRC.
fn tf_record(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    out
}

/// A protobuf varint.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited protobuf field.
fn bytes_field(field: u64, data: &[u8], out: &mut Vec<u8>) {
    varint((field << 3) | 2, out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

/// An `Event` at `step` whose summary holds `tag` = `value` and, when `bulk` is not empty, a
/// value TensorBoard keeps but a scalar reader skips (an old-style histogram's bytes).
fn event(step: u64, tag: &str, value: f32, bulk: &[u8]) -> Vec<u8> {
    let mut scalar = Vec::new();
    bytes_field(1, tag.as_bytes(), &mut scalar);
    scalar.push(0x15); // simple_value, a float
    scalar.extend_from_slice(&value.to_le_bytes());
    let mut summary = Vec::new();
    bytes_field(1, &scalar, &mut summary);
    if !bulk.is_empty() {
        let mut other = Vec::new();
        bytes_field(1, b"weights", &mut other);
        bytes_field(3, bulk, &mut other);
        bytes_field(1, &other, &mut summary);
    }
    let mut e = vec![0x09]; // wall_time, a double
    e.extend_from_slice(&1.7e9f64.to_le_bytes());
    e.push(0x10); // step
    varint(step, &mut e);
    bytes_field(5, &summary, &mut e);
    e
}

/// `extract --tensorboard` streams a file: on 32 MiB of events (a 128 KiB histogram beside each
/// step's scalar) goldgate's peak RSS stays under 24 MiB (15 MiB measured; a reader that held
/// the file would need 32 MiB for its bytes alone), and a colour code in a tag name is printed
/// as its escape, not sent to the terminal.
#[test]
fn a_big_event_file_is_read_in_bounded_memory_and_tags_print_inert() {
    const STEPS: u64 = 256;
    const BOUND: u64 = 24 << 20;
    let dir = tempfile::tempdir().unwrap();
    let bulk = vec![7u8; 128 << 10];
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(dir.path().join("events.out.tfevents.1.host")).unwrap(),
    );
    let mut version = vec![0x09];
    version.extend_from_slice(&1.7e9f64.to_le_bytes());
    bytes_field(3, b"brain.Event:2", &mut version);
    std::io::Write::write_all(&mut file, &tf_record(&version)).unwrap();
    for step in 1..=STEPS {
        let e = event(step, "\x1b[31mlm loss\x1b[0m", step as f32, &bulk);
        std::io::Write::write_all(&mut file, &tf_record(&e)).unwrap();
    }
    drop(file);
    let child = cli::goldgate()
        .args(["extract", "--tensorboard"])
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let peak = std::thread::spawn(move || {
        let mut peak = 0u64;
        while let Ok(t) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let Some(kb) = t
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            else {
                break; // a zombie: no memory left to read
            };
            peak = peak.max(kb << 10);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        peak
    });
    let o = child.wait_with_output().unwrap();
    let peak = peak.join().unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("\\u{1b}[31mlm loss\\u{1b}[0m"),
        "the tag, escaped: {stdout}"
    );
    assert!(!stdout.contains('\x1b'), "a raw escape: {stdout:?}");
    assert!(
        stdout.contains(&format!("{STEPS} step(s)")),
        "every step read: {stdout}"
    );
    let size = std::fs::metadata(dir.path().join("events.out.tfevents.1.host"))
        .unwrap()
        .len();
    assert!(peak > 0, "no memory sample of goldgate");
    assert!(
        peak < BOUND,
        "goldgate's peak RSS was {} MiB reading a {} MiB event file (bound {} MiB)",
        peak >> 20,
        size >> 20,
        BOUND >> 20
    );
}
