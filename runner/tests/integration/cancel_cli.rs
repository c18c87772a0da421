//! `goldgate cancel` on a results folder, with Slurm's client commands replaced by scripts on
//! `PATH` that print a queue and record what they were asked (the real cluster's cancel is in
//! `slurm.rs`): the run is its folder's, only this user's jobs of the run are cancelled, a run
//! that may still be running is cancelled only with `--force`, and a huge queue costs
//! goldgate bounded memory; what a goldgate killed mid-job left unmasked is settled, with the
//! secrets of `cancel`'s own environment.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common;

use common::cli::{self, code, text};
use common::redact::redact;
use common::results::walk;

/// A folder with one finished local run under `out/`, and a `bin/` of fake Slurm commands.
struct Folder {
    dir: tempfile::TempDir,
    run_id: String,
}

impl Folder {
    fn new() -> Folder {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("cases/m/one/job.sh");
        cli::write(&job, "echo hello\n");
        let yaml = format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nGOLDGATE:\n  entry: [\"sh\", {:?}]\n",
            job.display().to_string()
        );
        cli::write(&dir.path().join("cases/m/one/model_config.yaml"), &yaml);
        let o = cli::goldgate()
            .current_dir(dir.path())
            .args(["run", "--root", "cases", "--out", "out", "--no-compare"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", text(&o));
        let run_id = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .flatten()
            .find(|e| e.path().join("run.json").is_file())
            .unwrap()
            .file_name()
            .to_string_lossy()
            .into_owned();
        Folder { dir, run_id }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run_json(&self) -> PathBuf {
        self.path().join("out").join(&self.run_id).join("run.json")
    }

    /// Rewrites the run's `run.json` through `edit`.
    fn edit_index(&self, edit: impl FnOnce(&mut serde_json::Value)) {
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.run_json()).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(self.run_json(), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }

    /// A fake Slurm command `bin/NAME` running `script` (sh).
    fn fake(&self, name: &str, script: &str) {
        let path = self.path().join("bin").join(name);
        cli::write(&path, &format!("#!/bin/sh\n{script}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// `squeue` printing `queue` (and noting its arguments), `scancel` noting its own.
    fn fake_slurm(&self, queue: &str) {
        let dir = self.path().display();
        std::fs::write(self.path().join("queue"), queue).unwrap();
        self.fake(
            "squeue",
            &format!("echo \"$@\" > {dir}/squeue.args\ncat {dir}/queue"),
        );
        self.fake("scancel", &format!("echo \"$@\" >> {dir}/scancel.args"));
    }

    fn cancel(&self, extra: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cli::goldgate()
            .current_dir(self.path())
            .args(["cancel", "--out", "out"])
            .args(extra)
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }
}

#[test]
fn a_run_json_that_names_another_run_cancels_nothing() {
    let f = Folder::new();
    f.fake_slurm("102|RUNNING|goldgate-run=someone-else\n");
    f.edit_index(|v| v["run_id"] = "someone-else".into());
    for extra in [&[][..], &["--run", &f.run_id, "--force"]] {
        let o = f.cancel(extra);
        assert_eq!(code(&o), 2, "{}", text(&o));
        assert_eq!(f.read("scancel.args"), "", "cancelled another run's job");
    }
    let o = f.cancel(&[]);
    let shown = redact(&text(&o), &[f.path()]).replace(&f.run_id, "<RUN>");
    insta::assert_snapshot!(shown);
}

#[test]
fn only_this_users_jobs_carrying_the_runs_comment_are_cancelled() {
    let f = Folder::new();
    let mine = format!("goldgate-run={}", f.run_id);
    f.fake_slurm(&format!(
        "101|RUNNING|{mine}\n102|RUNNING|goldgate-run=someone-else\n103|COMPLETED|{mine}\n\
         104|PENDING|{mine}\n"
    ));
    // Recorded ids are not trusted on their own: 102 is another run's.
    f.edit_index(|v| v["jobs"][0]["scheduler_job_ids"] = serde_json::json!([102]));
    let o = f.cancel(&[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(f.read("scancel.args"), "101 104\n");
    let uid = rustix::process::getuid().as_raw();
    assert!(
        f.read("squeue.args").contains(&format!("--user={uid}")),
        "{}",
        f.read("squeue.args")
    );
    assert!(
        text(&o).contains("cancelled 2 Slurm job(s) of run"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_run_whose_goldgate_still_runs_is_cancelled_only_with_force() {
    let f = Folder::new();
    f.fake_slurm(&format!("101|RUNNING|goldgate-run={}\n", f.run_id));
    // This test's own process stands for the run's goldgate: alive, on this host.
    let pid = std::process::id();
    f.edit_index(|v| {
        v.as_object_mut().unwrap().remove("finished_at");
        v["runner"]["pid"] = pid.into();
    });
    let o = f.cancel(&[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_eq!(f.read("scancel.args"), "");
    let shown = redact(&text(&o), &[f.path()])
        .replace(&f.run_id, "<RUN>")
        .replace(&pid.to_string(), "<PID>");
    insta::assert_snapshot!(shown);
    let o = f.cancel(&["--force"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(f.read("scancel.args"), "101\n");
}

#[test]
fn a_huge_queue_costs_bounded_memory() {
    let f = Folder::new();
    f.fake_slurm("");
    // 300 MB of other jobs; the fake squeue notes goldgate's peak memory once it printed all.
    let dir = f.path().display();
    f.fake(
        "squeue",
        &format!(
            "yes '4242|RUNNING|goldgate-run=another-run-of-someone' | head -c 300000000\n\
             grep VmHWM /proc/$PPID/status > {dir}/peak"
        ),
    );
    let o = f.cancel(&[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let kib: u64 = f
        .read("peak")
        .split_whitespace()
        .nth(1)
        .and_then(|k| k.parse().ok())
        .unwrap();
    assert!(kib < 64 * 1024, "peak {kib} KiB while reading the queue");
}

impl Folder {
    /// Makes the run one whose goldgate was killed while its Slurm job 101 ran: no
    /// `finished_at`, a `runner` process that is gone, the variable its secret came from named
    /// (`var`: `HF_TOKEN` inherited, or `CALLER_A` of a case's `HF_TOKEN: "${CALLER_A}"`),
    /// `keep_raw_log` as given; in the job folder Slurm's raw output (`secret` in every line,
    /// the last two never read by goldgate), the console log as goldgate wrote it before it
    /// died (half a line at its end), and a per-rank log holding `secret`. Returns the job
    /// folder.
    fn killed_mid_slurm_job(&self, secret: &str, keep_raw: bool, var: &str) -> PathBuf {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        self.edit_index(|v| {
            v.as_object_mut().unwrap().remove("finished_at");
            v["runner"]["pid"] = pid.into();
            v["keep_raw_log"] = keep_raw.into();
            v["jobs"][0]["outcome"] = serde_json::Value::Null;
            v["jobs"][0]["scheduler_job_ids"] = serde_json::json!([101]);
            v["jobs"][0]["secret_names"] = serde_json::json!([var]);
        });
        let job = self
            .path()
            .join("out")
            .join(&self.run_id)
            .join("m/one/default/1");
        let _ = std::fs::remove_file(job.join("results.json"));
        std::fs::write(
            job.join("slurm-output.attempt1.log"),
            format!("login {secret}\nstep 1 {secret}\nstep 2 {secret}\n"),
        )
        .unwrap();
        std::fs::write(job.join("logs/console.log"), "login <redacted>\nstep 1 <re").unwrap();
        let rank = job.join("logs/none_x/attempt_0/0");
        std::fs::create_dir_all(&rank).unwrap();
        std::fs::write(rank.join("stdout.log"), format!("rank 0 {secret}\n")).unwrap();
        self.fake_slurm(&format!("101|RUNNING|goldgate-run={}\n", self.run_id));
        // Cancelled, the job leaves the queue.
        let dir = self.path().display();
        self.fake(
            "scancel",
            &format!("echo \"$@\" >> {dir}/scancel.args\n: > {dir}/queue"),
        );
        job
    }

    /// `goldgate cancel` with `var` set to `token`, or with neither it nor `HF_TOKEN` set.
    fn cancel_with_token(&self, var: &str, token: Option<&str>) -> Output {
        let path = format!(
            "{}:{}",
            self.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = cli::goldgate();
        cmd.current_dir(self.path())
            .args(["cancel", "--out", "out"])
            .env("PATH", path)
            .env_remove("HF_TOKEN")
            .env_remove(var)
            .stdin(Stdio::null());
        if let Some(token) = token {
            cmd.env(var, token);
        }
        cmd.output().unwrap()
    }

    /// Every file under `out/` holding `needle`.
    fn files_holding(&self, needle: &str) -> Vec<PathBuf> {
        walk(&self.path().join("out"))
            .into_iter()
            .filter(|p| p.is_file())
            .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(needle))
            .collect()
    }

    /// No file under `out/` holds `secret` but, with `keep_raw`, the raw copies of the job
    /// folder `job`'s console log and rank log: a raw copy only on request.
    fn assert_only_raw_copies_hold(&self, secret: &str, job: &Path, keep_raw: bool) {
        let mut holding = self.files_holding(secret);
        holding.sort();
        let kept: Vec<PathBuf> = match keep_raw {
            true => vec![
                job.join("logs/console.raw.log"),
                job.join("logs/none_x/attempt_0/0/stdout.raw.log"),
            ],
            false => Vec::new(),
        };
        assert_eq!(holding, kept, "a raw copy only on request");
    }
}

#[test]
fn cancel_masks_the_output_a_killed_goldgate_never_read_into_its_log_and_keeps_no_raw_copy() {
    let secret = "hf-left-behind-token-5150";
    for (keep_raw, var) in [(false, "HF_TOKEN"), (true, "HF_TOKEN"), (false, "CALLER_A")] {
        let f = Folder::new();
        let job = f.killed_mid_slurm_job(secret, keep_raw, var);
        let o = f.cancel_with_token(var, Some(secret));
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert_eq!(f.read("scancel.args"), "101\n");
        assert!(!text(&o).contains("warning"), "{}", text(&o));
        assert_eq!(
            std::fs::read_to_string(job.join("logs/console.log")).unwrap(),
            "login <redacted>\nstep 1 <redacted>\nstep 2 <redacted>\n"
        );
        assert_eq!(
            std::fs::read_to_string(job.join("logs/none_x/attempt_0/0/stdout.log")).unwrap(),
            "rank 0 <redacted>\n"
        );
        assert!(!job.join("slurm-output.attempt1.log").exists());
        f.assert_only_raw_copies_hold(secret, &job, keep_raw);
    }
}

#[test]
fn output_whose_secret_the_cancelling_environment_lacks_is_left_out_and_said() {
    let secret = "hf-left-behind-token-5151";
    let f = Folder::new();
    let job = f.killed_mid_slurm_job(secret, false, "HF_TOKEN");
    let o = f.cancel_with_token("HF_TOKEN", None);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        f.files_holding(secret).is_empty(),
        "{:?}",
        f.files_holding(secret)
    );
    let log = std::fs::read_to_string(job.join("logs/console.log")).unwrap();
    assert!(
        log.starts_with("login <redacted>\n[goldgate: 66 bytes of the job's output"),
        "{log}"
    );
    let shown = redact(&text(&o), &[f.path()]).replace(&f.run_id, "<RUN>");
    insta::assert_snapshot!(shown);
}

/// The cancelling environment holds the run's secret under its name, but another value (a
/// rotated token): `run.json`'s check of the run's value fails, so the output is left out as
/// for a missing secret, and said, naming the variable.
#[test]
fn output_whose_secret_holds_another_value_in_the_cancelling_environment_is_left_out_and_said() {
    let (secret, rotated) = ("hf-left-behind-token-5153", "hf-rotated-token-5154");
    for keep_raw in [false, true] {
        let f = Folder::new();
        let job = f.killed_mid_slurm_job(secret, keep_raw, "HF_TOKEN");
        // A fixed salt: under a random one, another value passes 1 time in 65536.
        let salt = goldgate_core::redact::SecretSalt::from_hex("00112233445566778899aabbccddeeff")
            .unwrap();
        f.edit_index(|v| {
            v["secret_salt"] = salt.to_hex().into();
            v["jobs"][0]["secret_checks"] =
                serde_json::json!({"HF_TOKEN": salt.check(secret.as_bytes())});
        });
        let o = f.cancel_with_token("HF_TOKEN", Some(rotated));
        let said = text(&o);
        assert_eq!(code(&o), 0, "{said}");
        f.assert_only_raw_copies_hold(secret, &job, keep_raw);
        assert!(
            said.contains("lacks the run's value of HF_TOKEN (it holds another)"),
            "{said}"
        );
        assert!(!said.contains(secret) && !said.contains(rotated), "{said}");
        let log = std::fs::read_to_string(job.join("logs/console.log")).unwrap();
        assert!(
            log.starts_with("login <redacted>\n[goldgate: 66 bytes of the job's output"),
            "{log}"
        );
        if !keep_raw {
            let shown = redact(&said, &[f.path()]).replace(&f.run_id, "<RUN>");
            insta::assert_snapshot!(shown);
        }
    }
    // The run's own value passes its check: the output is masked into the log.
    let f = Folder::new();
    let job = f.killed_mid_slurm_job(secret, false, "HF_TOKEN");
    let salt = goldgate_core::redact::SecretSalt::random().unwrap();
    f.edit_index(|v| {
        v["secret_salt"] = salt.to_hex().into();
        v["jobs"][0]["secret_checks"] =
            serde_json::json!({"HF_TOKEN": salt.check(secret.as_bytes())});
    });
    let o = f.cancel_with_token("HF_TOKEN", Some(secret));
    assert!(!text(&o).contains("warning"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(job.join("logs/console.log")).unwrap(),
        "login <redacted>\nstep 1 <redacted>\nstep 2 <redacted>\n"
    );
}

/// A local run's jobs leave no queue, but a goldgate killed mid-job leaves their per-rank logs
/// unmasked (the launcher writes them itself): `cancel` masks them, on a host without Slurm too.
#[test]
fn cancel_masks_a_killed_local_runs_per_rank_logs_without_slurm() {
    let secret = "hf-left-local-token-5152";
    let f = Folder::new();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    f.edit_index(|v| {
        v.as_object_mut().unwrap().remove("finished_at");
        v["runner"]["pid"] = pid.into();
        v["jobs"][0]["outcome"] = serde_json::Value::Null;
        v["jobs"][0]["secret_names"] = serde_json::json!(["HF_TOKEN"]);
    });
    let rank =
        (f.path().join("out").join(&f.run_id)).join("m/one/default/1/logs/none_x/attempt_0/0");
    std::fs::create_dir_all(&rank).unwrap();
    std::fs::write(rank.join("stdout.log"), format!("rank 0 {secret}\n")).unwrap();
    // No Slurm command on PATH.
    std::fs::create_dir_all(f.path().join("empty")).unwrap();
    let o = cli::goldgate()
        .current_dir(f.path())
        .args(["cancel", "--out", "out"])
        .env("PATH", f.path().join("empty"))
        .env("HF_TOKEN", secret)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(rank.join("stdout.log")).unwrap(),
        "rank 0 <redacted>\n"
    );
    assert!(
        f.files_holding(secret).is_empty(),
        "{:?}",
        f.files_holding(secret)
    );
}
