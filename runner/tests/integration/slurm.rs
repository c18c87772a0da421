//! The Slurm executor against a real Slurm cluster (`.ci/slurm-cluster.sh`: one slurmctld and
//! two slurmd, nodes `n1` and `n2`, on this machine) with the fake trainer: a pass, a crash,
//! Slurm's own TIMEOUT (said in Slurm's words), goldgate's Ctrl-C (nothing left in the queue,
//! no process left; a trainer that catches SIGTERM saves its checkpoint within the grace
//! period), a job cancelled by someone else's `scancel`, a node set DOWN under a running job
//! (NODE_FAIL, retried on another node and both attempts recorded), a two-node job whose both
//! nodes are sampled, a job pending in a DOWN partition (shown pending, cancelled at the
//! pending limit, not at `--timeout`), a job that can never start (cancelled at once; pending
//! and queued time one figure), goldgate SIGKILLed (its jobs found and cancelled by `goldgate
//! cancel` and by the next `run`; the output it never read masked into the console log by
//! `cancel`, Slurm's raw copy kept only with `--keep-raw-log`), per-rank logs stored masked,
//! and slurmctld stopped for 12 s and for 45 s (said when it
//! stops and answers; waited out; given up past the outage limit, cancelled when the
//! controller answers in time, else said how to cancel). A [`StoppedController`] guard starts
//! slurmctld again however a test that stopped it ends.
//!
//! Without a cluster (a developer machine) every test prints one `skipped:` line and passes;
//! with `GOLDGATE_SLURM_REQUIRED=1` (what `.ci/run` sets once the cluster is up) a missing
//! cluster fails them instead. Single-node tests run on `n1`; tests that take a node down,
//! need both nodes or stop the controller hold the cluster lock ([`ClusterLock`], a file
//! lock: other checkouts' test runs use the same cluster) exclusively, every other test
//! shared, so that no test sees another's disruption.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goldgate_schema::{Outcome, RunIndex, RunRecord};

use crate::common;

use common::cli::{self, text};
use common::results::{another_value, walk};

/// A lock on the machine's one test cluster, held for a test's whole run: shared by tests that
/// only add work, exclusive for tests that disrupt it (a node DOWN, slurmctld stopped). A file
/// lock (`flock`), so that it also holds between processes: every checkout's `cargo test` on
/// this machine runs these tests against the same cluster.
struct ClusterLock(#[allow(dead_code)] std::fs::File);

fn lock_file() -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(std::env::temp_dir().join("goldgate-slurm-tests.lock"))
        .unwrap()
}

fn shared() -> ClusterLock {
    let file = lock_file();
    file.lock_shared().unwrap();
    ClusterLock(file)
}

fn exclusive() -> ClusterLock {
    let file = lock_file();
    file.lock().unwrap();
    ClusterLock(file)
}

const CONFIG: &str = "platforms:
  n1:
    gpus_per_node: 1
    executor: slurm
    slurm:
      sbatch_args: [--nodelist=n1]
      poll_interval: 300ms
  any:
    gpus_per_node: 1
    executor: slurm
    slurm:
      poll_interval: 300ms
  both:
    gpus_per_node: 1
    nodes: 2
    executor: slurm
    slurm:
      poll_interval: 300ms
  parked:
    gpus_per_node: 1
    executor: slurm
    slurm:
      partition: parked
      poll_interval: 300ms
      pending_limit: 1h
  toobig:
    gpus_per_node: 1
    nodes: 5
    executor: slurm
    slurm:
      poll_interval: 300ms
  brittle:
    gpus_per_node: 1
    executor: slurm
    slurm:
      sbatch_args: [--nodelist=n1]
      poll_interval: 300ms
      outage_limit: 2s
";

/// A fake-trainer case of `iters` steps of `step_ms` with more arguments.
fn case(iters: u32, step_ms: u32, extra: &str) -> String {
    format!(
        "TEST_TYPE: regular\nMODE: pretraining\nLAUNCHER: direct\nMODEL_ARGS:\n  \
         --train-iters: {iters}\n  --step-ms: {step_ms}\n  --model-mb: 8\n  --ckpt-mb: 1\n{extra}\
         GOLDGATE:\n  entry: [fake-trainer]\n  nproc: 1\n"
    )
}

/// Whether the cluster answers; prints the skip line when it does not (and fails when CI
/// said it must be there). Asked with the cluster lock held: a test that stops the controller
/// holds it exclusively, so no test asks while the controller is away on purpose.
fn cluster() -> bool {
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !up {
        assert!(
            std::env::var_os("GOLDGATE_SLURM_REQUIRED").is_none(),
            "GOLDGATE_SLURM_REQUIRED is set but no Slurm cluster answers (run .ci/slurm-cluster.sh)"
        );
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {test}: no Slurm cluster (start one with .ci/slurm-cluster.sh)"
        );
    }
    up
}

/// A folder with the config and one case, `demo/<name>`.
struct Tree {
    dir: tempfile::TempDir,
    name: String,
}

impl Tree {
    fn new(name: &str, case_text: &str) -> Tree {
        // Below /var/tmp: a folder both "nodes" of this machine see, like a shared filesystem.
        let dir = tempfile::Builder::new()
            .prefix("goldgate-slurm-test-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let case = dir.path().join("cases/demo").join(name);
        std::fs::create_dir_all(&case).unwrap();
        std::fs::write(case.join("model_config.yaml"), case_text).unwrap();
        std::fs::write(dir.path().join("goldgate.yaml"), CONFIG).unwrap();
        Tree {
            dir,
            name: name.to_owned(),
        }
    }

    /// A tree whose job (`iters` steps of 50 ms) holds at iteration `at` for as long as its
    /// hold file exists: a test that needs the job alive through something slow (stopping and
    /// starting slurmctld under load) lets it go on with [`Tree::release`].
    fn holding(name: &str, iters: u32, at: u32) -> Tree {
        let tree = Tree::new(name, "");
        let hold = tree.hold_file();
        std::fs::write(&hold, "").unwrap();
        let extra = format!(
            "  --hold-at-step: {at}\n  --hold-file: {}\n",
            hold.display()
        );
        let config = tree
            .path()
            .join("cases/demo")
            .join(name)
            .join("model_config.yaml");
        // This build's fake trainer (`goldgate fake-trainer`): a `fake-trainer` binary beside it
        // is rebuilt only by a workspace build, and one older than the hold flags ignores them.
        let text = case(iters, 50, &extra)
            .replace("entry: [fake-trainer]", "entry: [goldgate, fake-trainer]");
        assert!(text.contains("entry: [goldgate, fake-trainer]"), "{text}");
        std::fs::write(config, text).unwrap();
        tree
    }

    fn hold_file(&self) -> PathBuf {
        self.path().join("hold")
    }

    /// Lets a [`Tree::holding`] job go on.
    fn release(&self) {
        std::fs::remove_file(self.hold_file()).unwrap();
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, platform: &str, extra: &[&str]) -> Command {
        let mut cmd = cli::goldgate();
        cmd.current_dir(self.path())
            .args(["run", "--root", "cases", "--out", "out", "--no-compare"])
            .args(["--platform", platform])
            .arg(format!("demo/{}", self.name))
            .args(extra)
            .stdin(Stdio::null());
        if !extra.contains(&"--grace") {
            cmd.args(["--grace", "1s"]);
        }
        cmd
    }

    fn records(&self) -> Vec<RunRecord> {
        common::results::records(&self.path().join("out"))
    }

    /// The goldgate job id of this tree's job.
    fn job_id(&self) -> String {
        format!("demo/{}@default#1", self.name)
    }

    /// The Slurm job name of this tree's job (`goldgate:demo/<name>@default_1`).
    fn job_name(&self) -> String {
        format!("goldgate:demo/{}@default_1", self.name)
    }

    /// `squeue` lines (id|state|nodes) of this tree's jobs still in the queue (by job name
    /// and working folder: another checkout's test may run a job of the same name).
    fn in_queue(&self) -> Vec<String> {
        let out = Command::new("squeue")
            .args(["-h", "-n", &self.job_name(), "-o", "%i|%T|%N|%Z"])
            .output()
            .unwrap();
        let dir = format!("|{}", self.path().display());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(dir.as_str()))
            .map(str::to_owned)
            .collect()
    }

    /// Waits until the queue holds none of this tree's jobs.
    fn wait_for_empty_queue(&self) -> bool {
        wait(Duration::from_secs(120), || self.in_queue().is_empty())
    }

    /// The `run.json` of every run under `out`.
    fn indexes(&self) -> Vec<RunIndex> {
        goldgate_core::records::load_indexes(&self.path().join("out"))
            .unwrap()
            .into_iter()
            .map(|(_, i)| i)
            .collect()
    }

    /// The console log of the first attempt of the newest run's job.
    fn console(&self) -> String {
        let mut logs: Vec<PathBuf> = walk(&self.path().join("out"))
            .into_iter()
            .filter(|p| p.ends_with("logs/console.log"))
            .collect();
        logs.sort();
        std::fs::read_to_string(logs.last().unwrap()).unwrap()
    }

    /// Waits until a console log of the job shows iteration `n`.
    fn wait_for_iteration(&self, n: u32) {
        let found = wait(Duration::from_secs(180), || self.reached(n));
        assert!(found, "the job never reached iteration {n}");
    }

    /// Whether a console log of the job shows iteration `n` now.
    fn reached(&self, n: u32) -> bool {
        let want = format!("iteration {n:>8}/");
        walk(&self.path().join("out"))
            .iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with("console"))
            })
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&want)))
    }
}

/// Polls `done` until it holds or `limit` passed.
fn wait(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Processes whose command line mentions `needle` (every job's argv holds its folder).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn a_passing_job_is_recorded_with_its_queue_time() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let tree = Tree::new("pass", &case(5, 20, ""));
    let out = tree.run("n1", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.attempts.len(), 1);
    assert!(r.attempts[0].queued_seconds.is_some(), "{:?}", r.attempts);
    let log = std::fs::read_to_string(
        tree.path()
            .join("out")
            .join(&r.run_id)
            .join("demo/pass/default/1/logs/console.log"),
    )
    .unwrap();
    assert!(log.contains("iteration        5/       5"), "{log}");
    // goldgate finished on the script's exit line; Slurm clears the job right after.
    assert!(wait(Duration::from_secs(30), || tree.in_queue().is_empty()));
}

#[test]
fn a_crash_is_a_failure_with_its_exit_code_and_line() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let tree = Tree::new("crash", &case(5, 20, "  --crash-at-step: 2\n"));
    let out = tree.run("n1", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(r.outcome, Outcome::Failed { exit_code: 1 });
    // The traceback's exception explains the failure better than Slurm's state line (issue
    // 14 item 6); Slurm's line is the failure line only when the log explains nothing.
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert_eq!(
        line,
        "RuntimeError: fake-trainer planted crash at iteration 2 (--crash-at-step)"
    );
    assert!(!r.attempts[0].log_tail.is_empty());
}

#[test]
fn slurms_own_time_limit_ends_a_hung_job_as_timed_out() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    // `--timeout 1s` becomes `--time=1` (Slurm counts minutes); Slurm ends the job.
    let tree = Tree::new("hang", &case(5, 20, "  --hang-at-step: 2\n"));
    let out = tree.run("n1", &["--timeout", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(
        r.outcome,
        Outcome::TimedOut {
            after_seconds: 60.0
        }
    );
    // Slurm's end state and reason, not the signal's echo in the log (`srun: error: n1: task
    // 0: Terminated`).
    let id = tree.indexes()[0].jobs[0].scheduler_job_ids[0];
    assert_eq!(
        r.attempts[0].failure_line.as_deref(),
        Some(
            format!(
                "Slurm job {id} ended TIMEOUT: it ran past its time limit (--time) (reason: TimeLimit)"
            )
            .as_str()
        )
    );
    let script = walk(tree.path())
        .into_iter()
        .find(|p| p.ends_with("slurm-job.attempt1.sh"))
        .unwrap();
    assert!(
        std::fs::read_to_string(script)
            .unwrap()
            .contains("#SBATCH --time=1\n")
    );
    assert!(processes_mentioning(&tree.path().display().to_string()).is_empty());
}

#[test]
fn ctrl_c_cancels_the_job_and_leaves_nothing_behind() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let tree = Tree::new("long", &case(600, 50, ""));
    let mut child = tree
        .run("n1", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    tree.wait_for_iteration(2);
    let status = cli::ctrl_c(&mut child);
    assert_eq!(status.code(), Some(3));
    assert_eq!(tree.records()[0].outcome, Outcome::Interrupted);
    assert_eq!(tree.in_queue(), Vec::<String>::new(), "still in the queue");
    assert_eq!(
        processes_mentioning(&tree.path().display().to_string()),
        Vec::<String>::new()
    );
}

#[test]
fn a_job_cancelled_outside_goldgate_is_said_in_slurms_words() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let tree = Tree::new("cancelled", &case(600, 50, ""));
    let child = tree
        .run("n1", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tree.wait_for_iteration(2);
    let id = tree.indexes()[0].jobs[0].scheduler_job_ids[0];
    let scancel = Command::new("scancel")
        .arg(id.to_string())
        .output()
        .unwrap();
    assert!(scancel.status.success(), "{}", text(&scancel));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(r.outcome, Outcome::Interrupted);
    // Slurm's CANCELLED and what it means, not the log's `slurmstepd: error: *** JOB 12 ON n1
    // CANCELLED AT ...` or `srun: error: n1: task 0: Terminated`.
    let said: Vec<&str> = std::str::from_utf8(&out.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("FAIL") || l.starts_with("      error:"))
        .collect();
    insta::with_settings!({filters => vec![
        (r"Slurm job \d+", "Slurm job [id]"),
        (r"in \d+\.\d s", "in [wall] s"),
    ]}, {
        insta::assert_snapshot!(said.join("\n"));
    });
    assert!(tree.wait_for_empty_queue(), "still in the queue");
}

#[test]
fn the_timeout_help_says_that_queue_time_does_not_count() {
    let out = cli::goldgate().args(["run", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    let paragraph = |flag: &str| -> String {
        let start = help
            .find(&format!("{flag} <"))
            .unwrap_or_else(|| panic!("{help}"));
        let rest = &help[start + flag.len()..];
        let end = rest.find("\n      --").unwrap_or(rest.len());
        rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let timeout = paragraph("--timeout");
    assert!(
        timeout.contains("time pending in the queue does not count; `--pending-limit` bounds that"),
        "{timeout}"
    );
    let pending = paragraph("--pending-limit");
    assert!(
        pending.contains("`--timeout` counts running time only"),
        "{pending}"
    );
}

#[test]
fn a_node_set_down_under_a_job_fails_it_and_the_retry_excludes_that_node() {
    let _cluster = exclusive();
    if !cluster() {
        return;
    }
    let tree = Tree::new("nodefail", &case(40, 50, ""));
    let child = tree
        .run("any", &["--retries", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    tree.wait_for_iteration(2);
    let node = tree.in_queue()[0].rsplit('|').next().unwrap().to_owned();
    assert!(node == "n1" || node == "n2", "{node}");
    let down = Command::new("scontrol")
        .args([
            "update",
            &format!("nodename={node}"),
            "state=DOWN",
            "reason=goldgate-test",
        ])
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", text(&down));
    // The first attempt ends NODE_FAIL; the retry leaves the failed node out.
    let retry = wait(Duration::from_secs(60), || {
        walk(&tree.path().join("out"))
            .iter()
            .any(|p| p.ends_with("slurm-job.attempt2.sh"))
    });
    let out = child.wait_with_output();
    // ReturnToService=2 may have brought it back already; then RESUME is refused.
    let _ = Command::new("scontrol")
        .args(["update", &format!("nodename={node}"), "state=RESUME"])
        .output();
    assert!(retry, "no second attempt was submitted");
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(r.outcome, Outcome::Passed);
    assert_eq!(r.attempts.len(), 2, "{:?}", r.attempts);
    assert_eq!(
        r.attempts[0].outcome,
        Outcome::Infrastructure {
            state: "NODE_FAIL".to_owned()
        }
    );
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert!(line.contains(&format!("a retry excludes {node}")), "{line}");
    let script = walk(tree.path())
        .into_iter()
        .find(|p| p.ends_with("slurm-job.attempt2.sh"))
        .unwrap();
    let script = std::fs::read_to_string(script).unwrap();
    assert!(
        script.contains(&format!("#SBATCH --exclude={node}\n")),
        "{script}"
    );
    assert_ne!(r.fingerprint.host, node, "the retry ran on the failed node");
    // Both attempts' Slurm job ids are in run.json.
    assert_eq!(tree.indexes()[0].jobs[0].scheduler_job_ids.len(), 2);
}

#[test]
fn a_two_node_job_runs_one_task_per_node_and_samples_both() {
    let _cluster = exclusive();
    if !cluster() {
        return;
    }
    let tree = Tree::new("twonode", &case(10, 50, "  --model-mb: 32\n"));
    let out = tree
        .run("both", &["--sample-interval", "20ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(r.outcome, Outcome::Passed);
    let hosts: Vec<&str> = r.nodes.iter().map(|n| n.host.as_str()).collect();
    assert_eq!(hosts, ["n1", "n2"], "{:?}", r.warnings);
    for node in &r.nodes {
        // Each node's trainer holds a 32 MiB model: the node's own sampler saw it.
        let rss = node.host_peak_rss_bytes.unwrap_or(0);
        assert!(rss >= 32 << 20, "{}: {rss} bytes", node.host);
        assert!(!node.timeline.t_seconds.is_empty());
    }
    let max = r.nodes.iter().filter_map(|n| n.host_peak_pss_bytes).max();
    assert_eq!(r.last_value("host-peak-pss-bytes"), max.map(|b| b as f64));
    // results.json's memory section holds the maximum across nodes too, not node 0's.
    assert_eq!(r.memory.host_peak_pss_bytes, max);
    let script = walk(tree.path())
        .into_iter()
        .find(|p| p.ends_with("slurm-job.attempt1.sh"))
        .unwrap();
    let script = std::fs::read_to_string(script).unwrap();
    assert!(script.contains("#SBATCH --nodes=2\n"), "{script}");
    assert!(
        script.contains("srun --overlap --ntasks-per-node=1 "),
        "{script}"
    );
}

/// Partition `parked` on `n1`, DOWN: a job sent there pends with `PartitionDown`. Made at
/// run time (`scontrol create`), so the cluster's config stays as `.ci/slurm-cluster.sh`
/// writes it.
fn parked_partition() {
    let show = Command::new("scontrol")
        .args(["show", "partition", "parked"])
        .output()
        .unwrap();
    if show.status.success() {
        return;
    }
    let made = Command::new("scontrol")
        .args(["create", "partitionname=parked", "nodes=n1", "state=down"])
        .output()
        .unwrap();
    // Another test may have made it in between.
    let again = Command::new("scontrol")
        .args(["show", "partition", "parked"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&made));
}

#[test]
fn a_job_in_a_down_partition_is_shown_pending_and_cancelled_at_the_pending_limit() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    parked_partition();
    let tree = Tree::new("parked", &case(5, 20, ""));
    // The flag wins over the platform's `pending_limit: 1h`; `--timeout` counts running time
    // only, so the job waits out its pending limit.
    let out = tree
        .run("parked", &["--pending-limit", "3s", "--timeout", "1s"])
        .env("GOLDGATE_HEARTBEAT", "1s")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let log = text(&out);
    assert!(
        log.contains(&format!("pend   {}: PartitionDown", tree.job_id())),
        "{log}"
    );
    assert!(
        log.contains(" pending ") && !log.contains("no iteration yet"),
        "{log}"
    );
    let r = &tree.records()[0];
    let Outcome::NotStarted {
        reason,
        pending_seconds,
    } = &r.outcome
    else {
        panic!("{:?}", r.outcome);
    };
    assert_eq!(reason, "PartitionDown");
    assert!(*pending_seconds >= 3.0, "{pending_seconds}");
    assert_eq!(Some(*pending_seconds), r.attempts[0].queued_seconds);
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert!(
        line.contains(&format!(
            "for {pending_seconds:.0} s, past the pending limit"
        )),
        "{line}"
    );
    assert_eq!(r.attempts.len(), 1);
    assert!(tree.wait_for_empty_queue(), "still in the queue");
}

#[test]
fn a_job_that_can_never_start_is_cancelled_at_once() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    // Five nodes on a two-node cluster: Slurm keeps it pending as `PartitionConfig`.
    let tree = Tree::new("toobig", &case(5, 20, ""));
    let started = Instant::now();
    let out = tree.run("toobig", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // Not the default pending limit of an hour: at the first poll that names the reason.
    assert!(started.elapsed() < Duration::from_secs(120));
    let r = &tree.records()[0];
    assert!(
        matches!(&r.outcome, Outcome::NotStarted { reason, .. } if reason == "PartitionConfig"),
        "{:?}",
        r.outcome
    );
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert!(line.contains("cannot start"), "{line}");
    // It never started: all of its time in the queue was pending, one figure in both places.
    let Outcome::NotStarted {
        pending_seconds, ..
    } = r.outcome
    else {
        unreachable!()
    };
    assert_eq!(Some(pending_seconds), r.attempts[0].queued_seconds);
    assert!(tree.wait_for_empty_queue(), "still in the queue");
}

#[test]
fn ctrl_c_gives_a_trainer_that_catches_sigterm_its_grace_to_save() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let extra = "  --exit-signal-handler: true\n  --save: ${CHECKPOINT_SAVE_PATH}\n  --save-interval: 1000\n";
    let tree = Tree::new("graceful", &case(600, 50, extra));
    let mut child = tree
        .run("any", &["--grace", "60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    tree.wait_for_iteration(2);
    let interrupted = Instant::now();
    let status = cli::ctrl_c(&mut child);
    assert_eq!(status.code(), Some(3));
    // The trainer saved and exited on its own, long before the grace period ran out.
    assert!(interrupted.elapsed() < Duration::from_secs(40));
    assert_eq!(tree.records()[0].outcome, Outcome::Interrupted);
    let log = tree.console();
    assert!(
        log.contains("exiting program after receiving SIGTERM."),
        "{log}"
    );
    assert!(
        log.contains("successfully saved checkpoint from iteration"),
        "{log}"
    );
    assert!(log.contains("goldgate: the nodes exited with 0"), "{log}");
    assert!(tree.wait_for_empty_queue(), "still in the queue");
}

/// SIGKILL to goldgate: nothing of it cancels the job.
fn kill9(child: &mut std::process::Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
}

#[test]
fn a_killed_goldgates_jobs_are_cancelled_by_cancel_and_by_the_next_run() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let tree = Tree::new("orphan", &case(600, 50, ""));
    let spawn = || {
        tree.run("n1", &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut child = spawn();
    tree.wait_for_iteration(2);
    kill9(&mut child);
    let index = &tree.indexes()[0];
    assert!(index.finished_at.is_none());
    let ids = index.jobs[0].scheduler_job_ids.clone();
    assert_eq!(ids.len(), 1, "{index:?}");
    assert_eq!(tree.in_queue().len(), 1, "the orphan runs on");
    let comment = Command::new("squeue")
        .args(["-h", "-j", &ids[0].to_string(), "-o", "%k"])
        .output()
        .unwrap();
    let comment = String::from_utf8_lossy(&comment.stdout).trim().to_owned();
    assert_eq!(comment, format!("goldgate-run={}", index.run_id));
    let out = cli::goldgate()
        .current_dir(tree.path())
        .args(["cancel", "--out", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = format!(
        "goldgate: cancelled 1 Slurm job(s) of run {}: {}",
        index.run_id, ids[0]
    );
    assert!(text(&out).contains(&said), "{}", text(&out));
    assert!(tree.wait_for_empty_queue(), "cancel left the job");
    // Killed again; the next run on the folder cancels the orphan before it submits.
    for entry in std::fs::read_dir(tree.path().join("out")).unwrap() {
        std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
    }
    let mut child = spawn();
    tree.wait_for_iteration(2);
    kill9(&mut child);
    let case_file = tree.path().join("cases/demo/orphan/model_config.yaml");
    std::fs::write(&case_file, case(3, 20, "")).unwrap();
    let out = tree.run("n1", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("goldgate: cancelled 1 Slurm job(s) of run "),
        "{}",
        text(&out)
    );
    assert!(tree.wait_for_empty_queue(), "the orphan is still queued");
    // Slurm's raw output of the killed run's job is settled too, not left behind.
    let raw: Vec<PathBuf> = walk(&tree.path().join("out"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("slurm-output."))
        .collect();
    assert!(raw.is_empty(), "{raw:?}");
}

/// A direct-launcher case running `sh <cases/demo/<name>/job.sh> <the job's logs/>` (a file:
/// goldgate fills placeholders in entry words, the job's shell expands `$HF_TOKEN`).
fn script_tree(name: &str, script: &str) -> Tree {
    let tree = Tree::new(name, "");
    let case = tree.path().join("cases/demo").join(name);
    std::fs::write(case.join("job.sh"), script).unwrap();
    let yaml = format!(
        "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nGOLDGATE:\n  \
         entry: [\"sh\", {:?}, \"${{LOG_DIR}}\"]\n  nproc: 1\n",
        case.join("job.sh").display().to_string()
    );
    std::fs::write(case.join("model_config.yaml"), yaml).unwrap();
    tree
}

/// Every file under the tree's `out/` holding `needle`, sorted.
fn files_holding(tree: &Tree, needle: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walk(&tree.path().join("out"))
        .into_iter()
        .filter(|p| p.is_file())
        .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(needle))
        .collect();
    found.sort();
    found
}

/// The job folder of the tree's only run.
fn job_dir(tree: &Tree) -> PathBuf {
    let index = &tree.indexes()[0];
    tree.path()
        .join("out")
        .join(&index.run_id)
        .join(&index.jobs[0].dir)
}

/// A job that writes a per-rank log under `logs/` holding its secret (as torchrun's
/// `--log-dir` does).
const RANK_LOG: &str = "d=\"$1/none_x/attempt_0/0\"; mkdir -p \"$d\"; \
                        echo \"rank 0 token $HF_TOKEN\" > \"$d/stdout.log\"\n";

/// In the job folder `job` of a [`RANK_LOG`] job, the rank's log is stored with its secret
/// masked, and `secret` is only in the raw copies of the console and of that log, which are
/// kept only with `--keep-raw-log`.
fn assert_rank_log_masked_and_raw_only_on_request(
    tree: &Tree,
    job: &Path,
    secret: &str,
    keep_raw: bool,
) {
    let logs = job.join("logs");
    assert_eq!(
        std::fs::read_to_string(logs.join("none_x/attempt_0/0/stdout.log")).unwrap(),
        "rank 0 token <redacted>\n"
    );
    let kept = match keep_raw {
        true => vec![
            logs.join("console.raw.log"),
            logs.join("none_x/attempt_0/0/stdout.raw.log"),
        ],
        false => Vec::new(),
    };
    assert_eq!(
        files_holding(tree, secret),
        kept,
        "a raw copy only on request"
    );
}

#[test]
fn a_slurm_jobs_per_rank_logs_are_stored_redacted_and_raw_only_on_request() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let secret = "hf-slurm-rank-token-31337";
    for keep_raw in [false, true] {
        let tree = script_tree("ranks", &format!("{RANK_LOG}echo \"login $HF_TOKEN\"\n"));
        let extra: &[&str] = if keep_raw { &["--keep-raw-log"] } else { &[] };
        let out = tree
            .run("n1", extra)
            .env("HF_TOKEN", secret)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_rank_log_masked_and_raw_only_on_request(&tree, &job_dir(&tree), secret, keep_raw);
    }
}

/// A secret the case sets from another of the caller's variables (`HF_TOKEN: "${CALLER_A}"`)
/// is the value the Slurm job sees, as a local job does, and is masked, whatever goldgate's own
/// `HF_TOKEN` is.
#[test]
fn a_secret_the_case_sets_is_what_a_slurm_job_sees_and_is_masked() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let (own, fed) = ("hf-goldgates-own-token-4401", "hf-fed-by-the-case-4402");
    let tree = script_tree("fedsecret", "echo \"token $HF_TOKEN\"\n");
    let yaml = tree.path().join("cases/demo/fedsecret/model_config.yaml");
    let case = std::fs::read_to_string(&yaml).unwrap();
    let case = case.replace(
        "GOLDGATE:",
        "ENV_VARS:\n  HF_TOKEN: \"${CALLER_A}\"\nGOLDGATE:",
    );
    std::fs::write(&yaml, case).unwrap();
    let out = tree
        .run("n1", &["--keep-raw-log"])
        .env("HF_TOKEN", own)
        .env("CALLER_A", fed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let logs = job_dir(&tree).join("logs");
    let raw = std::fs::read_to_string(logs.join("console.raw.log")).unwrap();
    assert!(raw.contains(&format!("token {fed}\n")), "{raw}");
    assert!(
        tree.console().contains("token <redacted>\n"),
        "{}",
        tree.console()
    );
    assert!(files_holding(&tree, own).is_empty());
    assert_eq!(files_holding(&tree, fed), [logs.join("console.raw.log")]);
}

/// A Slurm job of `name` that prints `HF_TOKEN` (= `secret`) until it is cancelled, after its
/// goldgate is gone too, run with `--keep-raw-log` when `keep_raw`: its goldgate is killed
/// (kill -9) once the console log shows a few lines, and the test waits until Slurm's raw output
/// holds a line goldgate never read, which it returns with the tree.
fn killed_mid_printing_job(name: &str, secret: &str, keep_raw: bool) -> (Tree, String) {
    let script = format!(
        "{RANK_LOG}echo \"login $HF_TOKEN\"; echo ready\n\
         i=0; while [ $i -lt 1200 ]; do echo \"late $i $HF_TOKEN\"; i=$((i+1)); sleep 0.1; done\n"
    );
    let tree = script_tree(name, &script);
    let extra: &[&str] = if keep_raw { &["--keep-raw-log"] } else { &[] };
    let mut child = tree
        .run("n1", extra)
        .env("HF_TOKEN", secret)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait(Duration::from_secs(180), || first_console(&tree)
            .contains("late 3 ")),
        "the job never printed"
    );
    kill9(&mut child);
    // The last line goldgate read; Slurm's raw output, secrets and all, outlives goldgate, and
    // the job prints on.
    let last_read: u32 = first_console(&tree)
        .lines()
        .filter_map(|l| l.strip_prefix("late ")?.split(' ').next()?.parse().ok())
        .max()
        .unwrap();
    let unread = format!("late {} ", last_read + 10);
    let raw = job_dir(&tree).join("slurm-output.attempt1.log");
    assert!(wait(Duration::from_secs(60), || {
        std::fs::read_to_string(&raw).is_ok_and(|t| t.contains(&unread))
    }));
    (tree, unread)
}

/// The first console log under the tree's `out/` as it is now (empty before there is one).
fn first_console(tree: &Tree) -> String {
    let path = walk(&tree.path().join("out"))
        .into_iter()
        .find(|p| p.ends_with("logs/console.log"));
    path.and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

#[test]
fn a_killed_goldgates_slurm_output_is_masked_into_its_log_by_cancel_and_kept_raw_only_on_request() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let secret = "hf-slurm-left-token-8086";
    for keep_raw in [false, true] {
        let (tree, unread) = killed_mid_printing_job("leftraw", secret, keep_raw);
        let job = job_dir(&tree);
        let raw = job.join("slurm-output.attempt1.log");
        let out = cli::goldgate()
            .current_dir(tree.path())
            .args(["cancel", "--out", "out"])
            .env("HF_TOKEN", secret)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            text(&out).contains("goldgate: cancelled 1 Slurm job(s) of run"),
            "{}",
            text(&out)
        );
        assert!(!raw.exists(), "Slurm's raw output is left");
        let settled = first_console(&tree);
        assert!(
            settled.contains("login <redacted>\nready\n")
                && settled.contains(&format!("{unread}<redacted>\n")),
            "what goldgate never read is not in the log: {settled}"
        );
        assert_rank_log_masked_and_raw_only_on_request(&tree, &job, secret, keep_raw);
        assert!(tree.wait_for_empty_queue(), "cancel left the job");
    }
}

/// The environment that cleans up after a killed goldgate holds the run's secret under its
/// name, but another value (a rotated token, another CI job's): that value is not trusted to
/// mask the output, so the run's value reaches no file but the raw copies kept on request, and
/// the warning names the variable.
#[test]
fn a_killed_goldgates_slurm_output_whose_secret_now_holds_another_value_is_left_out_by_cancel() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let secret = "hf-slurm-old-token-6061";
    for keep_raw in [false, true] {
        let (tree, _unread) = killed_mid_printing_job("leftrotated", secret, keep_raw);
        let job = job_dir(&tree);
        let raw = job.join("slurm-output.attempt1.log");
        let out_dir = tree.path().join("out");
        let rotated = another_value(&out_dir, "HF_TOKEN", secret, "hf-slurm-new-token-");
        let out = cli::goldgate()
            .current_dir(tree.path())
            .args(["cancel", "--out", "out"])
            .env("HF_TOKEN", &rotated)
            .output()
            .unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "{said}");
        let kept = match keep_raw {
            true => vec![
                job.join("logs/console.raw.log"),
                job.join("logs/none_x/attempt_0/0/stdout.raw.log"),
            ],
            false => Vec::new(),
        };
        assert_eq!(
            files_holding(&tree, secret),
            kept,
            "a raw copy only on request"
        );
        assert!(
            said.contains("warning: job ")
                && said.contains("lacks the run's value of HF_TOKEN (it holds another)"),
            "{said}"
        );
        assert!(!said.contains(secret) && !said.contains(&rotated), "{said}");
        assert!(!raw.exists(), "Slurm's raw output is left");
        let settled = first_console(&tree);
        assert!(
            settled.contains("login <redacted>\n") && settled.contains("are not kept"),
            "{settled}"
        );
        let rank = job.join("logs/none_x/attempt_0/0/stdout.log");
        assert!(
            std::fs::read_to_string(&rank)
                .unwrap()
                .contains("this log's text is not kept"),
            "the rank log is withheld"
        );
        assert!(tree.wait_for_empty_queue(), "cancel left the job");
    }
}

/// The test cluster's state folder (as `.ci/slurm-cluster.sh` keeps it).
fn slurm_dir() -> PathBuf {
    std::env::var_os("GOLDGATE_SLURM_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp/goldgate-slurm"), PathBuf::from)
}

/// `program args...` as root: directly when the tests run as root (`.ci/run` in a
/// container), else through `sudo -n` (a runner whose cluster `.ci/slurm-cluster.sh` started
/// under sudo).
fn as_root(program: &str, args: &[&str]) -> Command {
    if rustix::process::geteuid().is_root() {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    } else {
        let mut cmd = Command::new("sudo");
        cmd.arg("-n").arg(program).args(args);
        cmd
    }
}

/// How long slurmctld may take to stop on SIGTERM (it saves its state first) before it is
/// killed: seconds on an idle machine, much longer on a loaded 2-core one.
const CONTROLLER_STOP_WAIT: Duration = Duration::from_secs(180);

/// How long slurmctld may take to answer again once started, and its nodes to register.
const CONTROLLER_START_WAIT: Duration = Duration::from_secs(240);

/// slurmctld stopped by a test. However the test ends — a failed assertion, a panic — the
/// controller is started again and waited for until it answers with both nodes healthy
/// ([`StoppedController::restart`] in the test, else on drop): the next test must find the
/// cluster as it was.
struct StoppedController {
    pid: rustix::process::Pid,
    restarted: bool,
}

impl StoppedController {
    /// Starts slurmctld again and waits for it; fails the test if it does not come back.
    fn restart(mut self) {
        self.restarted = true;
        if let Err(e) = start_controller(self.pid) {
            panic!("{e}");
        }
    }
}

impl Drop for StoppedController {
    fn drop(&mut self) {
        if self.restarted {
            return;
        }
        if let Err(e) = start_controller(self.pid) {
            // A panic in a drop that runs during a panic aborts the tests: said, not raised.
            let _ = writeln!(std::io::stderr(), "could not restart slurmctld: {e}");
        }
    }
}

/// Whether process `pid` is gone: exited, or a zombie. A slurmctld this test binary restarted
/// daemonizes, and its orphan is reparented to this process when a launch test in the same
/// binary made it a subreaper; it is reaped here then, and until it is, it stays a zombie that
/// `kill(pid, 0)` still finds.
fn gone(pid: rustix::process::Pid) -> bool {
    let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Stops slurmctld by its pid file (SIGTERM; SIGKILL when it has not stopped after
/// [`CONTROLLER_STOP_WAIT`]); `None` when this test cannot (not the cluster's owner). The
/// guard it returns starts it again.
fn stop_controller() -> Option<StoppedController> {
    let pid: i32 = std::fs::read_to_string(slurm_dir().join("slurmctld.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let signal = |name: &str| {
        as_root("kill", &[name, &pid.to_string()])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !signal("-TERM") {
        return None;
    }
    let pid = rustix::process::Pid::from_raw(pid)?;
    let stopped = StoppedController {
        pid,
        restarted: false,
    };
    if !wait(CONTROLLER_STOP_WAIT, || gone(pid)) {
        let _ = signal("-KILL");
        assert!(
            wait(Duration::from_secs(30), || gone(pid)),
            "slurmctld did not stop on SIGTERM in {} s nor on SIGKILL",
            CONTROLLER_STOP_WAIT.as_secs()
        );
    }
    Some(stopped)
}

/// Starts slurmctld again (once the stopped one, `old`, is gone) and waits until it answers
/// and both nodes registered again.
fn start_controller(old: rustix::process::Pid) -> Result<(), String> {
    if !wait(CONTROLLER_STOP_WAIT, || gone(old)) {
        let _ = as_root("kill", &["-KILL", &old.as_raw_nonzero().to_string()]).output();
        if !wait(Duration::from_secs(30), || gone(old)) {
            return Err(format!("the old slurmctld (pid {old:?}) does not stop"));
        }
    }
    let started = as_root("slurmctld", &[])
        .output()
        .map_err(|e| format!("cannot run slurmctld: {e}"))?;
    if !started.status.success() {
        return Err(format!("slurmctld did not start: {}", text(&started)));
    }
    let answers = wait(CONTROLLER_START_WAIT, || {
        Command::new("sinfo")
            .args(["-h", "-o", "%t"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !answers {
        return Err(format!(
            "slurmctld did not answer within {} s of its start",
            CONTROLLER_START_WAIT.as_secs()
        ));
    }
    // Both nodes registered and responding again (`idle`, not `idle*`): a node the new
    // slurmctld has not heard from is set DOWN after SlurmdTimeout, failing the next test's
    // job with NODE_FAIL.
    let healthy = wait(CONTROLLER_START_WAIT, || {
        Command::new("sinfo")
            .args(["-h", "-N", "-p", "debug", "-o", "%t"])
            .output()
            .is_ok_and(|o| {
                let states = String::from_utf8_lossy(&o.stdout).into_owned();
                let states: Vec<&str> = states.split_whitespace().collect();
                states.len() == 2
                    && states
                        .iter()
                        .all(|s| matches!(*s, "idle" | "mix" | "alloc"))
            })
    });
    match healthy {
        true => Ok(()),
        false => Err("the nodes did not come back after slurmctld's restart".to_owned()),
    }
}

/// A child's stderr, read on a thread as it comes: a test can wait for a line while the
/// child runs.
struct Stderr {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Stderr {
    fn follow(child: &mut std::process::Child) -> Stderr {
        let pipe = child.stderr.take().expect("stderr is piped");
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = text.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        Stderr { text, reader }
    }

    fn contains(&self, needle: &str) -> bool {
        self.text.lock().unwrap().contains(needle)
    }

    /// What the child wrote so far.
    fn so_far(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// Everything, once the child closed its stderr.
    fn all(self) -> String {
        self.reader.join().unwrap();
        self.text.lock().unwrap().clone()
    }
}

/// A goldgate run of `tree` on `platform` with its stderr followed (stdout dropped).
fn spawn_followed(tree: &Tree, platform: &str) -> (std::process::Child, Stderr) {
    let mut child = tree
        .run(platform, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Stderr::follow(&mut child);
    (child, stderr)
}

/// `47s`, `1m02s`, `1h05m` (the progress lines' clock) → seconds.
fn clock_seconds(text: &str) -> Option<u64> {
    let (h, rest) = text.split_once('h').unwrap_or(("0", text));
    let (m, rest) = rest.split_once('m').unwrap_or(("0", rest));
    let s = rest.strip_suffix('s').unwrap_or("0");
    let n = |t: &str| t.parse::<u64>().ok();
    Some(n(h)? * 3600 + n(m)? * 60 + n(if s.is_empty() { "0" } else { s })?)
}

/// The skip of a test that cannot stop this cluster's slurmctld (fails where it must).
fn cannot_stop_controller() {
    let _ = writeln!(
        std::io::stderr(),
        "skipped: cannot stop this cluster's slurmctld"
    );
    assert!(std::env::var_os("GOLDGATE_SLURM_REQUIRED").is_none());
}

#[test]
fn a_controller_away_for_12_s_is_waited_out_and_a_job_given_up_meanwhile_is_cancelled_when_it_answers()
 {
    let _cluster = exclusive();
    if !cluster() {
        return;
    }
    // `patient` holds at iteration 20 until the controller is back: it lives through the
    // outage however slowly a loaded machine stops and starts slurmctld.
    let patient = Tree::holding("patient", 200, 20);
    let brittle = Tree::new("brittle", &case(3000, 50, ""));
    let (a, a_err) = spawn_followed(&patient, "n1");
    let (mut b, b_err) = spawn_followed(&brittle, "brittle");
    patient.wait_for_iteration(19);
    brittle.wait_for_iteration(2);
    let Some(controller) = stop_controller() else {
        patient.release();
        return cannot_stop_controller();
    };
    let down = Instant::now();
    // Each goldgate says it at its first failed `squeue` (which alone takes ~9 s to fail);
    // `brittle` (outage_limit 2s) gives its job up then and keeps sending `scancel` for 30 s.
    // The controller stays away at least 12 s and until both said it.
    let said = "slurm  controller not answering: ";
    let silent = wait(Duration::from_secs(120), || {
        b_err.contains(said) && a_err.contains(said)
    });
    while down.elapsed() < Duration::from_secs(12) {
        std::thread::sleep(Duration::from_millis(200));
    }
    controller.restart();
    patient.release();
    assert!(
        silent,
        "goldgate never said the controller is not answering:\n{}\n{}",
        a_err.so_far(),
        b_err.so_far()
    );
    let status = b.wait().unwrap();
    let b_text = b_err.all();
    assert_eq!(status.code(), Some(3), "{b_text}");
    let r = &brittle.records()[0];
    assert_eq!(
        r.outcome,
        Outcome::Infrastructure {
            state: "controller unreachable".to_owned()
        }
    );
    let id = brittle.indexes()[0].jobs[0].scheduler_job_ids[0];
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert_eq!(
        line,
        format!(
            "Slurm's controller did not answer for longer than slurm.outage_limit (2s); goldgate gave Slurm job {id} up and cancelled it (scancel {id})"
        )
    );
    assert!(b_text.contains(&format!("error: {line}")), "{b_text}");
    // Cancelled by goldgate itself once the controller answered: no `goldgate cancel` needed.
    assert!(
        brittle.wait_for_empty_queue(),
        "the given-up job is still queued"
    );
    // `patient` (the default limit of 10 minutes) lived through it and passed.
    let a = a.wait_with_output().unwrap();
    let a_text = a_err.all();
    assert_eq!(a.status.code(), Some(0), "{a_text}");
    assert_eq!(patient.records()[0].outcome, Outcome::Passed);
}

#[test]
fn a_controller_away_for_45_s_is_said_when_it_stops_and_when_it_answers_and_a_job_given_up_says_how_to_cancel_it()
 {
    let _cluster = exclusive();
    if !cluster() {
        return;
    }
    // Both jobs outlast the outage: `patient` holds at iteration 20 until it said that the
    // controller answers again, `brittle` runs on, given up, until `goldgate cancel`.
    let patient = Tree::holding("patient", 200, 20);
    let brittle = Tree::new("brittle", &case(4000, 50, ""));
    let (a, a_err) = spawn_followed(&patient, "n1");
    let (mut b, b_err) = spawn_followed(&brittle, "brittle");
    patient.wait_for_iteration(19);
    brittle.wait_for_iteration(2);
    let stopping = Instant::now();
    let Some(controller) = stop_controller() else {
        patient.release();
        return cannot_stop_controller();
    };
    let down = Instant::now();
    // `brittle` gives up and tries to cancel for 30 s while the controller is away.
    let exited = wait(Duration::from_secs(180), || b.try_wait().unwrap().is_some());
    while down.elapsed() < Duration::from_secs(45) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let away = down.elapsed();
    controller.restart();
    assert!(exited, "goldgate never gave the job up");
    let b_text = b_err.all();
    assert_eq!(b.wait().unwrap().code(), Some(3), "{b_text}");
    let id = brittle.indexes()[0].jobs[0].scheduler_job_ids[0];
    let line = brittle.records()[0].attempts[0]
        .failure_line
        .clone()
        .unwrap_or_default();
    let out_dir = brittle.path().join("out");
    for said in [
        "its cancel could not be sent within 30 s (",
        &format!(
            "the job may still run; once the controller answers, `goldgate cancel --out {}`",
            out_dir.display()
        ),
        &format!("(or `scancel {id}`) cancels it"),
    ] {
        assert!(line.contains(said), "{said}: {line}");
    }
    // The run's last line says it too.
    let last = b_text
        .lines()
        .find(|l| l.starts_with("goldgate: slurm executor: "))
        .unwrap_or_default();
    assert!(
        last.contains(&format!(
            "Slurm job(s) {id} given up and not cancelled may still run"
        )),
        "{b_text}"
    );
    // And it does: still running once the controller is back, until `goldgate cancel`.
    assert_eq!(brittle.in_queue().len(), 1, "{b_text}");
    let out = cli::goldgate()
        .current_dir(brittle.path())
        .args(["cancel", "--out", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        brittle.wait_for_empty_queue(),
        "the given-up job is still queued"
    );
    // `patient` said when the controller stopped answering and when it answered again, with
    // how long it was away: from its first unanswered call (while slurmctld stopped, or a
    // poll interval after) to its first answered one (its polls back off to one in 30 s).
    let answered = wait(Duration::from_secs(120), || {
        a_err.contains("slurm  controller answers again after ")
    });
    patient.release();
    assert!(answered, "{}", a_err.so_far());
    let a = a.wait_with_output().unwrap();
    let a_text = a_err.all();
    assert_eq!(a.status.code(), Some(0), "{a_text}");
    assert_eq!(patient.records()[0].outcome, Outcome::Passed);
    assert_eq!(
        a_text.matches("slurm  controller not answering: ").count(),
        1,
        "{a_text}"
    );
    let after = a_text
        .lines()
        .find_map(|l| l.strip_prefix("slurm  controller answers again after "))
        .and_then(clock_seconds);
    let after = after.unwrap_or_else(|| panic!("no line says the controller answers: {a_text}"));
    let since_stop = stopping.elapsed().as_secs();
    assert!(
        after + 2 >= away.as_secs() && after <= since_stop,
        "away {} s, stopped {since_stop} s ago, said {after} s: {a_text}",
        away.as_secs()
    );
}

#[test]
fn a_two_node_job_whose_second_node_fails_names_that_nodes_error() {
    let _cluster = exclusive();
    if !cluster() {
        return;
    }
    let extra = "  --crash-at-step: 3\n  --planted-node: 1\n";
    let tree = Tree::new("secondnode", &case(400, 50, extra));
    let out = tree.run("both", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let r = &tree.records()[0];
    assert_eq!(
        r.outcome,
        Outcome::Failed { exit_code: 1 },
        "{:?}",
        r.attempts
    );
    // Node 0 was stopped because node 1 failed; the line is node 1's own error.
    let line = r.attempts[0].failure_line.clone().unwrap_or_default();
    assert_eq!(
        line,
        "RuntimeError: fake-trainer planted crash at iteration 3 (--crash-at-step)"
    );
    assert!(tree.wait_for_empty_queue(), "still in the queue");
}

/// A log with an iteration line longer than the line cap whose part past the cap holds a
/// failure marker and another metric, between two ordinary iteration lines.
fn log_with_a_long_line() -> Vec<u8> {
    let step = |i: u32, tail: &str| {
        format!(
            " [2026-11-29 20:16:14.1] iteration {i:>8}/       3 | elapsed time per iteration \
             (ms): 10.0 | lm loss: 9.{i} |{tail}\n"
        )
    };
    let long_tail = format!(
        "{} CUDA out of memory | grad norm: 7.0 | iteration 9/3 |",
        " ".repeat(goldgate_core::log::MAX_LINE)
    );
    [step(1, ""), step(2, &long_tail), step(3, "")]
        .concat()
        .into_bytes()
}

#[test]
fn one_long_line_parses_the_same_in_a_local_run_a_slurm_run_and_extract() {
    let _cluster = shared();
    if !cluster() {
        return;
    }
    let log = log_with_a_long_line();
    let tree = Tree::new("long", "");
    let file = tree.path().join("long.log");
    std::fs::write(&file, &log).unwrap();
    let case_text = format!(
        "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nMETRICS: [\"lm loss\"]\n\
         GOLDGATE:\n  entry: [\"cat\", {:?}]\n",
        file.display().to_string()
    );
    std::fs::write(
        tree.path().join("cases/demo/long/model_config.yaml"),
        case_text,
    )
    .unwrap();
    let extracted = cli::goldgate()
        .args(["extract", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(extracted.status.code(), Some(0), "{}", text(&extracted));
    let json: serde_json::Value = serde_json::from_slice(&extracted.stdout).unwrap();
    let summary = &json["logs"][0]["summary"];
    assert_eq!(summary["long_lines"], 1);
    assert_eq!(summary["failures"], serde_json::json!([]));
    let want_loss = &summary["metrics"]["lm loss"];
    for executor in ["local", "slurm"] {
        let out = tree.run("n1", &["--executor", executor]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{executor}: {}", text(&out));
        let records = tree.records();
        let r = records.last().unwrap();
        assert_eq!(r.outcome, Outcome::Passed, "{executor}: {:?}", r.attempts);
        let loss = serde_json::to_value(&r.metrics["lm loss"]).unwrap();
        assert_eq!(&loss, want_loss, "{executor}");
        assert!(!r.metrics.contains_key("grad-norm"), "{executor}");
        let cut: Vec<&String> = r.warnings.iter().filter(|w| w.contains("64 KiB")).collect();
        assert_eq!(cut.len(), 1, "{executor}: {:?}", r.warnings);
        std::fs::remove_dir_all(tree.path().join("out")).unwrap();
    }
}
