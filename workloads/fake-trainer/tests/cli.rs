//! End-to-end tests of the `fake-trainer` binary: every stdout line must be one of Megatron's formats
//! (megatron-format.md §4), checkpoints must be real files of the asked size, async saves must be
//! scheduled before they are saved, planted failures must exit as documented, and SIGTERM handling
//! must really be what the flags say. (These tests also make `cargo test --workspace` build
//! `target/debug/fake-trainer`, which goldgate's own integration tests run.)

// Tests may unwrap (common.md); clippy's allow-unwrap-in-tests does not cover helper functions here.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use regex::Regex;

const BIN: &str = env!("CARGO_BIN_EXE_fake-trainer");
const TS: &str = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\] ";

/// Small, fast knobs so each run takes well under a second.
const SMALL: &[&str] = &["--model-mb", "8", "--activation-mb", "2", "--step-ms", "2"];

fn fake(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(SMALL)
        .args(args)
        .env_remove("PYTORCH_CUDA_ALLOC_CONF");
    cmd
}

fn run(args: &[&str]) -> Output {
    fake(args).output().unwrap()
}

fn stdout(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// One kind of stdout line, with its exact format.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Iteration { n: u64, ms: f64, loss: String },
    Memory { name: String, reserved: f64 },
    TimerHeader,
    TimerRow { ms: f64 },
    Saving(u64),
    Saved(u64),
    Scheduled(u64),
    Warning,
    Load,
    Done,
    Exiting(u64),
    Info,
}

struct Formats {
    new_format: bool,
    iteration: Regex,
    memory: Regex,
    timer_header: Regex,
    timer_row: Regex,
    saving: Regex,
    saved: Regex,
    scheduled: Regex,
    load: Regex,
}

impl Formats {
    fn new(new_format: bool) -> Formats {
        let (ts, info, shards) = if new_format {
            (
                TS,
                "INFO:megatron.core.timers:",
                "t 1/1, gtp_remat 1/1, p 1/1",
            )
        } else {
            ("", "", "t 1/1, p 1/1")
        };
        let re = |s: String| Regex::new(&s).unwrap();
        Formats {
            new_format,
            iteration: re(format!(
                r"^ {ts}iteration +(\d+)/ +(\d+) \| consumed samples: +(\d+) \| elapsed time per iteration \(ms\): (\d+\.\d) \| learning rate: \d\.\d{{6}}E[+-]\d\d \| global batch size: +32 \| lm loss: (\d\.\d{{6}}E[+-]\d\d) \| loss scale: 1\.0 \| grad norm: \d+\.\d{{3}} \| num zeros: \d+\.0 \| params norm: \d+\.\d{{3}} \| number of skipped iterations: +0 \| number of nan iterations: +0 \|$"
            )),
            memory: re(r"^\[Rank 0\] \((after \d+ iterations|before save_checkpoint for iteration \d+|after save_checkpoint for iteration \d+)\) memory \(MB\) \| allocated: \d+\.\d\d \| max allocated: \d+\.\d\d \| reserved: (\d+\.\d\d) \| max reserved: \d+\.\d\d$".into()),
            timer_header: re(format!(r"^{info}\(min, max\) time across ranks \(ms\):$")),
            timer_row: re(r"^    save-checkpoint \.{32}: \((\d+\.\d\d), (\d+\.\d\d)\)$".into()),
            saving: re(format!(r"^{ts}saving checkpoint at iteration +(\d+) to \S+ in torch_dist format$")),
            saved: re(format!(
                r"^  {ts}successfully saved checkpoint from iteration +(\d+) to \S+ \[ {shards} \]$"
            )),
            load: re(format!(
                r"^( {ts}loading checkpoint from \S+ at iteration \d+|  {ts}successfully loaded checkpoint from \S+ \[ t 1/1, p 1/1 \] at iteration \d+|WARNING: could not find the metadata file \S+|    will not load any checkpoints and will start from random)$"
            )),
            scheduled: re(format!(r"^  {ts}scheduled an async checkpoint save at iteration +(\d+) to \S+$")),
        }
    }

    fn classify(&self, line: &str) -> Line {
        let num = |re: &Regex, i: usize| re.captures(line).map(|c| c[i].parse::<u64>().unwrap());
        if let Some(c) = self.iteration.captures(line) {
            return Line::Iteration {
                n: c[1].parse().unwrap(),
                ms: c[4].parse().unwrap(),
                loss: c[5].into(),
            };
        }
        if let Some(c) = self.memory.captures(line) {
            return Line::Memory {
                name: c[1].into(),
                reserved: c[2].parse().unwrap(),
            };
        }
        if let Some(c) = self.timer_row.captures(line) {
            assert_eq!(c[1], c[2], "one rank: min == max");
            return Line::TimerRow {
                ms: c[1].parse().unwrap(),
            };
        }
        let done = if self.new_format {
            r"^\[after training is done\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d $".to_string()
        } else {
            r"^\[after training is done\] datetime: .+ $".into()
        };
        match () {
            () if self.timer_header.is_match(line) => Line::TimerHeader,
            () if self.load.is_match(line) => Line::Load,
            () if self.saving.is_match(line) => Line::Saving(num(&self.saving, 1).unwrap()),
            () if self.saved.is_match(line) => Line::Saved(num(&self.saved, 1).unwrap()),
            () if self.scheduled.is_match(line) => {
                Line::Scheduled(num(&self.scheduled, 1).unwrap())
            }
            () if line == "WARNING: Starting a checkpoint save before previous has finished." => {
                Line::Warning
            }
            () if Regex::new(&done).unwrap().is_match(line) => Line::Done,
            () if line.starts_with("exiting program at iteration ") => {
                Line::Exiting(line.rsplit(' ').next().unwrap().parse().unwrap())
            }
            () if line.starts_with("fake-trainer: ") => Line::Info,
            () => panic!("line in no Megatron format: {line:?}"),
        }
    }

    fn parse(&self, out: &Output) -> Vec<Line> {
        stdout(out).iter().map(|l| self.classify(l)).collect()
    }
}

fn iterations(lines: &[Line]) -> Vec<u64> {
    lines
        .iter()
        .filter_map(|l| {
            if let Line::Iteration { n, .. } = l {
                Some(*n)
            } else {
                None
            }
        })
        .collect()
}

fn shard(dir: &Path, iteration: u64) -> u64 {
    std::fs::metadata(dir.join(format!("iter_{iteration:07}/__0_0.distcp")))
        .unwrap()
        .len()
}

#[test]
fn sync_run_prints_megatron_lines_and_writes_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("ckpt");
    let out = run(&[
        "--train-iters",
        "7",
        "--save",
        save.to_str().unwrap(),
        "--save-interval",
        "3",
        "--ckpt-mb",
        "2",
        "--bf16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = Formats::new(true).parse(&out);
    assert_eq!(iterations(&lines), [1, 2, 3, 4, 5, 6, 7]);
    for l in &lines {
        if let Line::Iteration { ms, .. } = l {
            assert!(*ms >= 2.0, "iteration time {ms} ms is below --step-ms 2");
        }
    }
    // Saves at 3 and 6 plus Megatron's final save at 7, each in Megatron's order.
    for it in [3, 6, 7] {
        let at = lines.iter().position(|l| *l == Line::Saving(it)).unwrap();
        assert!(
            matches!(&lines[at - 1], Line::Memory { name, .. } if *name == format!("before save_checkpoint for iteration {it}"))
        );
        assert_eq!(lines[at + 1], Line::Saved(it));
        assert!(
            matches!(&lines[at + 2], Line::Memory { name, .. } if *name == format!("after save_checkpoint for iteration {it}"))
        );
        assert_eq!(lines[at + 3], Line::TimerHeader);
        assert!(matches!(lines[at + 4], Line::TimerRow { ms } if ms > 0.0));
        assert_eq!(shard(&save, it), 2 << 20);
    }
    assert_eq!(
        std::fs::read_to_string(save.join("latest_checkpointed_iteration.txt")).unwrap(),
        "7"
    );
    assert_eq!(&lines[lines.len() - 2..], [Line::Done, Line::Exiting(7)]);
    assert!(
        stderr(&out).contains("ignoring unknown flags: --bf16"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn old_format_has_no_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    let out = run(&[
        "--old-format",
        "--train-iters",
        "2",
        "--save",
        save,
        "--save-interval",
        "2",
        "--ckpt-mb",
        "1",
    ]);
    assert!(out.status.success());
    let lines = Formats::new(false).parse(&out);
    assert_eq!(iterations(&lines), [1, 2]);
    assert!(lines.contains(&Line::Saved(2)));
    assert!(
        !stdout(&out)
            .iter()
            .any(|l| l.contains("gtp_remat") || l.contains("INFO:"))
    );
}

#[test]
fn async_saves_are_scheduled_before_they_are_saved() {
    for shm in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().to_str().unwrap();
        let mut args = vec![
            "--train-iters",
            "6",
            "--save",
            save,
            "--save-interval",
            "2",
            "--ckpt-mb",
            "3",
        ];
        args.extend([
            "--async-save",
            "--use-persistent-ckpt-worker",
            "--async-strategy",
            "nvrx",
        ]);
        if shm {
            args.push("--async-ckpt-use-cpu-shm");
        }
        let child = fake(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let lines = Formats::new(true).parse(&out);
        for it in [2, 4, 6] {
            let scheduled = lines
                .iter()
                .position(|l| *l == Line::Scheduled(it))
                .unwrap();
            let saved = lines.iter().position(|l| *l == Line::Saved(it)).unwrap();
            assert!(scheduled < saved, "shm={shm} iteration {it}");
            assert_eq!(lines[scheduled - 1], Line::Saving(it));
            assert_eq!(shard(dir.path(), it), 3 << 20);
        }
        let done = lines.iter().position(|l| *l == Line::Done).unwrap();
        assert!(
            lines[..done].contains(&Line::Saved(6)),
            "the last async save completes before the end"
        );
        assert!(
            shm_files(pid).is_empty(),
            "staging files are removed after the write"
        );
    }
}

#[test]
fn async_save_without_persistent_worker_stays_sync_as_in_megatron() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "--train-iters",
        "2",
        "--save",
        dir.path().to_str().unwrap(),
        "--save-interval",
        "1",
        "--ckpt-mb",
        "1",
        "--async-save",
    ]);
    assert!(out.status.success());
    let lines = Formats::new(true).parse(&out);
    assert!(!lines.iter().any(|l| matches!(l, Line::Scheduled(_))));
    assert!(lines.contains(&Line::Saved(2)));
    assert!(stderr(&out).contains("--async-save needs --use-persistent-ckpt-worker"));
}

fn shm_files(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("fake-trainer-{pid}-");
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[test]
fn shm_staging_holds_the_checkpoint_in_dev_shm_while_the_worker_writes() {
    // Slow storage keeps the worker busy, so the staged copy must sit in /dev/shm when `scheduled`
    // is printed.
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    let mut child = fake(&[
        "--train-iters",
        "2",
        "--save",
        save,
        "--save-interval",
        "1",
        "--ckpt-mb",
        "4",
    ])
    .args([
        "--async-save",
        "--use-persistent-ckpt-worker",
        "--async-ckpt-use-cpu-shm",
        "--slow-write-ms",
        "60000",
    ])
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines
            .map_while(Result::ok)
            .any(|l| l.contains("scheduled an async checkpoint save at iteration       1"))
    );
    let staged = shm_files(pid);
    let sizes: Vec<u64> = staged
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    for f in &staged {
        std::fs::remove_file(f).unwrap();
    }
    assert_eq!(staged.len(), 1, "{staged:?}");
    assert!(staged[0].ends_with(format!("fake-trainer-{pid}-staging")));
    assert_eq!(sizes, [4 << 20], "the whole checkpoint is staged");
}

#[test]
fn slow_write_delays_only_the_async_completion() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    let args = [
        "--train-iters",
        "1",
        "--save",
        save,
        "--save-interval",
        "1",
        "--ckpt-mb",
        "1",
        "--slow-write-ms",
        "300",
    ];
    let timer = |extra: &[&str]| -> f64 {
        let out = fake(&args).args(extra).output().unwrap();
        let lines = Formats::new(true).parse(&out);
        lines
            .iter()
            .find_map(|l| {
                if let Line::TimerRow { ms } = l {
                    Some(*ms)
                } else {
                    None
                }
            })
            .unwrap()
    };
    assert!(timer(&[]) >= 300.0, "sync: the write blocks");
    assert!(
        timer(&["--async-save", "--use-persistent-ckpt-worker"]) < 300.0,
        "async: it does not"
    );
}

#[test]
fn the_seed_fixes_the_loss_curve() {
    let losses = |seed: &str| -> Vec<String> {
        let out = run(&["--train-iters", "5", "--seed", seed]);
        let lines = Formats::new(true).parse(&out);
        lines
            .into_iter()
            .filter_map(|l| {
                if let Line::Iteration { loss, .. } = l {
                    Some(loss)
                } else {
                    None
                }
            })
            .collect()
    };
    assert_eq!(losses("7"), losses("7"));
    assert_ne!(losses("7"), losses("8"));
}

#[test]
fn empty_unused_memory_level_releases_cached_activations() {
    let reserved = |level: &str| -> f64 {
        let out = run(&[
            "--train-iters",
            "2",
            "--log-memory-interval",
            "1",
            "--empty-unused-memory-level",
            level,
        ]);
        let lines = Formats::new(true).parse(&out);
        lines
            .iter()
            .find_map(|l| match l {
                Line::Memory { name, reserved } if name == "after 2 iterations" => Some(*reserved),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(reserved("0"), 10.0, "model 8 MB + cached activations 2 MB");
    assert_eq!(reserved("2"), 8.0, "only the model");
}

#[test]
fn allocator_config_is_echoed() {
    let out = fake(&["--train-iters", "1"])
        .env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains(
            &"fake-trainer: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True".to_string()
        )
    );
}

#[test]
fn planted_failures_exit_1_with_megatron_markers() {
    for (flag, marker) in [
        (
            "--crash-at-step",
            "RuntimeError: fake-trainer planted crash at iteration 3",
        ),
        (
            "--oom-at-step",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB",
        ),
        ("--nan-at-step", "found NaN in"),
    ] {
        let out = run(&["--train-iters", "10", flag, "3"]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = stderr(&out);
        assert!(
            err.starts_with("Traceback (most recent call last):"),
            "{flag}: {err}"
        );
        assert!(err.contains(marker), "{flag}: {err}");
        assert_eq!(
            iterations(&Formats::new(true).parse(&out)),
            [1, 2],
            "{flag}"
        );
    }
}

#[test]
fn bad_flags_exit_2_with_a_clear_message() {
    for (args, msg) in [
        (
            &["--train-iters", "x"][..],
            "fake-trainer: error: invalid value 'x' for --train-iters: expected a non-negative integer",
        ),
        (&["--save"][..], "fake-trainer: error: --save needs a value"),
        (
            &["--async-strategy", "zip"][..],
            "fake-trainer: error: invalid value 'zip' for --async-strategy: expected nvrx or mcore",
        ),
        (
            &["--hold-at-step", "3"][..],
            "fake-trainer: error: --hold-at-step needs --hold-file",
        ),
        (
            &["--hold-file", "/tmp/x"][..],
            "fake-trainer: error: --hold-file needs --hold-at-step",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).starts_with(msg), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_held_step_waits_until_its_file_is_removed_then_training_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let hold = dir.path().join("hold");
    std::fs::write(&hold, "").unwrap();
    let hold_arg = hold.to_str().unwrap();
    let mut child = fake(&[
        "--train-iters",
        "6",
        "--hold-at-step",
        "3",
        "--hold-file",
        hold_arg,
    ])
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let formats = Formats::new(true);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Some(line) = lines.next().map(Result::unwrap) {
        let at_two = matches!(formats.classify(&line), Line::Iteration { n: 2, .. });
        seen.push(line);
        if at_two {
            break;
        }
    }
    // Held at iteration 3 for as long as the file exists, however long that is.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "it did not hold: {seen:?}"
    );
    std::fs::remove_file(&hold).unwrap();
    seen.extend(lines.map(Result::unwrap));
    assert!(child.wait().unwrap().success());
    let parsed: Vec<Line> = seen.iter().map(|l| formats.classify(l)).collect();
    assert_eq!(iterations(&parsed), [1, 2, 3, 4, 5, 6]);
}

#[test]
fn unwritable_save_dir_exits_1_naming_the_path() {
    let out = run(&[
        "--train-iters",
        "1",
        "--save",
        "/proc/fake-trainer-nope",
        "--save-interval",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("checkpoint save failed: cannot create /proc/fake-trainer-nope/iter_0000001"),
        "{}",
        stderr(&out)
    );
}

fn kill(signal: &str, target: &str) {
    assert!(
        Command::new("kill")
            .args([signal, "--", target])
            .status()
            .unwrap()
            .success()
    );
}

/// Starts a long run, waits for its first iteration line (the signal disposition is set before
/// training starts), sends SIGTERM, and returns how it ended and how many iterations it logged.
fn sigterm_after_first_iteration(extra: &[&str]) -> (std::process::ExitStatus, usize) {
    let mut child = fake(&["--train-iters", "25", "--step-ms", "10"])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let is_iteration = |l: &str| l.contains("] iteration ");
    let mut count = 0;
    for line in lines.by_ref() {
        if is_iteration(&line.unwrap()) {
            count += 1;
            break;
        }
    }
    kill("-TERM", &child.id().to_string());
    count += lines
        .map_while(Result::ok)
        .filter(|l| is_iteration(l))
        .count();
    (child.wait().unwrap(), count)
}

#[test]
fn ignore_sigterm_really_ignores_it() {
    let (status, iterations) = sigterm_after_first_iteration(&["--ignore-sigterm"]);
    assert!(status.success(), "{status:?}");
    assert_eq!(iterations, 25, "training went on after SIGTERM");
}

#[test]
fn without_the_flag_sigterm_kills() {
    let (status, iterations) = sigterm_after_first_iteration(&[]);
    assert_eq!(status.signal(), Some(15), "SIGTERM");
    assert!(iterations < 25);
}

#[test]
fn fork_child_outlives_the_parent_until_the_group_is_killed() {
    let mut parent = fake(&["--train-iters", "1", "--fork-child"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = parent.id();
    let mut err = BufReader::new(parent.stderr.take().unwrap()).lines();
    let line = err.next().unwrap().unwrap();
    let pid: u32 = line
        .strip_prefix("fake-trainer: forked child pid ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    // Read stdout up to the last line rather than EOF: the child holds the pipe open.
    let out = BufReader::new(parent.stdout.take().unwrap());
    assert!(
        out.lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("exiting program at iteration 1"))
    );
    assert!(parent.wait().unwrap().success());
    // /proc/PID/stat after the command name: state, ppid, pgrp, ...
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    kill("-KILL", &format!("-{pgid}"));
    assert_eq!(
        fields[0], "S",
        "the child sleeps on after its parent exited: {stat}"
    );
    assert_eq!(fields[2], pgid.to_string(), "in the job's process group");
}

#[test]
fn hang_at_step_keeps_running() {
    let mut child = fake(&["--train-iters", "5", "--hang-at-step", "2"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    assert_eq!(
        err.next().unwrap().unwrap(),
        "fake-trainer: hanging at iteration 2 (--hang-at-step)"
    );
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(9));
}

/// MODEL_ARGS of a demo case as argv, by Megatron's rules for the plain `--flag: value` lines the
/// demo cases use (`true` → bare flag), with `${...}` placeholders substituted.
fn demo_argv(case: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../test_cases/demo/");
    let text = std::fs::read_to_string(format!("{path}{case}/model_config.yaml")).unwrap();
    let mut argv = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            inside = line == "MODEL_ARGS:";
            continue;
        }
        let Some((flag, value)) = line
            .trim()
            .split_once(": ")
            .filter(|_| inside && line.trim().starts_with("--"))
        else {
            continue;
        };
        argv.push(flag.to_string());
        if value != "true" {
            let value = vars.iter().fold(value.to_string(), |v, (k, r)| {
                v.replace(&format!("${{{k}}}"), r)
            });
            argv.push(value);
        }
    }
    argv
}

fn save_timers(lines: &[Line]) -> Vec<f64> {
    lines
        .iter()
        .filter_map(|l| {
            if let Line::TimerRow { ms } = l {
                Some(*ms)
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn ckpt_demo_case_runs_and_async_blocks_less_than_sync() {
    let dir = tempfile::tempdir().unwrap();
    let vars = [
        ("CHECKPOINT_SAVE_PATH", dir.path().to_str().unwrap()),
        ("TENSORBOARD_PATH", "/nonexistent"),
    ];
    let argv = demo_argv("ckpt-demo", &vars);
    assert!(
        argv.windows(2).any(|w| w == ["--save-interval", "8"]),
        "{argv:?}"
    );
    let demo = |extra: &[&str]| {
        let out = Command::new(BIN).args(&argv).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!stderr(&out).contains("error"), "{}", stderr(&out));
        Formats::new(true).parse(&out)
    };
    let sync = demo(&[]);
    assert_eq!(iterations(&sync), (1..=24).collect::<Vec<_>>());
    for it in [8, 16, 24] {
        assert!(sync.contains(&Line::Saved(it)));
        assert_eq!(shard(dir.path(), it), 64 << 20);
    }
    let shm = demo(&[
        "--async-save",
        "--use-persistent-ckpt-worker",
        "--async-strategy",
        "nvrx",
        "--async-ckpt-use-cpu-shm",
    ]);
    for it in [8, 16, 24] {
        assert!(shm.contains(&Line::Scheduled(it)) && shm.contains(&Line::Saved(it)));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (sync_ms, shm_ms) = (median(save_timers(&sync)), median(save_timers(&shm)));
    assert!(
        shm_ms < sync_ms,
        "async_shm blocks {shm_ms} ms, sync {sync_ms} ms"
    );
}

#[test]
fn crash_demo_case_fails_at_iteration_5() {
    let dir = tempfile::tempdir().unwrap();
    let argv = demo_argv(
        "crash-demo",
        &[("CHECKPOINT_SAVE_PATH", dir.path().to_str().unwrap())],
    );
    let out = Command::new(BIN).args(&argv).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(iterations(&Formats::new(true).parse(&out)), [1, 2, 3, 4]);
    assert!(stderr(&out).contains("RuntimeError: fake-trainer planted crash at iteration 5"));
}

fn losses_by_iteration(lines: &[Line]) -> Vec<(u64, String)> {
    let it = lines.iter();
    it.filter_map(|l| {
        if let Line::Iteration { n, loss, .. } = l {
            Some((*n, loss.clone()))
        } else {
            None
        }
    })
    .collect()
}

#[test]
fn load_resumes_after_the_tracked_iteration_with_the_same_losses() {
    // Megatron's ckpt-resume flow: train and save, point the tracker at the middle save, run again.
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    let args = [
        "--train-iters",
        "6",
        "--save",
        save,
        "--load",
        save,
        "--save-interval",
        "3",
        "--ckpt-mb",
        "1",
    ];
    let first = run(&args);
    assert!(out_ok(&first));
    let first = Formats::new(true).parse(&first);
    assert!(
        stdout(&run(&["--train-iters", "1", "--load", "/nonexistent"]))
            .iter()
            .any(|l| l.starts_with("WARNING: could not find the metadata file"))
    );
    std::fs::write(dir.path().join("latest_checkpointed_iteration.txt"), "3").unwrap();
    let second = run(&args);
    assert!(out_ok(&second));
    let text = stdout(&second);
    assert!(text.iter().any(|l| l.contains(&format!(
        "successfully loaded checkpoint from {save} [ t 1/1, p 1/1 ] at iteration 3"
    ))));
    assert!(
        text.iter()
            .any(|l| l.contains("iteration        4/       6 | consumed samples:          128 |"))
    );
    let second = losses_by_iteration(&Formats::new(true).parse(&second));
    assert_eq!(second, losses_by_iteration(&first)[3..]);
    std::fs::write(
        dir.path().join("latest_checkpointed_iteration.txt"),
        "garbage",
    )
    .unwrap();
    let bad = run(&args);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("checkpoint load failed: invalid tracker file"),
        "{}",
        stderr(&bad)
    );
}

fn out_ok(out: &Output) -> bool {
    out.status.success() || panic!("{}", stderr(out))
}

#[test]
fn exit_interval_stops_after_a_save() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().to_str().unwrap();
    let out = run(&[
        "--train-iters",
        "10",
        "--exit-interval",
        "4",
        "--save",
        save,
        "--save-interval",
        "3",
        "--ckpt-mb",
        "1",
    ]);
    assert!(out_ok(&out));
    let lines = Formats::new(true).parse(&out);
    assert_eq!(iterations(&lines), [1, 2, 3, 4]);
    assert!(lines.contains(&Line::Saved(3)) && lines.contains(&Line::Saved(4)));
    assert_eq!(lines.last(), Some(&Line::Exiting(4)));
}

/// Bytes of file content in a save's folder (`iter_NNNNNNN`, every file below it).
fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                folder_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// `(iteration, wchar)` of every save in a probe file the fake trainer wrote.
fn probe_written(probe_dir: &Path) -> Vec<(u64, u64)> {
    let file = std::fs::read_dir(probe_dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .unwrap();
    let text = std::fs::read_to_string(file.path()).unwrap();
    let save = Regex::new(r#""iteration":(\d+),"counters":\{[^}]*"wchar":(\d+)"#).unwrap();
    save.captures_iter(&text)
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect()
}

/// A save counts its own writes, whichever thread makes them and whenever: a sync save's in
/// the loop, an async save's staging copy in the loop and its write by the worker, even when
/// the worker is still writing one save while the next save's window is open (here each
/// write takes 150 ms more, and saves come 4 ms apart). Checked against the save's folder on
/// disk: what a save passed to `write()` is its folder, its staging copy under
/// `--async-ckpt-use-cpu-shm`, the tracker file and its log lines (under 4 KiB).
#[test]
fn each_save_counts_its_own_writes_whichever_thread_writes_them() {
    const LINES: u64 = 4096;
    let modes: [(&str, &[&str], bool); 3] = [
        ("sync", &[], false),
        (
            "async",
            &["--async-save", "--use-persistent-ckpt-worker"],
            false,
        ),
        (
            "async_shm",
            &[
                "--async-save",
                "--use-persistent-ckpt-worker",
                "--async-ckpt-use-cpu-shm",
            ],
            true,
        ),
    ];
    for (name, extra, staged) in modes {
        let dir = tempfile::tempdir().unwrap();
        let (save, probe) = (dir.path().join("ckpt"), dir.path().join("probe"));
        std::fs::create_dir(&probe).unwrap();
        let out = fake(&[
            "--train-iters",
            "6",
            "--save",
            save.to_str().unwrap(),
            "--save-interval",
            "2",
            "--ckpt-mb",
            "3",
            "--slow-write-ms",
            "150",
        ])
        .args(extra)
        .env("GOLDGATE_PROBE_DIR", &probe)
        .output()
        .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let written = probe_written(&probe);
        assert_eq!(
            written.iter().map(|(it, _)| *it).collect::<Vec<_>>(),
            [2, 4, 6],
            "{name}"
        );
        for (it, bytes) in written {
            let folder = folder_bytes(&save.join(format!("iter_{it:07}")));
            let staging = if staged { shard(&save, it) } else { 0 };
            let own = folder + staging;
            assert!(
                (own..own + LINES).contains(&bytes),
                "{name}: save {it} wrote {bytes} bytes, its folder holds {folder} and its \
                 staging copy {staging}"
            );
        }
    }
}
