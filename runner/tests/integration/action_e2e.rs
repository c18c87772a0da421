//! The composite action (`action.yml`) end to end, in a Megatron-LM fork laid out as the book's
//! worked example says (docs/book/src/guide/fork.md): Megatron's own recipes and a case from the
//! corpus, the example's `goldgate.yaml` and workflows from `docs/examples/megatron-fork/`, goldens
//! beside the case. Each job runs the action's own steps and scripts (`common::steps`: GitHub's
//! `uses:` actions replaced by what they do to the files) with the inputs the example workflow
//! gives them under the repository variables set here; the comment goes to the fake GitHub of
//! the comment bot's tests (`github_mock`), and a launcher stand-in (`fixtures/fork/launcher.sh`)
//! runs goldgate's fake trainer where the GPU job would run. goldgate itself is installed by the
//! action from a release archive made by `action/package.sh` (as the release workflow makes it)
//! and checked against its SHA256SUMS.
//!
//! What only GitHub can show is not shown here: the real artifact store and release download
//! (a folder and a `file://` URL stand in), the real checkout action (a clone does), the
//! cache, and the job-level `if:`/`environment:` rules of the example workflow.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use crate::github_mock::{FakeGithub, PR, TOKEN};

use common::steps::{self, Job, Outcome};

/// A single-rank regular GPT case of the corpus (ft_launcher, `lm loss` and `num-zeros`).
const CASE: &str = "gpt/gpt3_mcore_tp1_pp1_dist_optimizer_overlap_grad_reduce_param_gather";
const CASES: &str = "tests/functional_tests/test_cases";
const TAG: &str = concat!("v", env!("CARGO_PKG_VERSION"));
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The platform the test's runner is: the stand-in has no GPU, so a platform whose name says
/// none (the example's `h100_runner` would expect an H100).
const PLATFORM: &str = "fake_gpu";

fn repo() -> PathBuf {
    common::cli::repo()
}

fn sh(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "fork")
        .env("GIT_AUTHOR_EMAIL", "fork@example.com")
        .env("GIT_COMMITTER_NAME", "fork")
        .env("GIT_COMMITTER_EMAIL", "fork@example.com")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn git(dir: &Path, args: &[&str]) -> String {
    sh(dir, "git", args)
}

/// Whether the tools the action's scripts use are here (bash, git, curl, tar, sha256sum).
fn tools_missing() -> Option<&'static str> {
    ["bash", "git", "curl", "tar", "sha256sum"]
        .into_iter()
        .find(|t| {
            !Command::new(t)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Whether a test of the action can run here; a missing tool is a missing prerequisite.
fn tools_ready() -> bool {
    match tools_missing() {
        None => true,
        Some(tool) => {
            goldgate_core::fixtures::prereq::missing(&format!(
                "{tool} is not installed (the action's scripts use it)"
            ));
            false
        }
    }
}

/// The release a tag would publish: goldgate-TAG-TARGET.tar.gz of this build and SHA256SUMS,
/// made by the release workflow's script.
fn release(dir: &Path) -> PathBuf {
    let dist = dir.join("release");
    let script = repo().join("action/package.sh");
    let script = script.to_str().unwrap();
    sh(
        dir,
        "bash",
        &[
            script,
            "archive",
            TAG,
            TARGET,
            env!("CARGO_BIN_EXE_goldgate"),
            dist.to_str().unwrap(),
        ],
    );
    sh(dir, "bash", &[script, "sums", dist.to_str().unwrap()]);
    dist
}

/// The fork: where the workflows' checkouts come from.
struct Fork {
    dir: PathBuf,
    origin: PathBuf,
    release: PathBuf,
    store: PathBuf,
    bin: PathBuf,
    github: String,
}

impl Fork {
    /// Megatron's recipes and `CASE` from the corpus, the example's files, one commit on main.
    fn new(dir: &Path, corpus: &Path, github: &str) -> Fork {
        let origin = dir.join("fork");
        std::fs::create_dir_all(&origin).unwrap();
        git(&origin, &["init", "--quiet", "--initial-branch", "main"]);
        steps::copy_dir(
            &corpus.join("tests/test_utils/recipes"),
            &origin.join("tests/test_utils/recipes"),
        );
        steps::copy_dir(
            &corpus.join(CASES).join(CASE),
            &origin.join(CASES).join(CASE),
        );
        let example = repo().join("docs/examples/megatron-fork");
        steps::copy_dir(&example.join(".github"), &origin.join(".github"));
        // The runner of this test is one more platform of the example's file.
        let config = std::fs::read_to_string(example.join("goldgate.yaml")).unwrap();
        let config = config.replacen(
            "platforms:\n",
            &format!("platforms:\n  {PLATFORM}:\n    gpus_per_node: 1\n"),
            1,
        );
        std::fs::write(origin.join("goldgate.yaml"), config).unwrap();
        git(&origin, &["add", "-A"]);
        git(
            &origin,
            &["commit", "--quiet", "-m", "goldgate in the fork"],
        );
        // The GPU's stand-in, as torchrun and ft_launcher on the runner's PATH.
        let bin = dir.join("runner-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let launcher = repo().join("runner/tests/fixtures/fork/launcher.sh");
        for name in ["torchrun", "ft_launcher"] {
            std::os::unix::fs::symlink(&launcher, bin.join(name)).unwrap();
        }
        Fork {
            dir: dir.to_path_buf(),
            origin,
            release: release(dir),
            store: dir.join("artifact-store"),
            bin,
            github: github.to_owned(),
        }
    }

    /// A job of workflow run `run_id` for `event`; its workspace is empty (see `checkout`).
    fn job(&self, run_id: u64, event_name: &str, ref_name: &str, event: Value) -> Job {
        let root = self.dir.join(format!("run-{run_id}"));
        let (workspace, temp, home) = (root.join("work"), root.join("temp"), root.join("home"));
        for d in [&workspace, &temp, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        Job {
            action_dir: repo(),
            workspace,
            temp,
            store: self.store.clone(),
            origin: self.origin.clone(),
            run_id,
            github: json!({
                "event_name": event_name,
                "ref_name": ref_name,
                "sha": git(&self.origin, &["rev-parse", "HEAD"]),
                "repository": "o/r",
                "server_url": "https://github.example",
                "api_url": self.github,
                "token": TOKEN,
                "action_ref": TAG,
                "action_repository": "goldgate/goldgate",
                "run_id": run_id,
                "event": event,
            }),
            vars: json!({
                "GOLDGATE_RUNNER": "[\"self-hosted\", \"gpu\"]",
                "GOLDGATE_PLATFORM": PLATFORM,
                "GOLDGATE_CASES": CASE,
                "GOLDGATE_AB_CASES": CASE,
                // One argument per line, as the action's ab-args input takes them.
                "GOLDGATE_AB_ARGS": "--warmup=0\n--max-pairs=2",
            }),
            secrets: json!({}),
            env: vec![
                (
                    "PATH".to_owned(),
                    format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
                ),
                ("HOME".to_owned(), home.display().to_string()),
                ("NO_COLOR".to_owned(), "1".to_owned()),
            ],
        }
    }

    /// The example workflow's `actions/checkout` step: `commit` (a full clone), or with
    /// `shallow` only that commit, as `fetch-depth: 1` gives.
    fn checkout(&self, job: &Job, commit: &str, shallow: bool) {
        let url = format!("file://{}", self.origin.display());
        let ws = job.workspace.to_str().unwrap();
        match shallow {
            true => {
                git(&job.workspace, &["init", "--quiet", ws]);
                git(
                    &job.workspace,
                    &["fetch", "--quiet", "--depth", "1", &url, commit],
                );
                git(
                    &job.workspace,
                    &["checkout", "--quiet", "--detach", "FETCH_HEAD"],
                );
            }
            false => {
                git(&self.dir, &["clone", "--quiet", &url, ws]);
                git(&job.workspace, &["checkout", "--quiet", "--detach", commit]);
            }
        }
    }

    /// The `with:` of the example workflow's goldgate step in `file` (under the job's contexts
    /// and the dispatch `inputs`), plus the one input the test adds: where the release is.
    fn inputs(&self, job: &Job, file: &str, dispatch: &[(&str, &str)]) -> Vec<(String, String)> {
        let workflow = steps::read_yaml(&self.origin.join(".github/workflows").join(file));
        let jobs = workflow["jobs"].as_object().unwrap();
        let step = jobs
            .values()
            .flat_map(|j| j["steps"].as_array().unwrap().iter())
            .find(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("goldgate/goldgate@"))
            })
            .unwrap_or_else(|| panic!("{file} has no goldgate/goldgate step"));
        assert_eq!(
            step["uses"],
            format!("goldgate/goldgate@{TAG}"),
            "{file} pins this release"
        );
        let dispatch: BTreeMap<String, String> = dispatch
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut inputs = steps::evaluate_with(job, &step["with"], &dispatch);
        inputs.push((
            "release-url".to_owned(),
            format!("file://{}", self.release.display()),
        ));
        inputs
    }

    /// A folder of the artifact store: `name` of workflow run `run`.
    fn artifact(&self, run: u64, name: &str) -> PathBuf {
        self.store.join(run.to_string()).join(name)
    }
}

/// Asserts that the steps printed `needle`, showing everything they printed when not.
fn logged(o: &Outcome, needle: &str) {
    assert!(o.log.contains(needle), "{needle}: {}", show(o));
}

fn show(o: &Outcome) -> String {
    format!("steps: {:?}\n{}", o.steps, o.log)
}

/// The pull request event (`pull_request.number`, its base and head).
fn pr_event(base: &str, head: &str) -> Value {
    json!({
        "pull_request": {
            "number": PR,
            "base": {"sha": base, "repo": {"full_name": "o/r"}},
            "head": {"sha": head, "repo": {"full_name": "o/r"}},
        },
        "repository": {"default_branch": "main"},
    })
}

/// The workflow_run event of the comment workflow, after run `run`.
fn workflow_run_event(run: u64) -> Value {
    json!({
        "workflow_run": {
            "id": run,
            "event": "pull_request",
            "conclusion": "failure",
            "html_url": format!("https://github.example/o/r/actions/runs/{run}"),
        },
        "repository": {"default_branch": "main"},
    })
}

/// Files under `dir` whose name is `name`, relative to it.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name() == name {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The whole adoption in the fork: the first goldens blessed by a dispatch and committed, a pull
/// request whose first push slows the saves (the A/B fails, the gate's golden timing is
/// diagnostic beside it, a comment is posted) and
/// whose second push takes that back (the same comment is updated), every run's records in the
/// artifact store.
#[tokio::test]
async fn a_megatron_fork_blesses_gates_and_keeps_one_comment_through_the_action() {
    let Some(corpus) = goldgate_core::fixtures::corpus::megatron_corpus() else {
        return;
    };
    on_fake_github(move |gh| adopt(&corpus, &gh.base, gh)).await;
}

/// Runs `test` (blocking: the action's scripts) against a fresh mock GitHub, once the tools the
/// action needs are there (else it says it skipped).
async fn on_fake_github(test: impl FnOnce(&FakeGithub) + Send + 'static) {
    if !tools_ready() {
        return;
    }
    let (_server, gh) = FakeGithub::start("").await;
    tokio::task::spawn_blocking(move || test(&gh))
        .await
        .unwrap();
}

fn adopt(corpus: &Path, github: &str, gh: &FakeGithub) {
    let tmp = tempfile::tempdir().unwrap();
    let fork = Fork::new(tmp.path(), corpus, github);
    let main = git(&fork.origin, &["rev-parse", "HEAD"]);

    // 1. The first goldens: a dispatch of goldgate.yml with mode bless, on main.
    let job = fork.job(
        1,
        "workflow_dispatch",
        "main",
        json!({"inputs": {"mode": "bless"}, "repository": {"default_branch": "main"}}),
    );
    fork.checkout(&job, &main, false);
    let inputs = fork.inputs(&job, "goldgate.yml", &[("mode", "bless")]);
    let o = job.run(&inputs);
    assert!(!o.failed, "{}", show(&o));
    assert_eq!(o.output("run", "exit-code"), "0", "{}", show(&o));
    // The release archive was checked, and is the goldgate that ran.
    logged(&o, "(matches SHA256SUMS)");
    assert!(o.log.contains(&format!(
        "installed: goldgate {}",
        env!("CARGO_PKG_VERSION")
    )));
    // Listed and planned: the case, its launcher and the training script of the checkout.
    let bless = fork.artifact(1, &format!("goldgate-goldens-{PLATFORM}-1"));
    let list = std::fs::read_to_string(bless.join("list.txt")).unwrap();
    assert!(
        list.contains(CASE) && list.contains("ft_launcher"),
        "{list}"
    );
    let plan = std::fs::read_to_string(bless.join("plan.txt")).unwrap();
    let script = format!("{}/pretrain_gpt.py", job.workspace.display());
    assert!(plan.contains(CASE) && plan.contains(&script), "{plan}");
    let golden = format!("{CASES}/{CASE}/golden_values_dev_{PLATFORM}.json");
    let blessed = bless.join("goldens").join(&golden);
    assert!(
        blessed.is_file(),
        "{:?}",
        find(&bless, "golden_values_dev_fake_gpu.json")
    );
    // A maintainer commits the artifact's goldens to main.
    std::fs::copy(&blessed, fork.origin.join(&golden)).unwrap();
    git(&fork.origin, &["add", "-A"]);
    git(
        &fork.origin,
        &["commit", "--quiet", "-m", "goldens of fake_gpu"],
    );
    let main = git(&fork.origin, &["rev-parse", "HEAD"]);

    // 2. A pull request whose first push slows every save by 300 ms.
    git(&fork.origin, &["checkout", "--quiet", "-b", "slow-saves"]);
    std::fs::write(fork.origin.join("fake-knobs"), "--slow-save-ms 300\n").unwrap();
    git(&fork.origin, &["add", "-A"]);
    git(&fork.origin, &["commit", "--quiet", "-m", "slower saves"]);
    let head = git(&fork.origin, &["rev-parse", "HEAD"]);
    let job = fork.job(2, "pull_request", "17/merge", pr_event(&main, &head));
    fork.checkout(&job, &head, false);
    let inputs = fork.inputs(&job, "goldgate.yml", &[]);
    assert!(
        inputs.contains(&("mode".to_owned(), "both".to_owned())),
        "{inputs:?}"
    );
    let o = job.run(&inputs);
    assert!(o.failed, "the regression fails the job: {}", show(&o));
    assert_eq!(o.output("run", "exit-code"), "1", "{}", show(&o));
    assert!(o.log.contains(&format!(
        "arm A: the merge base of {head} and {main}, {main}"
    )));
    let records = fork.artifact(2, &format!("goldgate-{PLATFORM}-1"));
    for file in [
        "comparison.json",
        "junit.xml",
        "report.md",
        "pr-number.txt",
        "key.txt",
    ] {
        assert!(records.join(file).is_file(), "{file}: {}", show(&o));
    }
    let ab = format!("ab-{}.json", CASE.replace('/', "-"));
    assert!(records.join(&ab).is_file(), "{}", show(&o));
    assert_eq!(find(&records.join("results"), "results.json").len(), 1);
    assert!(find(&records.join("ab-results"), "ab.json").len() == 1);
    // Arm A ran the base's training script, arm B the head's (each tree its MEGATRON_LM_DIR).
    let consoles: Vec<String> = find(&records.join("ab-results"), "console.log")
        .into_iter()
        .map(|p| std::fs::read_to_string(records.join("ab-results").join(p)).unwrap())
        .collect();
    let ran = |tree: &Path| {
        let line = format!(
            "stand-in for ft_launcher: {}/pretrain_gpt.py",
            tree.display()
        );
        consoles.iter().filter(|c| c.contains(&line)).count()
    };
    assert!(
        ran(&job.workspace.join("goldgate-base")) >= 1,
        "{consoles:?}"
    );
    assert!(ran(&job.workspace) >= 1, "{consoles:?}");
    // The A/B of this job gates timing: the gate leaves its golden timing rows diagnostic
    // (`--clocks ab`), so the slower saves fail the job through the A/B alone.
    logged(&o, "the gate's clocks: ab (--clocks ab)");
    let comparison: Value =
        serde_json::from_slice(&std::fs::read(records.join("comparison.json")).unwrap()).unwrap();
    assert_eq!(
        comparison["gate"]["exit_code"], 0,
        "{}",
        comparison["counts"]
    );
    let diagnostic: Vec<&str> = (comparison["jobs"].as_array().unwrap().iter())
        .flat_map(|j| j["metrics"].as_array().unwrap())
        .filter_map(|m| m["pass_reason"].as_str())
        .filter(|r| r.contains("(`--clocks ab`): against the golden alone, regression"))
        .collect();
    assert!(!diagnostic.is_empty(), "{comparison}");
    let ab_result: Value =
        serde_json::from_slice(&std::fs::read(records.join(&ab)).unwrap()).unwrap();
    assert_eq!(ab_result["exit_code"], 1, "{ab_result}");
    assert!(
        o.summary.contains("gpt3"),
        "the step summary: {}",
        o.summary
    );

    // The comment, from goldgate-comment.yml on workflow_run: posted once.
    let job = fork.job(3, "workflow_run", "main", workflow_run_event(2));
    let inputs = fork.inputs(&job, "goldgate-comment.yml", &[]);
    let o = job.run(&inputs);
    assert!(!o.failed, "{}", show(&o));
    let comments = gh.comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let (id, first) = comments[0].clone();
    assert!(
        first.starts_with(&format!("<!-- goldgate:sticky key={PLATFORM} -->")),
        "{first}"
    );
    assert!(
        first.contains("regression") && first.contains("actions/runs/2"),
        "{first}"
    );
    assert!(!first.contains(TOKEN));

    // 3. The second push takes the change back; the run checks out GitHub's merge commit
    // (fetch-depth 1, as actions/checkout does by default): arm A is its first parent.
    std::fs::remove_file(fork.origin.join("fake-knobs")).unwrap();
    git(&fork.origin, &["add", "-A"]);
    git(
        &fork.origin,
        &["commit", "--quiet", "-m", "saves as before"],
    );
    let head = git(&fork.origin, &["rev-parse", "HEAD"]);
    git(&fork.origin, &["checkout", "--quiet", "--detach", &main]);
    git(
        &fork.origin,
        &["merge", "--quiet", "--no-ff", "-m", "Merge", &head],
    );
    let merge = git(&fork.origin, &["rev-parse", "HEAD"]);
    git(&fork.origin, &["update-ref", "refs/pull/17/merge", &merge]);
    git(&fork.origin, &["checkout", "--quiet", "main"]);
    let job = fork.job(4, "pull_request", "17/merge", pr_event(&main, &head));
    fork.checkout(&job, &merge, true);
    let o = job.run(&fork.inputs(&job, "goldgate.yml", &[]));
    logged(
        &o,
        &format!("arm A: {main}, the base of the pull request's merge commit {merge}"),
    );
    let code = o.output("run", "exit-code");
    assert!(
        code == "0" || code == "1",
        "a verdict, not a failure: {}",
        show(&o)
    );
    assert!(
        fork.artifact(4, &format!("goldgate-{PLATFORM}-1"))
            .join("comparison.json")
            .is_file()
    );
    let job = fork.job(5, "workflow_run", "main", workflow_run_event(4));
    let o = job.run(&fork.inputs(&job, "goldgate-comment.yml", &[]));
    assert!(!o.failed, "{}", show(&o));
    let comments = gh.comments();
    assert_eq!(comments.len(), 1, "still one comment: {comments:?}");
    assert_eq!(comments[0].0, id, "the same comment, edited");
    assert_ne!(comments[0].1, first);
    assert!(
        comments[0].1.contains("actions/runs/4"),
        "{}",
        comments[0].1
    );
    assert!(gh.count("PATCH") >= 1);
}

/// Job `n` of a run under `dir` with an empty workspace and no event (a dispatch by hand).
fn bare_job(dir: &Path, n: u64) -> Job {
    let root = dir.join(format!("run-{n}"));
    for d in ["work", "temp", "home"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    Job {
        action_dir: repo(),
        workspace: root.join("work"),
        temp: root.join("temp"),
        store: dir.join("store"),
        origin: dir.to_path_buf(),
        run_id: n,
        github: json!({"action_ref": TAG, "action_repository": "goldgate/goldgate", "event": {}}),
        vars: json!({}),
        secrets: json!({}),
        env: vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), root.join("home").display().to_string()),
        ],
    }
}

/// `bare_job` with goldgate's own configuration, demo cases and their goldens in its workspace.
fn demo_job(dir: &Path, n: u64) -> Job {
    let job = bare_job(dir, n);
    std::fs::copy(
        repo().join("goldgate.yaml"),
        job.workspace.join("goldgate.yaml"),
    )
    .unwrap();
    for tree in ["test_cases/demo", "golden/demo"] {
        steps::copy_dir(&repo().join(tree), &job.workspace.join(tree));
    }
    job
}

/// `job` as GitHub runs it for `event_name` on `ref_name` (the event's payload `event`), with
/// the fake GitHub at `api` and its token.
fn on_github(mut job: Job, api: &str, event_name: &str, ref_name: &str, event: Value) -> Job {
    let g = job.github.as_object_mut().unwrap();
    for (k, v) in [
        ("event_name", json!(event_name)),
        ("ref_name", json!(ref_name)),
        ("repository", json!("o/r")),
        ("server_url", json!("https://github.example")),
        ("api_url", json!(api)),
        ("token", json!(TOKEN)),
        ("event", event),
    ] {
        g.insert(k.to_owned(), v);
    }
    job
}

/// The inputs of a job on goldgate's `dev_cpu` platform that installs the release in `dist`,
/// and `extra`.
fn dev_cpu_inputs(dist: &Path, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v = vec![
        ("platform".to_owned(), "dev_cpu".to_owned()),
        (
            "release-url".to_owned(),
            format!("file://{}", dist.display()),
        ),
    ];
    v.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    v
}

/// The `filter` input reaches goldgate as one argument, spaces and all (a `(?x)` regex), and
/// `args` one argument per line: the list, the plan and the run hold the regex's two demo cases
/// of the three `cases` names, run under the variant a line of `args` chose; the raw logs
/// another line keeps (`--keep-raw-log`) stay out of the uploaded records. A line of `args`
/// that is an option and its value is refused, naming the input, before anything runs.
#[test]
fn the_action_passes_a_filter_with_spaces_as_one_argument_and_args_one_per_line() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dist = release(tmp.path());
    // goldgate's own configuration and demo cases in the job's workspace.
    let job = demo_job(tmp.path(), 1);
    let o = job.run(&dev_cpu_inputs(
        &dist,
        &[
            ("cases", "demo/*"),
            ("filter", "(?x) ckpt-demo | crash-demo"),
            (
                "args",
                "--no-compare\n  --variant=allocator=gc80\n--keep-raw-log\n",
            ),
        ],
    ));
    // The crash demo fails as a job (exit 3); the records are staged all the same.
    assert_eq!(o.output("run", "exit-code"), "3", "{}", show(&o));
    let records = tmp.path().join("store/1/goldgate-dev_cpu-1");
    for file in ["list.txt", "plan.txt"] {
        let text = std::fs::read_to_string(records.join(file)).unwrap();
        assert!(
            text.contains("demo/ckpt-demo") && text.contains("demo/crash-demo"),
            "{file}: {text}"
        );
        assert!(!text.contains("demo/ckpt-power"), "{file}: {text}");
    }
    let recorded = find(&records.join("results"), "results.json");
    assert_eq!(recorded.len(), 2, "{recorded:?}\n{}", show(&o));
    for path in &recorded {
        let text = path.display().to_string();
        assert!(text.contains("gc80"), "not the variant args chose: {text}");
    }
    // The masked console logs are staged, the raw copies `--keep-raw-log` kept are not.
    assert_eq!(find(&records.join("results"), "console.log").len(), 2);
    let kept_raw = find(&job.temp.join("goldgate/work"), "console.raw.log");
    assert_eq!(kept_raw.len(), 2, "{}", show(&o));
    assert_eq!(find(&records, "console.raw.log"), Vec::<PathBuf>::new());

    // `--repeat 3` on one line would reach goldgate as one word.
    let job = bare_job(tmp.path(), 2);
    let o = job.run(&dev_cpu_inputs(
        &dist,
        &[("cases", "demo/ckpt-demo"), ("args", "--repeat 3")],
    ));
    assert!(o.failed, "{}", show(&o));
    logged(
        &o,
        "input args: the line '--repeat 3' holds an option and its value; give one argument per line (--repeat=3, or the value on the next line)",
    );
    assert!(!o.log.contains("+ goldgate list"), "{}", show(&o));
}

/// A release archive that is not the one SHA256SUMS names is refused before anything runs, and
/// so is one that does not match a pinned `sha256`.
#[test]
fn the_action_refuses_a_release_archive_whose_checksum_does_not_match() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dist = release(tmp.path());
    let job = |n: u64| bare_job(tmp.path(), n);
    let inputs = |extra: &[(&str, &str)]| dev_cpu_inputs(&dist, extra);
    // A pinned sha256 that is not the archive's.
    let o = job(1).run(&inputs(&[("sha256", &"0".repeat(64))]));
    assert!(o.failed);
    logged(&o, "does not match the sha256 input");
    assert_eq!(o.output("install", "goldgate"), "");
    assert!(
        o.steps.contains(&("run".to_owned(), false)),
        "{:?}",
        o.steps
    );
    // An archive changed after SHA256SUMS was written.
    let archive = dist.join(format!("goldgate-{TAG}-{TARGET}.tar.gz"));
    let mut bytes = std::fs::read(&archive).unwrap();
    bytes.extend_from_slice(b"tampered");
    std::fs::write(&archive, bytes).unwrap();
    let o = job(2).run(&inputs(&[]));
    assert!(o.failed);
    logged(&o, "does not match SHA256SUMS");
    assert_eq!(o.output("install", "goldgate"), "");
}

/// The book's worked example shows the files this test runs, as they are.
#[test]
fn the_books_fork_page_shows_the_tested_example_files() {
    let page = std::fs::read_to_string(repo().join("docs/book/src/guide/fork.md")).unwrap();
    for file in [
        "goldgate.yaml",
        ".github/workflows/goldgate.yml",
        ".github/workflows/goldgate-comment.yml",
    ] {
        let start = format!("<!-- example:{file}:start -->\n");
        let end = format!("<!-- example:{file}:end -->");
        let from = page.find(&start).unwrap_or_else(|| panic!("no {start}")) + start.len();
        let to = from
            + page[from..]
                .find(&end)
                .unwrap_or_else(|| panic!("no {end}"));
        let shown = page[from..to]
            .strip_prefix("```yaml\n")
            .and_then(|b| b.strip_suffix("```\n"))
            .unwrap_or_else(|| panic!("{file}: one yaml block between the markers"));
        let text =
            std::fs::read_to_string(repo().join("docs/examples/megatron-fork").join(file)).unwrap();
        assert_eq!(shown, text, "{file}: the page's block is not the file");
    }
}

/// Where a job that posts no comment points its GitHub API: nothing listens there.
const NO_GITHUB: &str = "http://127.0.0.1:9";

/// `history` and `partition`: a push to the default branch runs shard 2 of 2 (`hash:2/2` of the
/// checkpoint and crash demos holds the checkpoint demo alone), names its artifact by the shard
/// and ingests the run into the history store, SQLite and PostgreSQL alike; a pull request's run
/// with the same store is not ingested.
#[test]
fn a_push_to_main_ingests_its_shard_into_history_and_a_pull_request_is_never_ingested() {
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dist = release(tmp.path());
    let mut n = 0;
    for backend in ["sqlite", "postgres"] {
        let Some(store) = crate::history_store::fresh(backend) else {
            continue;
        };
        let db = crate::history_store::db_arg(&store.location);
        let inputs = dev_cpu_inputs(
            &dist,
            &[
                ("cases", "demo/ckpt-demo demo/crash-demo"),
                ("partition", "hash:2/2"),
                ("history", &db),
            ],
        );
        n += 1;
        let default_branch = json!({"repository": {"default_branch": "main"}});
        let push = on_github(
            demo_job(tmp.path(), n),
            NO_GITHUB,
            "push",
            "main",
            default_branch,
        );
        let o = push.run(&inputs);
        assert!(!o.failed, "{backend}: {}", show(&o));
        assert_eq!(o.output("run", "exit-code"), "0", "{backend}: {}", show(&o));
        // The shard: goldgate run's argument, the artifact's name, what was listed and run.
        logged(
            &o,
            "+ goldgate run --root test_cases --platform dev_cpu --golden-root golden --partition hash:2/2 demo/ckpt-demo demo/crash-demo --out ",
        );
        assert_eq!(o.output("prepare", "artifact"), "goldgate-dev_cpu-2");
        let records = tmp.path().join(format!("store/{n}/goldgate-dev_cpu-2"));
        let list = std::fs::read_to_string(records.join("list.txt")).unwrap();
        assert!(
            list.contains("demo/ckpt-demo") && !list.contains("demo/crash-demo"),
            "{list}"
        );
        assert_eq!(find(&records.join("results"), "results.json").len(), 1);
        // The push's run is in the store.
        logged(&o, "+ goldgate history ingest ");
        assert_eq!(
            crate::history_cli::runs_stored(&store.location),
            1,
            "{backend}: {}",
            show(&o)
        );
        if backend != "sqlite" {
            continue;
        }
        n += 1;
        let event = pr_event("main", "head");
        let pr = on_github(
            demo_job(tmp.path(), n),
            NO_GITHUB,
            "pull_request",
            "17/merge",
            event,
        );
        let o = pr.run(&inputs);
        assert_eq!(o.output("run", "exit-code"), "0", "{}", show(&o));
        logged(
            &o,
            "history: not ingesting a pull_request run of 17/merge (only pushes to main)",
        );
        assert!(!o.log.contains("+ goldgate history ingest"), "{}", show(&o));
        assert_eq!(crate::history_cli::runs_stored(&store.location), 1);
    }
}

/// `scope` reaches goldgate as Megatron's `--scope` (the example workflow's `GOLDGATE_SCOPE`):
/// Megatron's recipes name their own machines, so scope `mr` holds no row for the fork's runner,
/// the case `GOLDGATE_CASES` names is not selected, and the job ends with exit 2, nothing run.
#[test]
fn the_scope_input_selects_only_megatrons_recipe_rows_for_the_platform() {
    let Some(corpus) = goldgate_core::fixtures::corpus::megatron_corpus() else {
        return;
    };
    if !tools_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fork = Fork::new(tmp.path(), &corpus, NO_GITHUB);
    let main = git(&fork.origin, &["rev-parse", "HEAD"]);
    let event = json!({"inputs": {"mode": "gate"}, "repository": {"default_branch": "main"}});
    let mut job = fork.job(1, "workflow_dispatch", "main", event);
    job.vars["GOLDGATE_SCOPE"] = json!("mr");
    fork.checkout(&job, &main, false);
    let inputs = fork.inputs(&job, "goldgate.yml", &[("mode", "gate")]);
    assert!(
        inputs.contains(&("scope".to_owned(), "mr".to_owned())),
        "{inputs:?}"
    );
    let o = job.run(&inputs);
    assert!(o.failed, "{}", show(&o));
    assert_eq!(o.output("run", "exit-code"), "2", "{}", show(&o));
    logged(
        &o,
        &format!(
            "+ goldgate list --root {CASES} --platform {PLATFORM} --scope mr --golden-root {CASES} {CASE}"
        ),
    );
    let list = std::fs::read_to_string(
        fork.artifact(1, &format!("goldgate-{PLATFORM}-1"))
            .join("list.txt"),
    )
    .unwrap();
    assert!(
        list.contains("│ scope │") && list.contains("0 workload(s)") && !list.contains(CASE),
        "{list}"
    );
    assert!(
        o.log
            .contains("nothing to run: the selection planned no job"),
        "{}",
        show(&o)
    );
}

/// The comment of the fake GitHub whose marker is `key`'s.
fn sticky(comments: &[(u64, String)], key: &str) -> (u64, String) {
    let marker = format!("<!-- goldgate:sticky key={key} -->");
    comments
        .iter()
        .find(|(_, body)| body.starts_with(&marker))
        .cloned()
        .unwrap_or_else(|| panic!("no comment with {marker}: {comments:?}"))
}

/// `comment-key`: two jobs of one pull request run, keyed `alpha` and `beta`, upload
/// `goldgate-alpha-1` and `goldgate-beta-1`, and the comment workflow posts two sticky comments
/// on their failed jobs, one per key; a later run keyed `alpha`, passing, updates that comment
/// and leaves `beta`'s as it was.
#[tokio::test]
async fn two_comment_keys_keep_two_sticky_comments_and_a_key_updates_its_own() {
    on_fake_github(comment_keys).await;
}

fn comment_keys(gh: &FakeGithub) {
    let tmp = tempfile::tempdir().unwrap();
    let dist = release(tmp.path());
    // Job `n` of pull request run `run`, on `case` under comment-key `key`, ending with `code`.
    let gate = |n: u64, run: u64, key: &str, case: &str, code: &str| {
        let event = pr_event("main", "head");
        let job = on_github(
            demo_job(tmp.path(), n),
            &gh.base,
            "pull_request",
            "17/merge",
            event,
        );
        let job = Job { run_id: run, ..job };
        let o = job.run(&dev_cpu_inputs(
            &dist,
            &[("cases", case), ("comment-key", key)],
        ));
        assert_eq!(o.output("run", "exit-code"), code, "{}", show(&o));
        assert_eq!(o.output("prepare", "key"), key);
        let records = tmp.path().join(format!("store/{run}/goldgate-{key}-1"));
        assert_eq!(
            std::fs::read_to_string(records.join("key.txt")).unwrap(),
            format!("{key}\n")
        );
    };
    // The comment workflow's job `n` after run `run`.
    let comment = |n: u64, run: u64| {
        let event = workflow_run_event(run);
        let job = on_github(
            bare_job(tmp.path(), n),
            &gh.base,
            "workflow_run",
            "main",
            event,
        );
        let o = job.run(&dev_cpu_inputs(&dist, &[("mode", "comment")]));
        assert!(!o.failed, "{}", show(&o));
        o
    };
    // A job that fails is commented on (a passing one only once a comment exists).
    gate(1, 1, "alpha", "demo/crash-demo", "3");
    gate(2, 1, "beta", "demo/crash-demo", "3");
    let o = comment(3, 1);
    for key in ["alpha", "beta"] {
        assert!(
            o.log
                .contains(&format!("--key {key} --pr {PR} --only-on-change")),
            "{}",
            show(&o)
        );
    }
    let comments = gh.comments();
    assert_eq!(comments.len(), 2, "{comments:?}\n{}", show(&o));
    let (alpha, first) = sticky(&comments, "alpha");
    let beta = sticky(&comments, "beta");
    assert_ne!(alpha, beta.0);

    gate(4, 4, "alpha", "demo/ckpt-demo", "0");
    comment(5, 4);
    let comments = gh.comments();
    assert_eq!(comments.len(), 2, "no third comment: {comments:?}");
    let (id, body) = sticky(&comments, "alpha");
    assert_eq!(id, alpha, "alpha's comment, edited");
    assert_ne!(body, first);
    assert!(body.contains("actions/runs/4"), "{body}");
    assert_eq!(sticky(&comments, "beta"), beta, "beta's comment as it was");
}

/// Mode `ab` on its own, asked through `ab-args` for a within-job A/B (a delay planted on B's
/// saves, as `goldgate ab --b-switch`): only `goldgate ab` runs, both arms in the head's checkout
/// with no arm trees (which a within-job A/B refuses), its result is uploaded as
/// `goldgate-dev_cpu-ab`, the regression fails the job, and the comment shows the within-job
/// A/B's verdict.
#[tokio::test]
async fn mode_ab_alone_runs_a_within_job_ab_whose_verdict_reaches_the_comment() {
    on_fake_github(within_job_ab).await;
}

fn within_job_ab(gh: &FakeGithub) {
    let tmp = tempfile::tempdir().unwrap();
    let dist = release(tmp.path());
    // A repository of goldgate's configuration and the fake trainer's in-job case.
    let origin = tmp.path().join("origin");
    let case = "runner/tests/fixtures/cases/fake/injob";
    steps::copy_dir(&repo().join(case), &origin.join(case));
    std::fs::copy(repo().join("goldgate.yaml"), origin.join("goldgate.yaml")).unwrap();
    git(&origin, &["init", "--quiet", "--initial-branch", "main"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "--quiet", "-m", "an in-job case"]);
    let main = git(&origin, &["rev-parse", "HEAD"]);
    let job = on_github(
        bare_job(tmp.path(), 1),
        &gh.base,
        "pull_request",
        "17/merge",
        pr_event(&main, &main),
    );
    // The case's entry, `fake-trainer`, is the installed goldgate's trainer on the runner's PATH.
    let bin = tmp.path().join("runner-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let trainer = bin.join("fake-trainer");
    std::fs::write(&trainer, "#!/bin/sh\nexec goldgate fake-trainer \"$@\"\n").unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&trainer, executable).unwrap();
    let mut env = job.env.clone();
    for (k, v) in &mut env {
        if k == "PATH" {
            *v = format!("{}:{v}", bin.display());
        }
    }
    let job = Job {
        origin: origin.clone(),
        env,
        ..job
    };
    git(
        tmp.path(),
        &[
            "clone",
            "--quiet",
            origin.to_str().unwrap(),
            job.workspace.to_str().unwrap(),
        ],
    );
    let o = job.run(&dev_cpu_inputs(
        &dist,
        &[
            ("mode", "ab"),
            ("root", "runner/tests/fixtures/cases"),
            ("ab-cases", "fake/injob"),
            ("ab-args", "--b-switch=save-delay=0.25\n--seed=3"),
        ],
    ));
    assert!(o.failed, "the regression fails the job: {}", show(&o));
    assert_eq!(o.output("run", "exit-code"), "1", "{}", show(&o));
    logged(
        &o,
        "+ goldgate ab fake/injob --root runner/tests/fixtures/cases --golden-root golden --platform dev_cpu --b-switch=save-delay=0.25 --seed=3 --out ",
    );
    assert!(!o.log.contains("+ goldgate run "), "no gate: {}", show(&o));
    assert_eq!(o.output("prepare", "artifact"), "goldgate-dev_cpu-ab");
    let records = tmp.path().join("store/1/goldgate-dev_cpu-ab");
    let list = std::fs::read_to_string(records.join("list.txt")).unwrap();
    assert!(list.contains("fake/injob"), "{list}");
    assert!(!records.join("comparison.json").exists());
    let ab: Value =
        serde_json::from_slice(&std::fs::read(records.join("ab-fake-injob.json")).unwrap())
            .unwrap();
    assert_eq!(ab["mode"]["kind"], "within-job", "{}", ab["mode"]);
    assert_eq!(ab["exit_code"], 1, "{ab}");

    let event = workflow_run_event(1);
    let job = on_github(
        bare_job(tmp.path(), 2),
        &gh.base,
        "workflow_run",
        "main",
        event,
    );
    let o = job.run(&dev_cpu_inputs(&dist, &[("mode", "comment")]));
    assert!(!o.failed, "{}", show(&o));
    let comments = gh.comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let (_, body) = sticky(&comments, "dev_cpu");
    for shown in [
        "goldgate A/B: fake/injob on dev\\_cpu — regression",
        "mode: within-job",
        "save-delay=0.25",
        "actions/runs/1",
    ] {
        assert!(body.contains(shown), "{shown}: {body}");
    }
}

/// What a workflow runs on (`on:` as a name, a list or a map of events).
fn triggers(name: &str, workflow: &Value) -> Vec<String> {
    // YAML 1.1 readers take a bare `on` for `true`.
    let on = workflow.get("on").or_else(|| workflow.get("true"));
    match on {
        Some(Value::String(event)) => vec![event.clone()],
        Some(Value::Array(events)) => events
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .collect(),
        Some(Value::Object(events)) => events.keys().cloned().collect(),
        _ => panic!("{name}: no `on:`"),
    }
}

/// Whether `permissions` (a workflow's or a job's) lets the token write pull request comments.
fn writes_comments(permissions: &Value) -> bool {
    permissions == "write-all"
        || permissions["pull-requests"] == "write"
        || permissions["issues"] == "write"
}

/// Fork safety of every workflow, goldgate's own and the fork example's: none runs on
/// `pull_request_target` (a pull request's code with the base's secrets and a write token), and
/// the sticky comment is posted (the action's mode `comment`, `goldgate comment`, a token that
/// writes pull requests) only by a workflow that runs on `workflow_run` alone, never by the
/// `pull_request` one, which runs the pull request's code without secrets.
#[test]
fn no_workflow_runs_on_pull_request_target_and_only_workflow_run_posts_the_comment() {
    let mut commenting = Vec::new();
    for dir in [
        ".github/workflows",
        "docs/examples/megatron-fork/.github/workflows",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{dir}: no workflow");
        for path in files {
            let name = path.strip_prefix(repo()).unwrap().display().to_string();
            let workflow = steps::read_yaml(&path);
            let on = triggers(&name, &workflow);
            assert!(
                !on.iter().any(|e| e == "pull_request_target"),
                "{name}: runs on pull_request_target, which gives a pull request's code the base's secrets and a write token; test on pull_request and comment from a workflow_run workflow"
            );
            let comment_only_after_a_run = on == ["workflow_run"];
            let mut why = Vec::new();
            if writes_comments(&workflow["permissions"]) {
                why.push("the workflow's permissions write pull requests".to_owned());
            }
            for (job_name, job) in workflow["jobs"].as_object().unwrap() {
                if writes_comments(&job["permissions"]) {
                    why.push(format!("job {job_name}'s permissions write pull requests"));
                }
                for step in job["steps"].as_array().into_iter().flatten() {
                    let uses = step["uses"].as_str().unwrap_or("");
                    let action = uses == "./" || uses.starts_with("goldgate/goldgate@");
                    let mode = step["with"]["mode"].as_str().unwrap_or("");
                    let run = step["run"].as_str().unwrap_or("");
                    if (action && mode.contains("comment")) || run.contains("goldgate comment") {
                        why.push(format!("job {job_name} posts the sticky comment"));
                    }
                }
            }
            if !why.is_empty() {
                assert!(
                    comment_only_after_a_run,
                    "{name}: {}, but it runs on {on:?}: post the PR comment only from a workflow_run-triggered workflow (the pull_request one runs the pull request's code without secrets)",
                    why.join("; ")
                );
                commenting.push(name);
            }
        }
    }
    assert_eq!(
        commenting,
        [
            ".github/workflows/pr-comment.yml",
            "docs/examples/megatron-fork/.github/workflows/goldgate-comment.yml",
        ],
        "the workflows that post the comment"
    );
}
