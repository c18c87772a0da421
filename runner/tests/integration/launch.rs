//! Integration tests of stage "launch": process groups, streaming output, timeouts, stop
//! requests and signals to goldgate. The job processes are this test binary itself,
//! re-executed in a helper mode (`GG_HELPER`), so no shell or Python is needed.

// Helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goldgate_core::log::{LogSink, LogStream, MAX_LINE};
use goldgate_record::launch::{
    LaunchError, LaunchEvent, LaunchReport, LaunchSpec, ProcessOutcome, StopFlag, Termination,
    group_alive, install_signal_handlers, launch,
};
use goldgate_record::observe::sample::{Sampler, SamplerConfig};
use rustix::process::{Pid, Signal};

use crate::common;

use common::redact::redact;

fn helper_argv() -> Vec<String> {
    let exe = std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    [
        "--exact",
        // The test's full name in the one integration binary (`main.rs`: `mod launch;`).
        "launch::helper",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .iter()
    .fold(vec![exe], |mut v, w| {
        v.push((*w).to_owned());
        v
    })
}

fn helper_spec(mode: &str, dir: &Path) -> LaunchSpec {
    let mut spec = LaunchSpec::new(helper_argv(), dir.to_path_buf());
    spec.raw_log = Some(dir.join("logs/job.log"));
    spec.env.insert("GG_HELPER".to_owned(), mode.to_owned());
    spec.grace = Duration::from_millis(300);
    spec
}

/// Hands each line of the job's output, as goldgate's one log stream splits it, to `f`.
struct Lines<F: FnMut(String)>(F);

impl<F: FnMut(String)> LogSink for Lines<F> {
    fn line(&mut self, line: &[u8], _dropped: u64, _ended: bool) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (self.0)(String::from_utf8_lossy(line).into_owned());
    }
}

fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Keeps SIGTERM from killing this process: a registered handler replaces the default action.
fn ignore_sigterm() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let signal = rt.block_on(async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    });
    std::mem::forget(signal.unwrap());
    std::mem::forget(rt);
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(1000));
    }
}

// The child must outlive this helper: the tests check that goldgate kills and reaps it.
#[allow(clippy::zombie_processes)]
fn spawn_stubborn_child() -> u32 {
    let child = Command::new(std::env::current_exe().unwrap())
        .args(&helper_argv()[1..])
        .env("GG_HELPER", "stubborn-child")
        .spawn()
        .unwrap();
    child.id()
}

#[test]
#[ignore = "helper process started by the other tests"]
fn helper() {
    let Ok(mode) = std::env::var("GG_HELPER") else {
        return;
    };
    match mode.as_str() {
        "print" => {
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            stdout.write_all(b"\nout 1\n").unwrap();
            stdout.flush().unwrap();
            stderr.write_all(b"err 2\n").unwrap();
            stdout.write_all(&vec![b'x'; 70_000]).unwrap();
            stdout.write_all(b"\ncrlf\r\n").unwrap();
            for key in ["GG_VAR", "GG_UNSET", "CUDA_VISIBLE_DEVICES"] {
                let value = std::env::var(key).unwrap_or_else(|_| "-".to_owned());
                writeln!(stdout, "{key}={value}").unwrap();
            }
            stdout.write_all(b"tail").unwrap();
            stdout.flush().unwrap();
            std::process::exit(3);
        }
        "stubborn" => {
            ignore_sigterm();
            let child = spawn_stubborn_child();
            out(&format!("child-pid {child}"));
            sleep_forever();
        }
        "orphan" => {
            let child = spawn_stubborn_child();
            out(&format!("child-pid {child}"));
            std::process::exit(0);
        }
        "stubborn-child" => {
            ignore_sigterm();
            out("child-ready");
            sleep_forever();
        }
        "supervisor" => supervise_one_job(),
        "alloc" => {
            // A child in the same group: the sampler must find it and add its RSS.
            let status = Command::new(std::env::current_exe().unwrap())
                .args(&helper_argv()[1..])
                .env("GG_HELPER", "alloc-child")
                .status()
                .unwrap();
            std::process::exit(status.code().unwrap_or(1));
        }
        "alloc-child" => {
            let held = vec![1u8; 64 << 20];
            let shm = PathBuf::from(format!("/dev/shm/goldgate-test-{}", std::process::id()));
            std::fs::write(&shm, vec![2u8; 32 << 20]).unwrap();
            out("held");
            // A second of ticks (10 ms apart) however busy the machine is.
            std::thread::sleep(Duration::from_secs(1));
            std::fs::remove_file(&shm).unwrap();
            out(&format!(
                "sum {}",
                held.iter().map(|b| u64::from(*b)).sum::<u64>()
            ));
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// goldgate in miniature: handlers first, then one stubborn job; prints the report as JSON.
fn supervise_one_job() {
    let stop = install_signal_handlers().unwrap();
    let dir = PathBuf::from(std::env::var("GG_DIR").unwrap());
    let mut spec = helper_spec("stubborn", &dir);
    spec.grace = Duration::from_millis(std::env::var("GG_GRACE_MS").unwrap().parse().unwrap());
    let watcher = stop.clone();
    std::thread::spawn(move || {
        while !watcher.is_requested() {
            std::thread::sleep(Duration::from_millis(5));
        }
        out("stop-requested");
    });
    let mut stream = LogStream::new();
    let mut sink = Lines(|line: String| {
        if line.starts_with("child-pid ") || line == "child-ready" {
            out(&line);
        }
    });
    let report = launch(&spec, &stop, |event| {
        if let LaunchEvent::Output(bytes) = event {
            stream.feed(bytes, &mut sink);
        }
    })
    .unwrap();
    out(&format!(
        "report {}",
        serde_json::to_string(&report).unwrap()
    ));
    std::process::exit(0);
}

struct Run {
    report: LaunchReport,
    lines: Vec<String>,
    child: Option<u32>,
}

fn run(spec: &LaunchSpec, stop: &StopFlag, stop_when_ready: u32) -> Run {
    let mut lines = Vec::new();
    let mut child = None;
    let mut ready = false;
    let mut spawned = None;
    let mut stream = LogStream::new();
    let mut sink = Lines(|line: String| {
        // The job prints its child's pid and the child that it is ready, from two
        // processes into one pipe: either line may come first. Stop only once both are
        // read, or a stop that kills at once can end the job before it printed the pid.
        let had_both = ready && child.is_some();
        if let Some(pid) = line.strip_prefix("child-pid ") {
            child = pid.parse().ok();
        }
        ready |= line == "child-ready";
        if !had_both && ready && child.is_some() {
            (0..stop_when_ready).for_each(|_| stop.request());
        }
        lines.push(line);
    });
    let report = launch(spec, stop, |event| match event {
        LaunchEvent::Spawned { pid, pgid } => spawned = Some((pid, pgid)),
        LaunchEvent::Output(bytes) => stream.feed(bytes, &mut sink),
    })
    .unwrap();
    stream.finish(&mut sink);
    assert_eq!(spawned, Some((report.pid, report.pgid)));
    Run {
        report,
        lines,
        child,
    }
}

fn assert_all_gone(run: &Run) {
    assert!(
        !group_alive(run.report.pgid),
        "group {} still alive",
        run.report.pgid
    );
    let pgid = Pid::from_raw(run.report.pgid as i32).unwrap();
    assert_eq!(
        rustix::process::test_kill_process_group(pgid),
        Err(rustix::io::Errno::SRCH)
    );
    let child = Pid::from_raw(run.child.expect("helper printed its child's pid") as i32).unwrap();
    assert_eq!(
        rustix::process::test_kill_process(child),
        Err(rustix::io::Errno::SRCH)
    );
}

#[test]
fn streams_stdout_and_stderr_in_order_to_callback_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = helper_spec("print", dir.path());
    spec.env
        .insert("GG_VAR".to_owned(), "hello world".to_owned());
    spec.env.insert("GG_UNSET".to_owned(), "set".to_owned());
    spec.env_unset.push("GG_UNSET".to_owned());
    spec.cuda_visible_devices = Some("2,3".to_owned());
    let run = run(&spec, &StopFlag::new(), 0);
    assert_eq!(run.report.outcome, ProcessOutcome::Exited(3));
    assert_eq!(run.report.termination, Termination::Exited(3));
    let start = run.lines.iter().position(|l| l == "out 1").unwrap();
    let ours: Vec<&str> = run.lines[start..].iter().map(String::as_str).collect();
    // A line over the cap keeps its head; the rest is dropped (and counted by the stream).
    let long = "x".repeat(MAX_LINE);
    let want = [
        "out 1",
        "err 2",
        &long,
        "crlf",
        "GG_VAR=hello world",
        "GG_UNSET=set",
        "CUDA_VISIBLE_DEVICES=2,3",
        "tail",
    ];
    // env_unset removes inherited variables; `env` is applied after it.
    assert_eq!(ours, want);
    let log = std::fs::read(spec.raw_log.as_ref().unwrap()).unwrap();
    let tail = format!(
        "\nout 1\nerr 2\n{}\ncrlf\r\nGG_VAR=hello world\n",
        "x".repeat(70_000)
    );
    assert!(
        log.windows(tail.len()).any(|w| w == tail.as_bytes()),
        "log lacks the exact bytes"
    );
    assert!(log.ends_with(b"CUDA_VISIBLE_DEVICES=2,3\ntail"));
}

#[test]
fn timeout_terms_then_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = helper_spec("stubborn", dir.path());
    spec.timeout = Some(Duration::from_secs(3));
    let run = run(&spec, &StopFlag::new(), 0);
    assert!(
        run.lines.iter().any(|l| l == "child-ready"),
        "helper not ready before the timeout: {:?}",
        run.lines
    );
    assert_eq!(run.report.outcome, ProcessOutcome::TimedOut);
    assert_eq!(
        run.report.termination,
        Termination::Signaled(9),
        "SIGTERM is ignored, so SIGKILL ends it"
    );
    assert!(
        run.report.wall >= Duration::from_millis(3300),
        "{:?}",
        run.report.wall
    );
    assert_all_gone(&run);
}

#[test]
fn stop_request_interrupts_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(&helper_spec("stubborn", dir.path()), &StopFlag::new(), 1);
    assert_eq!(run.report.outcome, ProcessOutcome::Interrupted);
    assert_eq!(run.report.termination, Termination::Signaled(9));
    assert_all_gone(&run);
}

#[test]
fn stop_request_from_another_thread_wakes_a_supervisor_without_timeout() {
    // The supervisor sleeps until something happens; a silent job with no timeout gives it
    // nothing but the stop request. Were the wake-up lost, this would last the full 20 s.
    let dir = tempfile::tempdir().unwrap();
    let spec = LaunchSpec::new(
        vec!["sleep".to_owned(), "20".to_owned()],
        dir.path().to_path_buf(),
    );
    let stop = StopFlag::new();
    let requester = stop.clone();
    let report = launch(&spec, &stop, |event| {
        if let LaunchEvent::Spawned { .. } = event {
            let requester = requester.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                requester.request();
            });
        }
    })
    .unwrap();
    assert_eq!(report.outcome, ProcessOutcome::Interrupted);
    assert!(report.wall < Duration::from_secs(10), "{:?}", report.wall);
}

#[test]
fn second_stop_request_kills_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = helper_spec("stubborn", dir.path());
    spec.grace = Duration::from_secs(120);
    let begun = Instant::now();
    let run = run(&spec, &StopFlag::new(), 2);
    assert_eq!(run.report.outcome, ProcessOutcome::Interrupted);
    assert!(
        begun.elapsed() < Duration::from_secs(60),
        "waited for the grace period"
    );
    assert_all_gone(&run);
}

#[test]
fn processes_left_behind_by_the_main_process_are_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(&helper_spec("orphan", dir.path()), &StopFlag::new(), 0);
    assert_eq!(run.report.outcome, ProcessOutcome::Exited(0));
    assert!(run.report.stray_processes);
    assert_all_gone(&run);
}

fn start_supervisor(
    dir: &Path,
    grace_ms: u64,
) -> (std::process::Child, impl Iterator<Item = String>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(&helper_argv()[1..])
        .env("GG_HELPER", "supervisor")
        .env("GG_DIR", dir)
        .env("GG_GRACE_MS", grace_ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok);
    (child, lines)
}

fn interrupt_supervisor(grace_ms: u64, signals: u32) -> (LaunchReport, Option<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut lines) = start_supervisor(dir.path(), grace_ms);
    let supervisor = Pid::from_raw(child.id() as i32).unwrap();
    // The job prints its child's pid and the child prints that it is ready, from two processes
    // into one pipe: either line may come first, so wait for both.
    let mut job_child = None;
    let mut ready = false;
    for line in lines.by_ref() {
        if let Some(pid) = line.strip_prefix("child-pid ") {
            job_child = pid.parse().ok();
        }
        ready |= line == "child-ready";
        if ready && job_child.is_some() {
            break;
        }
    }
    rustix::process::kill_process(supervisor, Signal::INT).unwrap();
    if signals == 2 {
        // Signals sent back to back coalesce; the second must follow the first's effect.
        assert!(lines.by_ref().any(|l| l == "stop-requested"));
        rustix::process::kill_process(supervisor, Signal::INT).unwrap();
    }
    let report = lines
        .find_map(|l| l.strip_prefix("report ").map(str::to_owned))
        .expect("no report");
    assert!(child.wait().unwrap().success());
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(v["outcome"], "interrupted");
    let report = LaunchReport {
        outcome: ProcessOutcome::Interrupted,
        termination: Termination::Signaled(v["termination"]["signaled"].as_i64().unwrap() as i32),
        pid: v["pid"].as_u64().unwrap() as u32,
        pgid: v["pgid"].as_u64().unwrap() as u32,
        wall: Duration::from_secs_f64(v["wall"]["secs"].as_f64().unwrap()),
        output_bytes: v["output_bytes"].as_u64().unwrap(),
        stray_processes: v["stray_processes"].as_bool().unwrap(),
        escaped: serde_json::from_value(v["escaped"].clone()).unwrap(),
    };
    (report, job_child)
}

#[test]
fn sigint_to_goldgate_interrupts_the_job_and_kills_its_group() {
    let (report, child) = interrupt_supervisor(300, 1);
    assert_eq!(report.termination, Termination::Signaled(9));
    assert_all_gone(&Run {
        report,
        lines: Vec::new(),
        child,
    });
}

#[test]
fn second_sigint_to_goldgate_skips_the_grace_period() {
    let (report, child) = interrupt_supervisor(120_000, 2);
    assert!(report.wall < Duration::from_secs(60), "{:?}", report.wall);
    assert_all_gone(&Run {
        report,
        lines: Vec::new(),
        child,
    });
}

#[test]
fn missing_program_and_cwd_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = LaunchSpec::new(
        vec!["no-such-program-xyz".to_owned()],
        dir.path().to_path_buf(),
    );
    spec.env
        .insert("PATH".to_owned(), "/nonexistent/bin".to_owned());
    let err = launch(&spec, &StopFlag::new(), |_| {}).unwrap_err();
    insta::assert_snapshot!(redact(&err.to_string(), &[dir.path()]));
    assert!(matches!(err, LaunchError::ProgramNotFound { .. }));
    spec.cwd = dir.path().join("missing");
    let err = launch(&spec, &StopFlag::new(), |_| {}).unwrap_err();
    insta::assert_snapshot!(redact(&err.to_string(), &[dir.path()]));
}

#[test]
fn samplers_see_the_whole_tree_and_shm_of_a_launched_job() {
    let _shm = common::shm::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let spec = helper_spec("alloc", dir.path());
    let config = SamplerConfig {
        gpu: false,
        ..SamplerConfig::default()
    };
    let sampler = Sampler::start(&config).unwrap();
    let report = launch(&spec, &StopFlag::new(), |event| {
        if let LaunchEvent::Spawned { pgid, .. } = event {
            sampler.attach(pgid);
        }
    })
    .unwrap();
    let summary = sampler.stop();
    assert_eq!(report.outcome, ProcessOutcome::Exited(0));
    let rss = summary.host.rss.as_ref().unwrap();
    assert!(
        rss.peak_bytes >= 64 << 20,
        "rss peak {} < 64 MiB: {summary:?}",
        rss.peak_bytes
    );
    assert!(summary.host.max_processes >= 2, "{summary:?}");
    // `/dev/shm` is the machine's: another program may remove a file of its own while the
    // job holds its 32 MiB, which lowers the peak above the baseline. The job's own write is
    // the rise of the timeline over its lowest point before.
    let shm = summary.host.shm.as_ref().unwrap();
    let rise = shm
        .timeline
        .iter()
        .scan(u64::MAX, |low, p| {
            *low = (*low).min(p.bytes);
            Some(p.bytes - *low)
        })
        .max()
        .unwrap_or(0);
    assert!(rise >= 32 << 20, "shm rose {rise} < 32 MiB: {shm:?}");
    assert!(
        (10..=2000).contains(&rss.timeline.len()),
        "{} points: {rss:?}",
        rss.timeline.len()
    );
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
}
