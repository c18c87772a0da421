//! The fault-injection suite: goldgate against hostile jobs, hostile files and hostile
//! command lines. Process hygiene (daemons that escape the process group, every stop signal,
//! `ulimit -f`), output floods with a peak-RSS bound, special files where goldgate reads or
//! writes, hostile names, incomplete runs, overflowing flags and closed pipes. Each test's name
//! says what it guards. The jobs are the shell scripts in `tests/fixtures/faults/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use goldgate_schema::{Outcome, RunIndex, RunRecord};

use crate::common;

use common::cli::{self, text};
use common::results::walk;

/// Every process a test starts carries `FAULTS_MARKER=<test>`, so the test can find what
/// survived goldgate (a daemon's command line says nothing about where it came from).
const MARKER_VAR: &str = "GOLDGATE_FAULTS_MARKER";

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/faults")
        .join(name)
        .display()
        .to_string()
}

/// A scratch folder with a case tree `cases/m/<name>/` per job.
struct Scratch {
    dir: tempfile::TempDir,
    marker: String,
}

impl Scratch {
    fn new(test: &str) -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
            marker: format!("{test}-{}", std::process::id()),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A direct-launcher case that runs `sh <script> <args>`.
    fn case(&self, name: &str, script_name: &str, args: &[&str]) -> &Scratch {
        let mut entry = vec!["sh".to_owned(), script(script_name)];
        entry.extend(args.iter().map(|a| (*a).to_owned()));
        let words: Vec<String> = entry.iter().map(|w| format!("{w:?}")).collect();
        let yaml = format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nMETRICS: [\"lm loss\"]\n\
             GOLDGATE:\n  entry: [{}]\n",
            words.join(", ")
        );
        self.write(&format!("cases/m/{name}/model_config.yaml"), &yaml);
        self
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `goldgate <args>` in the scratch folder (the built-in goldgate.yaml applies).
    fn goldgate(&self, args: &[&str]) -> Command {
        let mut cmd = cli::goldgate();
        cmd.current_dir(self.path())
            .args(args)
            .env(MARKER_VAR, &self.marker)
            .stdin(Stdio::null());
        cmd
    }

    /// `goldgate run --root cases --out out --no-compare <args>`.
    fn run(&self, args: &[&str]) -> Command {
        let mut all = vec![
            "run",
            "--root",
            "cases",
            "--out",
            "out",
            "--no-compare",
            "--sample-interval",
            "50ms",
        ];
        all.extend_from_slice(args);
        self.goldgate(&all)
    }

    /// Processes still alive that this test started (through goldgate).
    fn survivors(&self) -> Vec<u32> {
        let needle = format!("{MARKER_VAR}={}\0", self.marker);
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
            if !zombie && env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(pid);
            }
        }
        found
    }

    fn records(&self) -> Vec<RunRecord> {
        common::results::records(&self.path().join("out"))
    }

    fn index(&self) -> RunIndex {
        let runs = goldgate_core::records::load_indexes(&self.path().join("out")).unwrap();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs.into_iter().next().unwrap().1
    }

    /// The job folder of `case` in the only run (`None` before the run folder exists).
    fn try_job_dir(&self, case: &str) -> Option<PathBuf> {
        let out = self.path().join("out");
        let run = std::fs::read_dir(&out)
            .ok()?
            .flatten()
            .find(|e| e.path().is_dir())?;
        Some(run.path().join("m").join(case).join("default/1"))
    }

    fn job_dir(&self, case: &str) -> PathBuf {
        self.try_job_dir(case).unwrap()
    }

    /// Waits (at most 60 s) until the console log of `case` holds `needle`.
    fn wait_for_log(&self, case: &str, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.try_job_dir(case).map(|d| d.join("logs/console.log"));
            if log.is_some_and(|l| std::fs::read_to_string(l).is_ok_and(|t| t.contains(needle))) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{case}'s log never held {needle:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Scratch {
    /// A failed test must not leave its daemons behind for the next one.
    fn drop(&mut self) {
        for pid in self.survivors() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

// ---- 12: processes that escape, stop signals, ulimit -f ----------------------------------

#[test]
fn a_daemon_that_escapes_is_stopped_and_reported_after_a_normal_exit() {
    let s = Scratch::new("escape-exit");
    s.case("daemon", "daemon.sh", &["exit"]);
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(s.survivors().is_empty(), "{:?}", s.survivors());
    let record = &s.records()[0];
    assert_eq!(record.outcome, Outcome::Passed);
    let warning = record
        .warnings
        .iter()
        .find(|w| w.contains("escaped the job's process group"))
        .unwrap_or_else(|| panic!("{:?}", record.warnings));
    assert!(warning.contains("goldgate stopped them: pid "), "{warning}");
    assert!(
        text(&o).contains("warning: 1 process(es) escaped"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_daemon_that_escapes_is_stopped_after_a_timeout() {
    let s = Scratch::new("escape-timeout");
    s.case("daemon", "daemon.sh", &["wait"]);
    let o = s
        .run(&["--timeout", "1s", "--grace", "1s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(s.survivors().is_empty(), "{:?}", s.survivors());
    let record = &s.records()[0];
    assert!(
        matches!(record.outcome, Outcome::TimedOut { .. }),
        "{:?}",
        record.outcome
    );
    // Item 18: the attempt says what the job says.
    assert_eq!(record.attempts[0].outcome, record.outcome);
}

/// goldgate gets `sig` while a job with an escaped daemon runs: the job ends interrupted,
/// run.json has every outcome, nothing survives.
fn stop_signal_stops_everything(sig: &str) {
    let s = Scratch::new(&format!("signal-{sig}"));
    s.case("daemon", "daemon.sh", &["wait"]);
    let child = s
        .run(&["--grace", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    s.wait_for_log("daemon", "iteration");
    signal(child.id(), sig);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{sig}: {}", text(&o));
    assert!(s.survivors().is_empty(), "{sig}: {:?}", s.survivors());
    let index = s.index();
    assert_eq!(index.jobs[0].outcome, Some(Outcome::Interrupted), "{sig}");
    assert!(index.finished_at.is_some(), "{sig}");
}

#[test]
fn sigterm_stops_the_job_and_what_escaped() {
    stop_signal_stops_everything("TERM");
}

#[test]
fn sighup_is_handled_like_sigterm() {
    stop_signal_stops_everything("HUP");
}

#[test]
fn sigquit_is_handled_like_sigterm() {
    stop_signal_stops_everything("QUIT");
}

#[test]
fn sigusr1_is_handled_like_sigterm() {
    stop_signal_stops_everything("USR1");
}

/// Every other signal whose default action ends a process (SIGXCPU is what
/// `ulimit -t` sends; 34 and 64 are SIGRTMIN and SIGRTMAX) stops the job, its setsid daemon
/// and goldgate's run as SIGTERM does.
#[test]
fn every_catchable_fatal_signal_is_handled_like_sigterm() {
    for sig in [
        "USR2", "ALRM", "XCPU", "VTALRM", "PROF", "POLL", "PWR", "STKFLT", "34", "64",
    ] {
        stop_signal_stops_everything(sig);
    }
}

#[test]
fn ctrl_c_stops_the_job_and_what_escaped() {
    stop_signal_stops_everything("INT");
}

#[test]
fn ulimit_f_is_a_reported_write_error_not_a_silent_death() {
    let s = Scratch::new("ulimit-f");
    s.case("flood", "flood.sh", &["200000"]);
    let goldgate = env!("CARGO_BIN_EXE_goldgate");
    // 64 blocks: the 200 kB console log cannot be written.
    let o = s
        .goldgate(&[])
        .env("GOLDGATE", goldgate)
        .arg0_shell("ulimit -f 64; exec \"$GOLDGATE\" run --root cases --out out --no-compare")
        .output()
        .unwrap();
    assert_eq!(o.status.signal(), None, "killed by a signal: {}", text(&o));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("File too large"), "{}", text(&o));
    let index = s.index();
    assert!(index.jobs[0].outcome.is_some(), "{index:?}");
}

/// `sh -c <script>` in place of the command, keeping its folder and environment.
trait Shell {
    fn arg0_shell(&mut self, script: &str) -> Command;
}

impl Shell for Command {
    fn arg0_shell(&mut self, script: &str) -> Command {
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(script);
        if let Some(dir) = self.get_current_dir() {
            sh.current_dir(dir);
        }
        for (k, v) in self.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh.stdin(Stdio::null());
        sh
    }
}

// ---- 11: floods ----------------------------------------------------------------------------

/// Peak RSS (VmHWM, bytes) of `child` sampled until it exits, and its output.
fn peak_rss_until_exit(mut child: Child) -> (u64, std::process::ExitStatus) {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(hwm) = std::fs::read_to_string(&status_path).ok().and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        }) {
            peak = peak.max(hwm * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (peak, status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_flood_of_output_keeps_goldgate_memory_bounded() {
    const FLOOD: u64 = 100_000_000;
    const BOUND: u64 = 64 << 20;
    let s = Scratch::new("flood");
    s.case("flood", "flood.sh", &[&FLOOD.to_string()]);
    let child = s
        .run(&[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (peak, status) = peak_rss_until_exit(child);
    assert!(status.success(), "{status:?}");
    let log = s.job_dir("flood").join("logs/console.log");
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        FLOOD,
        "nothing lost"
    );
    assert!(
        peak < BOUND,
        "goldgate's peak RSS was {} MiB for a {} MB flood (bound {} MiB)",
        peak >> 20,
        FLOOD / 1_000_000,
        BOUND >> 20
    );
}

#[test]
fn a_long_log_of_iteration_lines_is_thinned_in_results_json() {
    const STEPS: u64 = 60_000;
    let s = Scratch::new("long-log");
    s.case("long", "iterations.sh", &[&STEPS.to_string()]);
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let record = &s.records()[0];
    let loss = &record.metrics["lm loss"].0;
    let max = goldgate_record::metrics::downsample::MAX_POINTS;
    assert!(loss.len() <= max + 2, "{} values kept", loss.len());
    assert!(
        (1..=2_000).all(|step| loss.contains_key(&step)),
        "dense start kept"
    );
    assert!(
        (5..=STEPS).step_by(5).all(|step| loss.contains_key(&step)),
        "every 5th kept"
    );
    assert_eq!(
        loss.keys().next_back(),
        Some(&STEPS),
        "the last step is kept"
    );
    let size = std::fs::metadata(s.job_dir("long").join("results.json"))
        .unwrap()
        .len();
    assert!(size < 4 << 20, "results.json is {size} bytes");
}

// ---- 9, 10: special files where goldgate reads or writes -------------------------------------

/// A recorded quick run blessed into `golden/`: what `compare` needs.
fn blessed_quick_run(s: &Scratch) {
    s.case("quick", "iterations.sh", &["3"]);
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

fn golden_path(s: &Scratch) -> PathBuf {
    s.path()
        .join("golden/m/quick/golden_values_dev_dev_cpu.json")
}

fn compare(s: &Scratch, extra: &[&str]) -> Output {
    let mut args = vec!["compare", "--results", "out", "--root", "cases"];
    args.extend_from_slice(extra);
    s.goldgate(&args).output().unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success());
}

#[test]
fn report_files_never_replace_devices_fifos_or_symlinks() {
    let s = Scratch::new("special-out");
    blessed_quick_run(&s);
    let null = s.path().join("null.xml");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let real = s.write("reports/real.json", "old");
    let link = s.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = compare(&s, &["--junit", "null.xml", "--json", "link.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(kind.is_symlink(), "{} was replaced", null.display());
    // A link to a regular file is replaced by the report; its target is never written
    // (a committed link must not lead a write outside the folder).
    assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
    assert!(std::fs::read_to_string(&link).unwrap().contains("\"jobs\""));
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "old");
    let fifo = s.path().join("report.md");
    mkfifo(&fifo);
    let o = compare(&s, &["--markdown", "report.md"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("no process is reading"), "{}", text(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn goldens_that_are_devices_or_fifos_are_named_not_missing() {
    let s = Scratch::new("special-golden");
    blessed_quick_run(&s);
    let golden = golden_path(&s);
    for kind in ["a character device", "a FIFO"] {
        std::fs::remove_file(&golden).unwrap();
        match kind {
            "a FIFO" => mkfifo(&golden),
            _ => std::os::unix::fs::symlink("/dev/zero", &golden).unwrap(),
        }
        let start = Instant::now();
        let o = compare(&s, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let t = text(&o);
        assert!(
            t.contains(&golden.display().to_string())
                || t.contains("golden_values_dev_dev_cpu.json"),
            "{t}"
        );
        assert!(t.contains(kind), "{t}");
        assert!(!t.contains("no golden file"), "{t}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn results_run_json_and_configs_that_are_special_files_are_refused() {
    let s = Scratch::new("special-in");
    blessed_quick_run(&s);
    let results = s.job_dir("quick").join("results.json");
    std::fs::remove_file(&results).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &results).unwrap();
    let o = compare(&s, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("results.json"), "{}", text(&o));
    std::fs::remove_file(&results).unwrap();
    mkfifo(&results);
    let o = compare(&s, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("FIFO"), "{}", text(&o));
    std::os::unix::fs::symlink("/dev/zero", s.path().join("zero.yaml")).unwrap();
    let o = compare(&s, &["--config", "zero.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("zero.yaml"), "{}", text(&o));
}

// ---- 7: hostile names ----------------------------------------------------------------------

#[test]
fn bless_never_writes_outside_the_golden_root() {
    let s = Scratch::new("names");
    s.case("quick", "iterations.sh", &["3"]);
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let results = s.job_dir("quick").join("results.json");
    let original = std::fs::read_to_string(&results).unwrap();
    for (from, to) in [
        ("\"case\": \"m/quick\"", "\"case\": \"../../../x\""),
        ("\"platform\": \"dev_cpu\"", "\"platform\": \"../../evil\""),
        ("\"slug\": \"default\"", "\"slug\": \"../..\""),
    ] {
        assert!(original.contains(from), "{from}");
        std::fs::write(&results, original.replace(from, to)).unwrap();
        let o = s
            .goldgate(&["bless", "--from", "out", "--golden-root", "g/golden"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{to}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains("results.json") && t.contains("plain"), "{t}");
    }
    std::fs::write(&results, &original).unwrap();
    let o = s
        .goldgate(&[
            "bless",
            "--from",
            "out",
            "--golden-root",
            "g/golden",
            "--platform",
            "../..",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // Nothing anywhere but where it belongs.
    let written: Vec<_> = walk(s.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("golden_values"))
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

// ---- 8: incomplete runs --------------------------------------------------------------------

#[test]
fn a_run_killed_with_sigkill_never_passes_the_gate() {
    let s = Scratch::new("sigkill");
    s.case("a-quick", "iterations.sh", &["3"]);
    s.case("b-daemon", "daemon.sh", &["wait"]);
    let child = s
        .run(&[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    s.wait_for_log("b-daemon", "iteration");
    signal(child.id(), "KILL");
    let _ = child.wait_with_output();
    // goldgate is gone; so must its job be before anything else happens.
    for pid in s.survivors() {
        signal(pid, "KILL");
    }
    let index = s.index();
    assert_eq!(index.jobs[1].outcome, None, "{index:?}");
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "bless: {}", text(&o));
    let o = compare(&s, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("is incomplete: 1 of 2 job(s) have no result"),
        "{t}"
    );
    assert!(t.contains("m/b-daemon@default#1: no outcome"), "{t}");
}

// ---- very short jobs gated on memory -----------------------------------------------------------

/// A quick job (a few ms, over before the sampler's first tick at 50 ms) whose case gates its
/// host memory, blessed from a run whose PSS was read as the job started.
///
/// That read races the job: on a loaded machine the job can be gone before goldgate reads it,
/// and then its PSS is not sampled (a gate says so and passes). The golden needs a reading, so
/// this runs the job until one run has it, at most 30 times, and returns how many runs it made.
fn blessed_quick_memory_run(s: &Scratch) -> usize {
    let entry = format!("[\"sh\", {:?}, \"3\"]", script("iterations.sh"));
    s.write(
        "cases/m/quick/model_config.yaml",
        &format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\n\
             METRICS: [\"lm loss\", \"host-peak-pss-bytes\"]\nGOLDGATE:\n  entry: {entry}\n"
        ),
    );
    let mut runs = 0;
    let sampled = (0..30).any(|_| {
        let earlier: Vec<String> = match s.path().join("out").exists() {
            true => s.records().into_iter().map(|r| r.run_id).collect(),
            false => Vec::new(),
        };
        let o = s.run(&[]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        runs += 1;
        s.records()
            .into_iter()
            .filter(|r| !earlier.contains(&r.run_id))
            .all(|r| r.memory.host_peak_pss_bytes.is_some())
    });
    assert!(
        sampled,
        "30 runs of the quick job and none had its PSS read"
    );
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let golden = std::fs::read_to_string(golden_path(s)).unwrap();
    assert!(golden.contains("host-peak-pss-bytes"), "{golden}");
    runs
}

/// Whether a gated run of the quick job passed: with its PSS within the golden's band, or not
/// sampled because the job was gone before goldgate read it (not a regression).
fn passed_its_gate(output: &Output) -> bool {
    let t = text(output);
    output.status.code() == Some(0)
        && (t.contains("1 job on dev_cpu: 1 passed")
            || t.contains("1 job on dev_cpu: 1 with a metric not sampled"))
}

/// `goldgate run --root cases --sample-interval 50ms <args>`, gated.
fn gated_run(s: &Scratch, args: &[&str]) -> Command {
    let mut all = vec!["run", "--root", "cases", "--sample-interval", "50ms"];
    all.extend_from_slice(args);
    let mut cmd = s.goldgate(&all);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

#[test]
fn two_runs_into_one_out_folder_at_once_each_pass_their_own_gate() {
    let s = Scratch::new("concurrent-out");
    let blessing = blessed_quick_memory_run(&s);
    let runs: Vec<Child> = (0..2)
        .map(|_| gated_run(&s, &["--out", "out"]).spawn().unwrap())
        .collect();
    for run in runs {
        let o = run.wait_with_output().unwrap();
        assert!(passed_its_gate(&o), "{}", text(&o));
    }
    let mut ids: Vec<String> = s.records().into_iter().map(|r| r.run_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        blessing + 2,
        "the blessing's runs and the two at once: {ids:?}"
    );
}

#[test]
fn an_out_folder_that_is_a_link_to_a_folder_is_written_through_and_gated() {
    let s = Scratch::new("linked-out");
    blessed_quick_memory_run(&s);
    std::fs::create_dir(s.path().join("real")).unwrap();
    std::os::unix::fs::symlink(s.path().join("real"), s.path().join("linked")).unwrap();
    let o = gated_run(&s, &["--out", "linked"]).output().unwrap();
    assert!(passed_its_gate(&o), "{}", text(&o));
    assert!(s.path().join("linked").is_symlink());
    let records = common::results::records(&s.path().join("real"));
    assert_eq!(records.len(), 1);
    let o = s
        .goldgate(&["compare", "--results", "linked", "--root", "cases"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// ---- 13: flags that overflow, closed pipes --------------------------------------------------

#[test]
fn huge_durations_and_retries_are_usage_errors() {
    let s = Scratch::new("flags");
    s.case("quick", "iterations.sh", &["3"]);
    for args in [
        ["--timeout", "99999999999999999999s"],
        ["--grace", "99999999999999999999s"],
        ["--sample-interval", "99999999999999999999s"],
        ["--retries", "4294967295"],
    ] {
        let o = s.run(&args).output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(!t.contains("panicked"), "{t}");
        assert!(!s.path().join("out").exists(), "{args:?} started a run");
    }
    let o = s.run(&["--retries", "4294967295"]).output().unwrap();
    assert!(text(&o).contains("0..=100"), "{}", text(&o));
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn broken_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_closed_stdout_pipe_ends_output_quietly() {
    let s = Scratch::new("stdout-pipe");
    s.case("quick", "iterations.sh", &["3"]);
    let o = s
        .goldgate(&["list", "--root", "cases"])
        .stdout(broken_pipe())
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(!t.contains("panicked"), "{t}");
}

#[test]
fn a_closed_or_broken_stderr_does_not_lose_the_run() {
    let s = Scratch::new("stderr");
    s.case("quick", "iterations.sh", &["3"]);
    let o = s.run(&[]).stderr(broken_pipe()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let goldgate = env!("CARGO_BIN_EXE_goldgate");
    let closed = s
        .goldgate(&[])
        .env("GOLDGATE", goldgate)
        .arg0_shell("exec \"$GOLDGATE\" run --root cases --out out --no-compare 2>&-")
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed));
    let runs = goldgate_core::records::load_indexes(&s.path().join("out")).unwrap();
    assert_eq!(runs.len(), 2);
    for (_, index) in runs {
        assert!(
            index
                .jobs
                .iter()
                .all(|j| j.outcome == Some(Outcome::Passed)),
            "{index:?}"
        );
    }
}

// ---- 14: rules ----------------------------------------------------------------------------

#[test]
fn nonsense_tolerances_and_step_interval_zero_are_usage_errors() {
    let s = Scratch::new("rules");
    blessed_quick_run(&s);
    s.write("bad.yaml", "rules:\n  lm loss:\n    rtol: .inf\n");
    let o = compare(&s, &["--config", "bad.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.yaml:3:"), "{}", text(&o));
    let golden = golden_path(&s);
    let text_of_golden = std::fs::read_to_string(&golden).unwrap();
    assert!(text_of_golden.contains("\"step_interval\": 1"));
    std::fs::write(
        &golden,
        text_of_golden.replace("\"step_interval\": 1", "\"step_interval\": 0"),
    )
    .unwrap();
    let o = compare(&s, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("golden_values_dev_dev_cpu.json") && t.contains("step_interval"),
        "{t}"
    );
}

// ---- 15: broken case files ------------------------------------------------------------------

#[test]
fn broken_case_files_are_errors_not_skips() {
    let s = Scratch::new("cases");
    let root = s.path().join("cases/m");
    std::fs::create_dir_all(root.join("folder/model_config.yaml")).unwrap();
    std::fs::create_dir_all(root.join("fifo")).unwrap();
    mkfifo(&root.join("fifo/model_config.yaml"));
    std::fs::create_dir_all(root.join("loop")).unwrap();
    let looped = root.join("loop/model_config.yaml");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    s.write(
        "cases/m/empty-entry/model_config.yaml",
        "TEST_TYPE: regular\nMODEL_ARGS: {}\nGOLDGATE:\n  entry: []\n",
    );
    let o = s.goldgate(&["check", "--root", "cases"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for case in ["folder", "fifo", "loop", "empty-entry"] {
        assert!(
            t.lines()
                .any(|l| l.contains(&format!("m/{case}/model_config.yaml")) && l.contains("error")),
            "{case}: {t}"
        );
    }
    assert!(t.contains("GOLDGATE.entry"), "{t}");
    assert!(!t.contains("skipped"), "{t}");
}

// ---- 18: minor ----------------------------------------------------------------------------

#[test]
fn extract_on_a_folder_is_a_usage_error() {
    let s = Scratch::new("extract");
    let o = s.goldgate(&["extract", "."]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("is a folder, not a log file"),
        "{}",
        text(&o)
    );
}

#[test]
fn jobs_100000_runs_one_job_without_delay() {
    let s = Scratch::new("jobs");
    s.case("quick", "iterations.sh", &["3"]);
    let start = Instant::now();
    let o = s.run(&["--jobs", "100000"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn pull_request_zero_is_refused() {
    let s = Scratch::new("pr");
    let o = s
        .goldgate(&["comment", "--results", "out", "--pr", "0", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--pr"), "{}", text(&o));
}
