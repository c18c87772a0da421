//! `goldgate plan` and `goldgate repro` end to end: the real binary on small case trees,
//! the generated script run with bash, and every corpus case planned.

// Test helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use goldgate::case::{TestCase, discover, load_case, placeholders};
use goldgate::config::Config;
use goldgate::plan::{PlanError, PlanInputs, VariantRequest, plan_case};

mod common;

use common::corpus;

/// A case whose MODEL_ARGS hold every character a shell could trip on.
const TRICKY_CASE: &str = r#"ENV_VARS:
  PLAIN: 1
  FLAG: true
  ALLOC: expandable_segments:True
  HF_TOKEN: ${MY_TOKEN}
  QUOTED: "it's a \"test\""
TEST_TYPE: regular
LAUNCHER: direct
MODEL_ARGS:
  --spaces: "two words"
  --quotes: "it's \"quoted\""
  --dollar: "costs $5 and $"
  --pipe: "a|b"
  --newline: "line one\nline two"
  --empty-string: ""
  --bare: true
  --list: "[1 2 3]"
  --save: ${CHECKPOINT_SAVE_PATH}
  --seed: ${REPEAT}
  --auth: "Bearer ${MY_TOKEN}"
GOLDGATE:
  entry: [ARGV_PRINTER]
  nproc: 1
"#;

/// Prints each argument on its own, NUL-terminated, to `$OUTPUT_PATH/argv`, and the
/// environment variables the test looks at to `$OUTPUT_PATH/env`.
const ARGV_PRINTER: &str = r#"#!/usr/bin/env bash
printf '%s\0' "$@" > "$OUTPUT_PATH/argv"
printf '%s\0' "PLAIN=$PLAIN" "FLAG=$FLAG" "ALLOC=$ALLOC" "HF_TOKEN=$HF_TOKEN" "QUOTED=$QUOTED" "PWD=$PWD" > "$OUTPUT_PATH/env"
"#;

const CONFIG: &str = r#"platforms:
  local:
    gpus_per_node: 1
variants:
  allocator:
    values:
      default: {}
      gc80:
        env: {PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True,garbage_collection_threshold:0.8"}
        unset: [PLAIN]
  checkpoint:
    values:
      sync: {}
      async:
        args: {--async-save: true, --bare: "", --spaces: "three more words"}
        remove_args: [--pipe]
"#;

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let printer = dir.path().join("print-argv.sh");
        std::fs::write(&printer, ARGV_PRINTER).unwrap();
        set_executable(&printer);
        let case = TRICKY_CASE.replace("ARGV_PRINTER", &printer.display().to_string());
        write(
            &dir.path().join("cases/demo/tricky/model_config.yaml"),
            &case,
        );
        write(&dir.path().join("goldgate.yaml"), CONFIG);
        Tree { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs goldgate in the tree with `MY_TOKEN` set as a secret of the caller.
    fn goldgate(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_goldgate"))
            .args(args)
            .args(["--root", "cases", "--config", "goldgate.yaml"])
            .current_dir(self.path())
            .env("MY_TOKEN", "sekrit-value")
            .output()
            .unwrap()
    }

    /// stdout or stderr with the temporary folder written as `[TMP]`.
    fn text(&self, bytes: &[u8]) -> String {
        let canonical = self.path().canonicalize().unwrap();
        String::from_utf8_lossy(bytes)
            .replace(&canonical.display().to_string(), "[TMP]")
            .replace(&self.path().display().to_string(), "[TMP]")
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn expected_argv(tree: &Tree, variant_slug: &str, printer_first: bool) -> Vec<String> {
    let job = tree
        .path()
        .canonicalize()
        .unwrap()
        .join(format!("goldgate-out/repro/demo/tricky/{variant_slug}/1"));
    let mut argv = vec![
        "--spaces",
        "two words",
        "--quotes",
        "it's \"quoted\"",
        "--dollar",
        "costs $5 and $",
        "--pipe",
        "a|b",
        "--newline",
        "line one\nline two",
        "--bare",
        "--list",
        "1",
        "2",
        "3",
        "--save",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect::<Vec<_>>();
    argv.push(job.join("checkpoints").display().to_string());
    argv.extend(["--seed", "1", "--auth", "Bearer sekrit-value"].map(str::to_owned));
    if printer_first {
        argv.insert(0, tree.path().join("print-argv.sh").display().to_string());
    }
    argv
}

fn run_script(tree: &Tree, script: &str, token: Option<&str>) -> Output {
    let path = tree.path().join("repro.sh");
    std::fs::write(&path, script).unwrap();
    let mut bash = Command::new("bash");
    bash.arg(&path)
        .current_dir(tree.path())
        .env_remove("MY_TOKEN")
        .env_remove("HF_TOKEN");
    if let Some(token) = token {
        bash.env("HF_TOKEN", token).env("MY_TOKEN", token);
    }
    bash.output().unwrap()
}

fn nul_separated(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    text.split_terminator('\0').map(str::to_owned).collect()
}

#[test]
fn repro_script_delivers_every_word_exactly() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        !script.contains("sekrit-value"),
        "a secret from the caller leaked:\n{script}"
    );

    let ran = run_script(&tree, &script, Some("sekrit-value"));
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let output = tree
        .path()
        .canonicalize()
        .unwrap()
        .join("goldgate-out/repro/demo/tricky/default/1/output");
    assert_eq!(
        nul_separated(&output.join("argv")),
        expected_argv(&tree, "default", false)
    );
    let env = nul_separated(&output.join("env"));
    let job_dir = output.parent().unwrap().display().to_string();
    assert_eq!(
        env,
        [
            "PLAIN=1",
            "FLAG=true",
            "ALLOC=expandable_segments:True",
            "HF_TOKEN=sekrit-value",
            "QUOTED=it's a \"test\"",
            &format!("PWD={job_dir}"),
        ]
    );
}

#[test]
fn repro_script_refuses_to_run_without_the_secret() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky"]);
    let ran = run_script(&tree, &String::from_utf8(out.stdout).unwrap(), None);
    assert!(!ran.status.success());
    assert!(String::from_utf8_lossy(&ran.stderr).contains("set HF_TOKEN"));
}

#[test]
fn repro_applies_variant_edits() {
    let tree = Tree::new();
    let out = tree.goldgate(&[
        "repro",
        "demo/tricky",
        "--variant",
        "checkpoint=async",
        "--variant",
        "allocator=gc80",
    ]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("unset PLAIN\n"), "{script}");
    let ran = run_script(&tree, &script, Some("sekrit-value"));
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let slug = "allocator-gc80+checkpoint-async";
    let output = tree
        .path()
        .canonicalize()
        .unwrap()
        .join(format!("goldgate-out/repro/demo/tricky/{slug}/1/output"));
    let mut want = expected_argv(&tree, slug, false);
    // `--spaces` overridden in place, `--pipe a|b` removed, `--bare` dropped (empty), `--async-save` added.
    want[1] = "three more words".to_owned();
    let pipe = want.iter().position(|w| w == "--pipe").unwrap();
    want.drain(pipe..pipe + 2);
    want.retain(|w| w != "--bare");
    want.push("--async-save".to_owned());
    assert_eq!(nul_separated(&output.join("argv")), want);
    assert_eq!(nul_separated(&output.join("env"))[0], "PLAIN=");
}

#[test]
fn repro_script_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky", "--variant", "checkpoint=async"]);
    insta::assert_snapshot!(tree.text(&out.stdout));
}

#[test]
fn plan_table_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["plan", "--matrix", "allocator", "--repeat", "2"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let text = tree.text(&out.stdout);
    assert!(!text.contains("sekrit-value"));
    insta::assert_snapshot!(text);
}

/// The cases a `plan` with these arguments takes, from its JSON.
fn planned_cases(tree: &Tree, args: &[&str]) -> Vec<String> {
    let out = tree.goldgate(&[&["plan", "--format", "json"], args].concat());
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let jobs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut cases: Vec<String> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["case"].as_str().unwrap().to_owned())
        .collect();
    cases.dedup();
    cases
}

#[test]
fn cases_are_picked_by_name_glob_regex_and_partition() {
    let tree = Tree::new();
    let simple =
        "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS: {}\nGOLDGATE: {entry: [true]}\n";
    for case in ["demo/other", "gpt/resume_a", "moe/resume_b"] {
        write(
            &tree.path().join(format!("cases/{case}/model_config.yaml")),
            simple,
        );
    }
    assert_eq!(
        planned_cases(&tree, &["demo/*"]),
        ["demo/other", "demo/tricky"]
    );
    assert_eq!(
        planned_cases(&tree, &["*resume*", "demo/other"]),
        ["demo/other", "gpt/resume_a", "moe/resume_b"]
    );
    assert_eq!(
        planned_cases(&tree, &["--filter", "^gpt/"]),
        ["gpt/resume_a"]
    );
    for kind in ["hash", "count"] {
        let mut all = Vec::new();
        for k in 1..=3 {
            all.extend(planned_cases(
                &tree,
                &["--partition", &format!("{kind}:{k}/3")],
            ));
        }
        all.sort();
        assert_eq!(
            all,
            ["demo/other", "demo/tricky", "gpt/resume_a", "moe/resume_b"],
            "{kind}: every case in exactly one partition"
        );
    }
    let typo = tree.goldgate(&["plan", "gpt/resume_c*"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        tree.text(&typo.stderr)
            .contains("no case `gpt/resume_c*` under cases"),
        "{}",
        tree.text(&typo.stderr)
    );
    let bad = tree.goldgate(&["plan", "--partition", "hash:4/3"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        tree.text(&bad.stderr).contains("K must be between 1 and N"),
        "{}",
        tree.text(&bad.stderr)
    );
}

#[test]
fn plan_json_lists_argv_per_run() {
    let tree = Tree::new();
    let out = tree.goldgate(&["plan", "demo/tricky", "--format", "json"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sekrit-value"));
    let jobs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let job = &jobs[0];
    assert_eq!(job["id"], "demo/tricky@default#1");
    assert_eq!(job["env"]["HF_TOKEN"], "<redacted>");
    let argv: Vec<String> = serde_json::from_value(job["runs"][0]["argv"].clone()).unwrap();
    let mut want = expected_argv(&tree, "default", true);
    let auth = want.len() - 1;
    want[auth] = "Bearer <redacted>".to_owned();
    let plan_out = tree
        .path()
        .canonicalize()
        .unwrap()
        .join("goldgate-out/plan/demo/tricky/default/1/checkpoints");
    let save = want.iter().position(|w| w == "--save").unwrap();
    want[save + 1] = plan_out.display().to_string();
    assert_eq!(argv, want);
}

#[test]
fn usage_errors_list_the_valid_choices() {
    let tree = Tree::new();
    let cases: [&[&str]; 4] = [
        &["plan", "--variant", "allocator=huge"],
        &["plan", "--matrix", "colour"],
        &["plan", "--platform", "moon"],
        &["repro", "demo/tricky", "--matrix", "allocator"],
    ];
    let mut all = String::new();
    for args in cases {
        let out = tree.goldgate(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        all.push_str(&format!(
            "$ goldgate {}\n{}\n",
            args.join(" "),
            tree.text(&out.stderr)
        ));
    }
    insta::assert_snapshot!(all);
}

#[test]
fn unresolved_placeholders_are_listed_in_one_error() {
    let tree = Tree::new();
    let case = "TEST_TYPE: regular\nENV_VARS:\n  BLEND: ${DATA_BLEND}\nMODEL_ARGS:\n  --data-path: ${DATA_PATH}\n  --tokenizer-model: ${TOKENIZER_MODEL}\n  --blend: $DATA_BLEND\n";
    write(
        &tree.path().join("cases/demo/release/model_config.yaml"),
        case,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_goldgate"))
        .args([
            "plan",
            "demo/release",
            "--root",
            "cases",
            "--config",
            "goldgate.yaml",
        ])
        .current_dir(tree.path())
        .env_remove("DATA_PATH")
        .env_remove("DATA_BLEND")
        .env_remove("TOKENIZER_MODEL")
        .env_remove("MEGATRON_LM_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!(tree.text(&out.stderr));
}

/// Names a corpus case may use that no platform provides: release-only data and tokenizer
/// paths, W&B settings, and names Megatron's own ENV_VARS define (which cannot feed
/// placeholders, since envsubst runs before they are exported).
fn providable(name: &str) -> bool {
    [
        "CHECKPOINT_SAVE_PATH",
        "CHECKPOINT_LOAD_PATH",
        "TENSORBOARD_PATH",
        "DATA_PATH",
        "DATA_CACHE_PATH",
    ]
    .contains(&name)
        || [
            "OUTPUT_PATH",
            "INFERENCE_OUTPUT_PATH",
            "LOG_DIR",
            "REPEAT",
            "MEGATRON_LM_DIR",
        ]
        .contains(&name)
}

fn planned_words(case: &TestCase) -> Vec<String> {
    let mut texts: Vec<String> = case.env_vars.iter().map(|(_, v)| v.text.clone()).collect();
    for args in &case.model_args {
        texts.extend(args.entries.iter().map(|(_, v)| v.text.clone()));
    }
    texts
}

#[test]
fn every_corpus_case_plans_or_names_its_unresolved_placeholders() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let config = Config::builtin().unwrap();
    let platform = config.platform(Some("dgx_h100")).unwrap();
    let caller: BTreeMap<String, String> = [
        ("DATA_PATH", "/data"),
        ("MEGATRON_LM_DIR", "/opt/megatron-lm"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into();
    let inputs = PlanInputs {
        config: &config,
        platform,
        out_dir: Path::new("/out"),
        run_id: "corpus",
        base_dir: Path::new("/repo"),
        caller_env: &caller,
    };
    let request = VariantRequest::default();
    let (mut planned, mut failed, mut expected_failures) = (0, BTreeSet::new(), BTreeSet::new());
    let mut jobs_seen = 0;
    let mut all_names: BTreeSet<String> = BTreeSet::new();
    for case_ref in discover(&root).unwrap() {
        let case = load_case(&root, &case_ref.config_path).unwrap();
        let unknown: BTreeSet<String> = planned_words(&case)
            .iter()
            .flat_map(|t| placeholders(t))
            .map(|(name, _)| name)
            .filter(|name| !providable(name))
            .collect();
        if !unknown.is_empty() {
            expected_failures.insert(case.name.clone());
        }
        match plan_case(&inputs, &case, &request, 1) {
            Ok(jobs) => {
                planned += 1;
                jobs_seen += jobs.len();
                for run in jobs.iter().flat_map(|j| &j.runs) {
                    assert!(
                        run.entry_argv
                            .iter()
                            .all(|w| placeholders(w).iter().all(|(n, _)| !providable(n))),
                        "{}: a placeholder was passed on: {:?}",
                        case.name,
                        run.entry_argv
                    );
                }
            }
            Err(PlanError::Unresolved { names, list, .. }) => {
                assert_eq!(
                    names.iter().cloned().collect::<BTreeSet<_>>(),
                    unknown,
                    "{}",
                    case.name
                );
                assert!(
                    list.contains(&case.config_path.display().to_string()),
                    "{list}"
                );
                for name in &names {
                    let own = case.env_vars.iter().any(|(k, _)| k == name);
                    let release = name == "DATA_BLEND"
                        || name.starts_with("TOKENIZER")
                        || name.starts_with("WANDB_");
                    assert!(
                        own || release,
                        "{}: unexpected unresolved name {name}",
                        case.name
                    );
                }
                all_names.extend(names.iter().cloned());
                failed.insert(case.name.clone());
            }
            Err(other) => panic!("{}: {other}", case.name),
        }
    }
    assert_eq!(failed, expected_failures);
    assert_eq!(planned + failed.len(), 333);
    assert!(planned >= 300, "only {planned} corpus cases planned");
    assert!(jobs_seen >= planned);
    let ckpt_resume = discover(&root)
        .unwrap()
        .iter()
        .map(|c| load_case(&root, &c.config_path).unwrap())
        .filter(|c| {
            c.test_type == goldgate::case::TestType::CkptResume
                && !expected_failures.contains(&c.name)
        })
        .count();
    assert!(ckpt_resume > 0);
    eprintln!(
        "corpus: {planned} planned, {} need release-only placeholders: {all_names:?}",
        failed.len()
    );
}

#[test]
fn ckpt_resume_cases_get_two_runs() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let config = Config::builtin().unwrap();
    let caller: BTreeMap<String, String> = [("DATA_PATH", "/data"), ("MEGATRON_LM_DIR", "/m")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    let platform = config.platform(Some("dgx_h100")).unwrap();
    let inputs = PlanInputs {
        config: &config,
        platform,
        out_dir: Path::new("/out"),
        run_id: "r",
        base_dir: Path::new("/repo"),
        caller_env: &caller,
    };
    let mut seen = 0;
    for case_ref in discover(&root).unwrap() {
        let case = load_case(&root, &case_ref.config_path).unwrap();
        if case.test_type != goldgate::case::TestType::CkptResume {
            continue;
        }
        let Ok(jobs) = plan_case(&inputs, &case, &VariantRequest::default(), 1) else {
            continue;
        };
        let job = &jobs[0];
        assert_eq!(job.runs.len(), 2, "{}", case.name);
        let second = case.model_args_for_run(2).unwrap();
        if second.key == "MODEL_ARGS" {
            assert_eq!(job.runs[0], job.runs[1], "{}", case.name);
        }
        assert_eq!(
            job.launcher.prefix("1")[2],
            "8",
            "{}: dgx_h100 has 8 GPUs per node",
            case.name
        );
        seen += 1;
    }
    assert!(seen > 0);
}

#[test]
fn plan_json_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["plan", "--variant", "allocator=gc80", "--format", "json"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    insta::assert_snapshot!(tree.text(&out.stdout));
}
