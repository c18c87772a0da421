//! goldgate against a hostile case, job or file: secrets the job inherits, workflow commands
//! and control bytes in names and logs, links that would lead a write outside its folder,
//! repeated keys and file names past the file system's limit. Signals are in `faults.rs`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common;

use common::cli::{self, text};
use common::results::{another_value, walk};

/// A scratch folder: cases under `cases/m/<name>/`, results under `out/`.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        Scratch(tempfile::tempdir().unwrap())
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A direct-launcher case `cases/<name>` running `sh <its job.sh>` (a file: goldgate fills
    /// placeholders in entry words, the job's shell does in the script), with `extra` YAML lines.
    fn case(&self, name: &str, script: &str, extra: &str) {
        let job = self.write(&format!("cases/{name}/job.sh"), script);
        let yaml = format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\n{extra}GOLDGATE:\n  \
             entry: [\"sh\", {:?}]\n",
            job.display().to_string()
        );
        self.write(&format!("cases/{name}/model_config.yaml"), &yaml);
    }

    fn goldgate(&self, args: &[&str]) -> Command {
        let mut cmd = cli::goldgate();
        cmd.current_dir(self.path()).args(args).stdin(Stdio::null());
        cmd
    }

    fn run(&self, extra: &[&str]) -> Command {
        let mut args = vec!["run", "--root", "cases", "--out", "out", "--no-compare"];
        args.extend_from_slice(extra);
        self.goldgate(&args)
    }

    /// Every file goldgate wrote or kept under the scratch folder, as text (lossy), the jobs'
    /// console logs included (CI uploads them); only a raw log kept on request
    /// (`--keep-raw-log`: `*.raw.log`) is left out.
    fn kept_text(&self) -> String {
        walk(self.path())
            .into_iter()
            .filter(|p| p.is_file() && !p.to_string_lossy().ends_with(".raw.log"))
            .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Three Megatron iteration lines with `lm loss`.
const ITERATIONS: &str = "for i in 1 2 3; do echo \" [2026-11-29 20:16:14.1] iteration $i/3 | \
                          consumed samples: 32 | elapsed time per iteration (ms): 10.0 | lm \
                          loss: 9.$i | loss scale: 1.0 |\"; done";

#[test]
fn secrets_of_the_jobs_environment_never_leave_the_job() {
    let s = Scratch::new();
    let inherited = "wandb-inherited-0123456789";
    let fed = "hf-fed-through-a-placeholder-42";
    let script = "echo \"login $WANDB_API_KEY\"; echo \"HF_TOKEN is $HF_TOKEN\"; \
                  echo \"RuntimeError: bad credentials $HF_TOKEN $WANDB_API_KEY\" >&2; exit 1";
    s.case("m/leak", script, "ENV_VARS:\n  HF_TOKEN: \"${CALLER_A}\"\n");
    let o = s
        .run(&["--no-capture"])
        .env("WANDB_API_KEY", inherited)
        .env("CALLER_A", fed)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let o2 = s
        .goldgate(&["compare", "--results", "out", "--root", "cases"])
        .args(["--markdown", "report.md", "--json", "report.json"])
        .output()
        .unwrap();
    // Nothing goldgate keeps, stores or shows holds a secret, the job's console log included.
    let everything = format!("{}{}{}", text(&o), text(&o2), s.kept_text());
    for secret in [inherited, fed] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
    assert!(text(&o).contains("login <redacted>"), "{}", text(&o));
    let md = std::fs::read_to_string(s.path().join("report.md")).unwrap();
    assert!(
        md.contains("bad credentials &lt;redacted&gt; &lt;redacted&gt;"),
        "{md}"
    );
}

#[test]
fn the_console_log_is_stored_redacted_and_a_raw_copy_only_on_request() {
    let s = Scratch::new();
    let inherited = "hf-inherited-token-0123456789";
    s.case(
        "m/leak",
        "echo \"token $HF_TOKEN\"; printf 'partial %s' \"$HF_TOKEN\"",
        "",
    );
    let run = |extra: &[&str]| {
        let o = s.run(extra).env("HF_TOKEN", inherited).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };
    run(&[]);
    let logs: Vec<PathBuf> = walk(&s.path().join("out"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".log"))
        .collect();
    let console = logs
        .iter()
        .find(|p| p.ends_with("logs/console.log"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(console).unwrap(),
        "token <redacted>\npartial <redacted>"
    );
    assert_eq!(logs.len(), 1, "no raw log unless asked: {logs:?}");
    std::fs::remove_dir_all(s.path().join("out")).unwrap();
    run(&["--keep-raw-log"]);
    let raw = walk(&s.path().join("out"))
        .into_iter()
        .find(|p| p.ends_with("logs/console.raw.log"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(raw).unwrap(),
        format!("token {inherited}\npartial {inherited}")
    );
}

/// A launcher's per-rank logs (torchrun's `--log-dir` under the job's `logs/`, which CI uploads
/// with the console log) are masked as the console log is; raw only with `--keep-raw-log`.
#[test]
fn per_rank_logs_under_the_jobs_logs_are_stored_redacted() {
    let s = Scratch::new();
    let inherited = "hf-inherited-rank-token-987654";
    let job = s.write(
        "cases/m/ranks/job.sh",
        "d=\"$1/none_abc/attempt_0/0\"; mkdir -p \"$d\"; \
         echo \"rank 0 token $HF_TOKEN\" > \"$d/stdout.log\"; echo \"fine\" > \"$d/stderr.log\"",
    );
    s.write(
        "cases/m/ranks/model_config.yaml",
        &format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nGOLDGATE:\n  \
             entry: [\"sh\", {:?}, \"${{LOG_DIR}}\"]\n",
            job.display().to_string()
        ),
    );
    let rank_log = |name: &str| {
        walk(&s.path().join("out"))
            .into_iter()
            .find(|p| p.ends_with(format!("none_abc/attempt_0/0/{name}")))
    };
    for keep_raw in [false, true] {
        let _ = std::fs::remove_dir_all(s.path().join("out"));
        let extra: &[&str] = if keep_raw { &["--keep-raw-log"] } else { &[] };
        let o = s.run(extra).env("HF_TOKEN", inherited).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let stdout = rank_log("stdout.log").expect("the rank's log");
        assert_eq!(
            std::fs::read_to_string(stdout).unwrap(),
            "rank 0 token <redacted>\n"
        );
        assert_eq!(
            std::fs::read_to_string(rank_log("stderr.log").unwrap()).unwrap(),
            "fine\n"
        );
        assert!(!s.kept_text().contains(inherited));
        let raw = rank_log("stdout.raw.log");
        assert_eq!(raw.is_some(), keep_raw, "a raw copy only on request");
        if let Some(raw) = raw {
            assert!(std::fs::read_to_string(raw).unwrap().contains(inherited));
        }
    }
}

/// A run of one case whose rank writes `HF_TOKEN` (= `inherited`) into its per-rank log and then
/// waits, with goldgate killed (SIGKILL: nothing of it runs) while it waits; the rank is let go
/// after, so the folder holds what a killed goldgate leaves.
fn killed_mid_job(keep_raw: bool, inherited: &str) -> Scratch {
    let s = Scratch::new();
    let (ready, release) = (s.path().join("ready"), s.path().join("release"));
    // The rank writes its log, says so, and waits for the test to let it go.
    let job = s.write(
        "cases/m/ranks/job.sh",
        "d=\"$1/none_abc/attempt_0/0\"; mkdir -p \"$d\"; \
         echo \"rank 0 token $HF_TOKEN\" > \"$d/stdout.log\"; : > \"$2\"; \
         while [ ! -e \"$3\" ]; do sleep 0.05; done",
    );
    s.write(
        "cases/m/ranks/model_config.yaml",
        &format!(
            "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {{}}\nGOLDGATE:\n  \
             entry: [\"sh\", {:?}, \"${{LOG_DIR}}\", {:?}, {:?}]\n",
            job.display().to_string(),
            ready.display().to_string(),
            release.display().to_string()
        ),
    );
    let extra: &[&str] = if keep_raw { &["--keep-raw-log"] } else { &[] };
    let mut killed = (s.run(extra).env("HF_TOKEN", inherited))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = rustix::process::Pid::from_raw(killed.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    killed.wait().unwrap();
    std::fs::write(&release, "").unwrap();
    s
}

/// A goldgate killed mid-job (SIGKILL: nothing of it runs) never masks the per-rank logs the
/// launcher wrote; the next run into the folder does, from what `run.json` recorded and its
/// own environment's secrets, keeping the raw text only for a run that asked for it.
#[test]
fn a_killed_goldgates_per_rank_logs_are_masked_by_the_next_run_and_kept_raw_only_on_request() {
    let inherited = "hf-killed-rank-token-24680";
    for keep_raw in [false, true] {
        let s = killed_mid_job(keep_raw, inherited);
        let o = s.run(&[]).env("HF_TOKEN", inherited).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(!text(&o).contains("cannot mask"), "{}", text(&o));
        assert!(!s.kept_text().contains(inherited));
        let raw: Vec<PathBuf> = walk(&s.path().join("out"))
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(".raw.log"))
            .filter(|p| std::fs::read_to_string(p).unwrap().contains(inherited))
            .collect();
        assert_eq!(
            raw.len(),
            usize::from(keep_raw),
            "a raw copy only on request: {raw:?}"
        );
        for raw in raw {
            assert!(
                raw.ends_with("none_abc/attempt_0/0/stdout.raw.log"),
                "{raw:?}"
            );
        }
    }
}

/// The next run's environment holds the killed run's secret under its name, but another value
/// (a rotated token, another CI job's): that value is not trusted to mask the killed run's
/// per-rank logs, whose text is withheld, kept raw only on request, and the warning names the
/// variable.
#[test]
fn a_killed_goldgates_per_rank_logs_whose_secret_now_holds_another_value_are_withheld() {
    let inherited = "hf-killed-old-token-13579";
    for keep_raw in [false, true] {
        let s = killed_mid_job(keep_raw, inherited);
        let out = s.path().join("out");
        let rotated = another_value(&out, "HF_TOKEN", inherited, "hf-killed-new-token-");
        let o = s.run(&[]).env("HF_TOKEN", &rotated).output().unwrap();
        let said = text(&o);
        assert_eq!(o.status.code(), Some(0), "{said}");
        assert!(!s.kept_text().contains(inherited));
        let holding: Vec<PathBuf> = walk(&s.path().join("out"))
            .into_iter()
            .filter(|p| p.is_file())
            .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(inherited))
            .collect();
        assert_eq!(
            holding.len(),
            usize::from(keep_raw),
            "a raw copy only on request: {holding:?}"
        );
        for raw in holding {
            assert!(
                raw.ends_with("none_abc/attempt_0/0/stdout.raw.log"),
                "{raw:?}"
            );
        }
        assert!(
            said.contains("warning: job ")
                && said.contains("lacks the run's value of HF_TOKEN (it holds another)"),
            "{said}"
        );
        assert!(
            !said.contains(inherited) && !said.contains(&rotated),
            "{said}"
        );
    }
}

#[test]
fn a_record_from_another_machine_is_rendered_without_its_secrets() {
    let s = Scratch::new();
    s.case("m/leak", "echo RuntimeError: boom >&2; exit 1", "");
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let results = walk(&s.path().join("out"))
        .into_iter()
        .find(|p| p.ends_with("results.json"))
        .unwrap();
    let original = std::fs::read_to_string(&results).unwrap();
    let token = "hf_abcdefghijklmnopqrstuvwxyz0123";
    let edited = original.replace(
        "RuntimeError: boom",
        &format!("RuntimeError: HF_TOKEN={token}"),
    );
    assert_ne!(edited, original);
    std::fs::write(&results, edited).unwrap();
    let o = s
        .goldgate(&[
            "compare",
            "--results",
            "out",
            "--root",
            "cases",
            "--markdown",
            "-",
        ])
        .output()
        .unwrap();
    assert!(!text(&o).contains(token), "{}", text(&o));
    assert!(text(&o).contains("HF_TOKEN=<redacted>"), "{}", text(&o));
}

/// Whether any line of `out` starts a workflow command, or any byte is a control character
/// other than a line feed or tab.
fn hostile_lines(out: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(out);
    let mut bad: Vec<String> = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            (l.starts_with("::")
                && !l.starts_with("::error file=")
                && !l.starts_with("::warning file="))
                || l.starts_with("##[")
        })
        .map(str::to_owned)
        .collect();
    if let Some(b) = out
        .iter()
        .find(|b| b.is_ascii_control() && !matches!(b, b'\n' | b'\t'))
    {
        bad.push(format!("control byte {b:#04x}"));
    }
    bad
}

#[test]
fn names_and_log_text_cannot_start_a_workflow_command_or_carry_control_bytes() {
    let s = Scratch::new();
    let metrics = "METRICS: [\"lm loss\", \"x\\n::warning::INJECTED\", \"y\\r::error::CR\", \"z\\u0001\\u001b]0;t\\u0007\"]\n";
    s.case("m/names", ITERATIONS, metrics);
    let o = s.run(&[]).env("GITHUB_ACTIONS", "true").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let golden = s
        .path()
        .join("golden/m/names/golden_values_dev_dev_cpu.json");
    let written = std::fs::read_to_string(&golden).unwrap();
    let series = r#"{"start_step": 1, "end_step": 3, "step_interval": 1, "values": {"1": 1.0, "2": 1.0, "3": 1.0}}"#;
    let hostile = format!(
        "{{\"x\\n::warning::INJECTED\": {series}, \"w\\u001b[2J\\r::error::K\": {series}, {}",
        &written[1..]
    );
    std::fs::write(&golden, hostile).unwrap();
    let passed = s
        .goldgate(&["compare", "--results", "out", "--root", "cases"])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    for stream in [&passed.stdout, &passed.stderr] {
        let bad = hostile_lines(stream);
        assert!(
            bad.is_empty(),
            "compare of the passed run: {bad:?}\n{}",
            text(&passed)
        );
    }
    assert!(text(&passed).contains("INJECTED"), "{}", text(&passed));
    s.case(
        "m/names",
        &format!("{ITERATIONS}; printf 'Error: \\033]0;title\\007 \\001 done\\n::error::FROMLOG\\n' >&2; exit 1"),
        metrics,
    );
    let o = s.run(&[]).env("GITHUB_ACTIONS", "true").output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    for args in [
        vec!["plan", "--root", "cases"],
        vec!["list", "--root", "cases"],
        vec!["check", "--root", "cases"],
        vec!["compare", "--results", "out", "--root", "cases"],
    ] {
        let o = s
            .goldgate(&args)
            .env("GITHUB_ACTIONS", "true")
            .output()
            .unwrap();
        for stream in [&o.stdout, &o.stderr] {
            let bad = hostile_lines(stream);
            assert!(bad.is_empty(), "{args:?}: {bad:?}\n{}", text(&o));
        }
    }
}

#[test]
fn bless_writes_nothing_through_a_linked_model_folder_or_golden_file() {
    let s = Scratch::new();
    s.case("m/quick", ITERATIONS, "");
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(s.path().join("golden")).unwrap();
    std::os::unix::fs::symlink(outside.path(), s.path().join("golden/m")).unwrap();
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
    assert!(
        walk(outside.path()).iter().all(|p| !p.is_file()),
        "{:?}",
        walk(outside.path())
    );
    // A golden file that is itself a link.
    std::fs::remove_file(s.path().join("golden/m")).unwrap();
    let target = outside.path().join("bashrc");
    std::fs::write(&target, "keep me").unwrap();
    let golden = s
        .path()
        .join("golden/m/quick/golden_values_dev_dev_cpu.json");
    std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &golden).unwrap();
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

#[test]
fn repeated_keys_are_warned_about_with_their_line() {
    let s = Scratch::new();
    s.case("m/dup", ITERATIONS, "TEST_TYPE: regular\n");
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = s.goldgate(&["bless", "--from", "out"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let golden = s.path().join("golden/m/dup/golden_values_dev_dev_cpu.json");
    let written = std::fs::read_to_string(&golden).unwrap();
    let (head, tail) = written.split_at(written.find("\"lm loss\"").unwrap());
    let doubled = format!(
        "{head}{}",
        tail.replacen("\"1\": ", "\"1\": 99.0,\n            \"1\": ", 1)
    );
    assert_ne!(doubled, written);
    std::fs::write(&golden, doubled).unwrap();
    let check = s.goldgate(&["check", "--root", "cases"]).output().unwrap();
    let compare = s
        .goldgate(&["compare", "--results", "out", "--root", "cases"])
        .output()
        .unwrap();
    for o in [&check, &compare] {
        let t = text(o);
        assert!(
            t.contains("duplicate key TEST_TYPE") && t.contains("first on line 1"),
            "{t}"
        );
        assert!(
            t.contains("duplicate key \"lm loss\" › \"values\" › \"1\""),
            "{t}"
        );
    }
    assert_eq!(
        compare.status.code(),
        Some(0),
        "the last value counts: {}",
        text(&compare)
    );
}

#[test]
fn svg_file_names_stay_under_the_limit_for_legal_long_names() {
    let s = Scratch::new();
    let name = format!("{}/{}", "m".repeat(200), "c".repeat(250));
    s.case(&name, ITERATIONS, "");
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = std::fs::read_dir(s.path().join("out"))
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    let o: Output = s
        .goldgate(&["report", "--results"])
        .arg(run.path())
        .args(["--svg", "svg"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let svgs = std::fs::read_dir(s.path().join("svg")).unwrap().count();
    assert_eq!(svgs, 1);
}

#[test]
fn inputs_past_what_bounds_memory_are_refused_saying_why() {
    let s = Scratch::new();
    s.case("m/big", ITERATIONS, "");
    let o = s.run(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let grow = |path: &Path, bytes: u64| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        file.set_len(bytes).unwrap();
    };
    let results = walk(&s.path().join("out"))
        .into_iter()
        .find(|p| p.ends_with("results.json"))
        .unwrap();
    grow(&results, 40 << 20);
    let o = s
        .goldgate(&["compare", "--results", "out", "--root", "cases"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("13 times a record's size in memory"),
        "{}",
        text(&o)
    );
    let golden = s.path().join("cases/m/big/golden_values_dev_dgx_h100.json");
    grow(&golden, 20 << 20);
    let o = s.goldgate(&["check", "--root", "cases"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("11 times its size in memory"),
        "{}",
        text(&o)
    );
}
