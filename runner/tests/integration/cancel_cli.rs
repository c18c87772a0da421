//! `goldgate cancel` on a results folder, with Slurm's client commands replaced by scripts on
//! `PATH` that print a queue and record what they were asked (the real cluster's cancel is in
//! `slurm.rs`): the run is its folder's, only this user's jobs of the run are cancelled, a run
//! that may still be running is cancelled only with `--force`, and a huge queue costs
//! goldgate bounded memory.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common;

use common::cli::{self, code, text};
use common::redact::redact;

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
