//! `goldgate plan` and `goldgate repro` end to end: the real binary on small case trees,
//! the generated script run with bash, and every corpus case planned.

// Test helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use goldgate_core::case::{CaseRecipe, discover, load_case, placeholders};
use goldgate_core::config::Config;
use goldgate_record::plan::{PlanError, PlanInputs, VariantRequest, plan_case};

use crate::common;

use common::cli::{self, write};
use common::redact::redact;
use goldgate_core::fixtures::corpus;

/// A case whose MODEL_ARGS hold characters a shell could trip on, in values Megatron's
/// `_run_training.sh` accepts (its `xargs` trim removes quotes and collapses blanks).
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
  --quotes: "'single quoted'  text"
  --dollar: "costs 5$ and $"
  --pipe: "a|b"
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
  cluster:
    gpus_per_node: 1
    executor: slurm
    timeout: 5m
    slurm:
      partition: batch
      account: research
      qos: high
      gres: gpu:1
      sbatch_args: [--exclusive]
      container_image: nvcr.io/nvidia/pytorch:25.01-py3
      container_mounts: [/lustre:/lustre]
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
        cli::goldgate()
            .args(args)
            .args(["--root", "cases", "--config", "goldgate.yaml"])
            .current_dir(self.path())
            .env("MY_TOKEN", "sekrit-value")
            .output()
            .unwrap()
    }

    /// stdout or stderr with the temporary folder written as `[TMP]`.
    fn text(&self, bytes: &[u8]) -> String {
        redact(&String::from_utf8_lossy(bytes), &[self.path()])
    }
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
        .join(format!("results/repro/demo/tricky/{variant_slug}/1"));
    let mut argv = vec![
        "--spaces",
        "two words",
        "--quotes",
        "single quoted text",
        "--dollar",
        "costs 5$ and $",
        "--pipe",
        "a|b",
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
        .join("results/repro/demo/tricky/default/1/output");
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
        .join(format!("results/repro/demo/tricky/{slug}/1/output"));
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
fn repro_of_the_nth_repeat_is_the_job_plan_and_run_give_that_repeat() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky", "--repeat", "3"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let script = tree.text(&out.stdout);
    assert!(
        script.contains("# Reproduces the goldgate job demo/tricky@default#3\n"),
        "{script}"
    );
    assert!(script.contains("export REPEAT=3\n"), "{script}");
    let folder = "[TMP]/results/repro/demo/tricky/default/3";
    assert!(script.contains(&format!("\ncd {folder}\n")), "{script}");
    // `plan` of three repeats under the same run id names the same folder for repeat 3.
    let out = tree.goldgate(&["plan", "demo/tricky", "--repeat", "3", "--run-id", "repro"]);
    let plan = tree.text(&out.stdout);
    assert!(plan.contains(&format!("  folder   {folder}\n")), "{plan}");
    let out = tree.goldgate(&["repro", "demo/tricky", "--repeat", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", tree.text(&out.stderr));
}

#[test]
fn plan_says_where_run_puts_its_job_folders() {
    let tree = Tree::new();
    let out = tree.goldgate(&["plan", "demo/tricky"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let plan = tree.text(&out.stdout);
    let second = plan.lines().nth(1).unwrap_or_default();
    insta::assert_snapshot!(second, @"job folders under [TMP]/results/plan/; `goldgate run` puts the same jobs under [TMP]/results/<run-id>/ (a fresh run id, YYYYMMDD-HHMMSS-xxxx)");
}

#[test]
fn repro_script_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky", "--variant", "checkpoint=async"]);
    insta::assert_snapshot!(tree.text(&out.stdout));
}

#[test]
fn slurm_batch_script_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["repro", "demo/tricky", "--platform", "cluster"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    let text = tree.text(&out.stdout);
    assert!(!text.contains("sekrit-value"));
    insta::assert_snapshot!(text);
    // `--executor slurm` picks the same script on a platform whose executor is local.
    let plan = tree.goldgate(&["plan", "demo/tricky", "--executor", "slurm"]);
    let plan = tree.text(&plan.stdout);
    assert!(plan.contains("── batch script of demo/tricky@"), "{plan}");
    assert!(plan.contains("#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n"));
    let local = tree.goldgate(&[
        "repro",
        "demo/tricky",
        "--platform",
        "cluster",
        "--executor",
        "local",
    ]);
    assert!(!tree.text(&local.stdout).contains("#SBATCH"));
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
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut cases: Vec<String> = doc["jobs"]
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
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["schema_version"], 1);
    let job = &doc["jobs"][0];
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
        .join("results/plan/demo/tricky/default/1/checkpoints");
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
fn names_nothing_sets_warn_once_and_strict_refuses() {
    let tree = Tree::new();
    let case = "TEST_TYPE: regular\nENV_VARS:\n  BLEND: ${DATA_BLEND}\nMODEL_ARGS:\n  --data-path: ${DATA_PATH}\n  --tokenizer-model: ${TOKENIZER_MODEL}\n  --blend: $DATA_BLEND\n  --own: ${BLEND}\n";
    write(
        &tree.path().join("cases/demo/release/model_config.yaml"),
        case,
    );
    let plan = |strict: bool| {
        let mut cmd = cli::goldgate();
        cmd.args([
            "plan",
            "demo/release",
            "--root",
            "cases",
            "--config",
            "goldgate.yaml",
        ]);
        if strict {
            cmd.arg("--strict-placeholders");
        }
        cmd.current_dir(tree.path())
            .env_remove("DATA_PATH")
            .env_remove("DATA_BLEND")
            .env_remove("TOKENIZER_MODEL")
            .env_remove("MEGATRON_LM_DIR")
            .output()
            .unwrap()
    };
    let lenient = plan(false);
    assert_eq!(lenient.status.code(), Some(0));
    let stdout = tree.text(&lenient.stdout);
    assert!(
        stdout.contains("--tokenizer-model '${TOKENIZER_MODEL}'"),
        "{stdout}"
    );
    let strict = plan(true);
    assert_eq!(strict.status.code(), Some(2));
    insta::assert_snapshot!(format!(
        "$ goldgate plan demo/release\n{}\n$ goldgate plan demo/release --strict-placeholders\n{}",
        tree.text(&lenient.stderr),
        tree.text(&strict.stderr)
    ));
}

/// A placeholder nothing sets is warned about once, naming how many cases use it (as
/// Megatron's MR scope has 128 that name `${MEGATRON_LM_DIR}`), and an entry word that starts
/// with it stays as written instead of being glued to the working folder.
#[test]
fn an_unset_placeholder_names_every_case_it_affects_and_stays_as_written() {
    let tree = Tree::new();
    for name in ["a", "b", "c"] {
        let case = "TEST_TYPE: regular\nLAUNCHER: direct\nMODEL_ARGS:\n  --data-path: ${DATA_PATH}\n\
                    GOLDGATE:\n  entry: [python, \"${MEGATRON_LM_DIR}/examples/run.py\"]\n  nproc: 1\n";
        write(
            &tree
                .path()
                .join(format!("cases/many/{name}/model_config.yaml")),
            case,
        );
    }
    let o = cli::goldgate()
        .args([
            "plan",
            "many/*",
            "--root",
            "cases",
            "--config",
            "goldgate.yaml",
        ])
        .current_dir(tree.path())
        .env_remove("DATA_PATH")
        .env_remove("MEGATRON_LM_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", tree.text(&o.stderr));
    let stdout = tree.text(&o.stdout);
    assert!(
        stdout.contains("'${MEGATRON_LM_DIR}/examples/run.py'"),
        "{stdout}"
    );
    assert!(!stdout.contains("[TMP]/${MEGATRON_LM_DIR}"), "{stdout}");
    insta::assert_snapshot!(tree.text(&o.stderr));
}

/// A key written twice (`TEST_TYPE`) is said by `plan`, `run` and `list` as by `check`: the
/// last value is used, and a reviewer of the file reads the first.
#[test]
fn plan_run_and_list_say_when_a_case_holds_a_key_twice() {
    let tree = Tree::new();
    let case = "TEST_TYPE: ckpt-resume\nLAUNCHER: direct\nTEST_TYPE: regular\nMODEL_ARGS:\n  --x: 1\n\
                GOLDGATE:\n  entry: [\"true\"]\n  nproc: 1\n";
    write(
        &tree.path().join("cases/demo/twice/model_config.yaml"),
        case,
    );
    let mut said = Vec::new();
    for command in [
        &["plan", "demo/twice"][..],
        &["run", "demo/twice", "--no-compare", "--out", "out"],
        &["list", "demo/twice"],
    ] {
        let o = tree.goldgate(command);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{command:?}: {}",
            tree.text(&o.stderr)
        );
        let stderr = tree.text(&o.stderr);
        let line = stderr
            .lines()
            .find(|l| l.contains("duplicate key TEST_TYPE"))
            .unwrap_or_else(|| panic!("{command:?}: {stderr}"))
            .to_owned();
        said.push(line);
    }
    assert!(said.iter().all(|l| *l == said[0]), "{said:#?}");
    insta::assert_snapshot!(said[0]);
}

/// Names only Megatron's release pipeline sets (data blends, tokenizers, W&B): the corpus
/// cases that use them plan with the names left as written and one warning each.
fn release_only(name: &str) -> bool {
    name == "DATA_BLEND" || name.starts_with("TOKENIZER") || name.starts_with("WANDB_")
}

fn corpus_inputs<'a>(
    config: &'a Config,
    caller: &'a BTreeMap<String, String>,
    gpus_per_node: Option<u32>,
) -> PlanInputs<'a> {
    PlanInputs {
        config,
        platform: config.platform(Some("dgx_h100")).unwrap(),
        out_dir: Path::new("/out"),
        run_id: "corpus",
        base_dir: Path::new("/repo"),
        caller_env: caller,
        environment: "dev",
        nodes: None,
        gpus_per_node,
        warmup: 0,
        fit_nodes: false,
    }
}

fn no_recipe() -> CaseRecipe<'static> {
    CaseRecipe {
        exact: None,
        any: None,
    }
}

#[test]
fn every_corpus_case_plans_and_names_what_nothing_sets() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let config = Config::builtin().unwrap();
    let caller: BTreeMap<String, String> = [
        ("DATA_PATH", "/data"),
        ("MEGATRON_LM_DIR", "/opt/megatron-lm"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into();
    let one_dgx = corpus_inputs(&config, &caller, None);
    let big = corpus_inputs(&config, &caller, Some(128));
    let request = VariantRequest::default();
    let (mut planned, mut too_few_ranks) = (0, BTreeSet::new());
    let mut unset: BTreeSet<String> = BTreeSet::new();
    for case_ref in discover(&root).unwrap() {
        let case = load_case(&root, &case_ref.config_path).unwrap();
        let result = match plan_case(&one_dgx, &case, no_recipe(), &request, Some(1)) {
            Err(PlanError::Ranks { min, .. }) => {
                assert!(min > 8, "{}", case.name);
                too_few_ranks.insert(case.name.clone());
                plan_case(&big, &case, no_recipe(), &request, Some(1))
            }
            other => other,
        };
        let result = result.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        planned += 1;
        for u in &result.unset {
            assert!(
                release_only(&u.name),
                "{}: unexpected unset name {}",
                case.name,
                u.name
            );
            assert!(u.place.to_string().contains(&case.name), "{}", u.place);
            unset.insert(u.name.clone());
        }
        for run in result.jobs.iter().flat_map(|j| &j.runs) {
            let left: Vec<_> = run
                .entry_argv
                .iter()
                .flat_map(|w| placeholders(w))
                .map(|(n, _)| n)
                .filter(|n| !release_only(n))
                .collect();
            assert!(left.is_empty(), "{}: {left:?} passed on", case.name);
        }
    }
    assert_eq!(planned, 333);
    assert_eq!(too_few_ranks.len(), 12, "{too_few_ranks:?}");
    assert!(too_few_ranks.contains("nemotron/nemotron3_super_release_gb200"));
    eprintln!(
        "corpus: all {planned} cases plan; {} need more than one DGX; release-only names: {unset:?}",
        too_few_ranks.len()
    );
}

#[test]
fn the_second_pass_expands_names_the_case_defines() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load_case(
        &root,
        &root.join(
            "hybrid/hybrid_nemotron_v3_pico_7b_a1b_tp1_ep8_QAD_dgx_h100_1N8G/model_config.yaml",
        ),
    )
    .unwrap();
    let config = Config::builtin().unwrap();
    let caller = BTreeMap::from([("DATA_PATH".to_owned(), "/data".to_owned())]);
    let inputs = corpus_inputs(&config, &caller, None);
    let planned = plan_case(
        &inputs,
        &case,
        no_recipe(),
        &VariantRequest::default(),
        Some(1),
    )
    .unwrap();
    let argv = &planned.jobs[0].runs[0].entry_argv;
    let load = argv
        .iter()
        .position(|w| w == "--export-kd-teacher-load")
        .unwrap();
    assert_eq!(
        argv[load + 1],
        "/data/model/nemotron_v3_pico_7b-a1b/3T-token_deeparch"
    );
    assert!(
        planned.unset.iter().all(|u| u.name == "MEGATRON_LM_DIR"),
        "{:?}",
        planned.unset
    );
}

#[test]
fn ckpt_resume_cases_resume_the_first_runs_checkpoint() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let config = Config::builtin().unwrap();
    let caller: BTreeMap<String, String> = [
        ("DATA_PATH", "/data"),
        ("MEGATRON_LM_DIR", "/opt/megatron-lm"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into();
    let inputs = corpus_inputs(&config, &caller, None);
    let mut seen = 0;
    for case_ref in discover(&root).unwrap() {
        let case = load_case(&root, &case_ref.config_path).unwrap();
        if case.test_type != goldgate_core::case::TestType::CkptResume {
            continue;
        }
        let Ok(planned) = plan_case(
            &inputs,
            &case,
            no_recipe(),
            &VariantRequest::default(),
            Some(1),
        ) else {
            continue;
        };
        let job = &planned.jobs[0];
        assert_eq!(job.runs.len(), 2, "{}", case.name);
        let ckpt = job.dirs.checkpoints.display().to_string();
        assert_eq!(
            job.runs[1].env["CHECKPOINT_LOAD_PATH"], ckpt,
            "{}",
            case.name
        );
        assert_ne!(
            job.runs[0].env["CHECKPOINT_LOAD_PATH"], ckpt,
            "{}",
            case.name
        );
        assert_eq!(job.runs[1].before.len(), 2, "{}", case.name);
        assert_eq!(job.nproc, 8, "{}: dgx_h100 has 8 GPUs per node", case.name);
        seen += 1;
    }
    assert!(seen > 80, "{seen}");
}

#[test]
fn plan_json_snapshot() {
    let tree = Tree::new();
    let out = tree.goldgate(&["plan", "--variant", "allocator=gc80", "--format", "json"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    insta::assert_snapshot!(tree.text(&out.stdout));
}

/// goldgate run in `dir` below the tree with the tree's cases, no `--config`, `GOLDGATE_CONFIG`
/// as given.
fn plan_from(tree: &Tree, dir: &str, env_config: Option<&str>, extra: &[&str]) -> Output {
    let mut cmd = cli::goldgate();
    cmd.args(["plan", "--format", "json", "--root"])
        .arg(tree.path().join("cases"))
        .args(extra)
        .current_dir(tree.path().join(dir))
        .env("MY_TOKEN", "sekrit-value")
        .env_remove("GOLDGATE_CONFIG");
    if let Some(path) = env_config {
        cmd.env("GOLDGATE_CONFIG", path);
    }
    cmd.output().unwrap()
}

#[test]
fn the_config_is_found_above_the_working_directory_and_said() {
    let tree = Tree::new();
    std::fs::create_dir(tree.path().join(".git")).unwrap();
    // `local` exists only in the tree's goldgate.yaml, not in the built-in configuration.
    let out = plan_from(&tree, "cases/demo", None, &["--platform", "local"]);
    assert!(out.status.success(), "{}", tree.text(&out.stderr));
    assert_eq!(
        tree.text(&out.stderr),
        "config: [TMP]/goldgate.yaml (found above the working directory)\n"
    );
    // In the working directory: nothing to say.
    let here = plan_from(&tree, ".", None, &["--platform", "local"]);
    assert!(here.status.success(), "{}", tree.text(&here.stderr));
    assert_eq!(tree.text(&here.stderr), "");

    // GOLDGATE_CONFIG comes before the walk, and is said.
    write(
        &tree.path().join("other.yaml"),
        "platforms:\n  envbox:\n    gpus_per_node: 1\n",
    );
    let env = plan_from(
        &tree,
        "cases",
        Some("../other.yaml"),
        &["--platform", "envbox"],
    );
    assert!(env.status.success(), "{}", tree.text(&env.stderr));
    assert_eq!(
        tree.text(&env.stderr),
        "config: ../other.yaml (from GOLDGATE_CONFIG)\n"
    );
    // A named file that is not there is an error, never the built-in configuration.
    let missing = plan_from(&tree, ".", Some("nope.yaml"), &[]);
    assert_eq!(
        missing.status.code(),
        Some(2),
        "{}",
        tree.text(&missing.stderr)
    );
    assert!(tree.text(&missing.stderr).contains("cannot read nope.yaml"));

    // The walk stops at the repository root: a case tree in its own repository below the
    // tree does not see the tree's goldgate.yaml.
    std::fs::create_dir_all(tree.path().join("cases/demo/.git")).unwrap();
    let inner = plan_from(&tree, "cases/demo", None, &["--platform", "local"]);
    assert_eq!(inner.status.code(), Some(2), "{}", tree.text(&inner.stderr));
    let text = tree.text(&inner.stderr);
    assert!(
        text.starts_with("config: built-in (no goldgate.yaml from the working directory up to [TMP]/cases/demo)\n"),
        "{text}"
    );
}

/// A Megatron GPT case as the corpus writes it: real data sets, a BPE tokenizer, fused kernels.
const DATA_CASE: &str = r#"TEST_TYPE: regular
MODEL_ARGS:
  --num-layers: 2
  --data-path: ${DATA_PATH}/text/my-gpt3_00_text_document
  --vocab-file: ${DATA_PATH}/bpe/vocab.json
  --merge-file: ${DATA_PATH}/bpe/merges.txt
  --tokenizer-type: GPT2BPETokenizer
  --split: 949,50,1
  --transformer-impl: local
  --no-gradient-accumulation-fusion: true
  --train-iters: 10
"#;

#[test]
fn data_mock_and_fused_none_make_a_corpus_case_run_without_data_sets_or_apex() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpt/data_case/model_config.yaml");
    write(&path, DATA_CASE);
    let case = load_case(dir.path(), &path).unwrap();
    let config = Config::builtin().unwrap();
    let caller: BTreeMap<String, String> = [
        ("DATA_PATH", "/data"),
        ("MEGATRON_LM_DIR", "/opt/megatron-lm"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into();
    let inputs = corpus_inputs(&config, &caller, None);
    let argv = |variants: &[&str]| -> Vec<String> {
        let variants: Vec<String> = variants.iter().map(|v| (*v).to_owned()).collect();
        let request = VariantRequest::parse(&config, &variants, &[]).unwrap();
        let planned = plan_case(&inputs, &case, no_recipe(), &request, Some(1)).unwrap();
        let argv = &planned.jobs[0].runs[0].entry_argv;
        let script = argv.iter().position(|w| w.ends_with("pretrain_gpt.py"));
        argv[script.unwrap() + 1..].to_vec()
    };
    // Both axes are opt-in: a plain plan keeps the case's data and kernels.
    let plain = argv(&[]);
    assert!(plain.contains(&"--data-path".to_owned()), "{plain:?}");
    assert!(!plain.contains(&"--mock-data".to_owned()), "{plain:?}");
    assert!(!plain.contains(&"--no-persist-layer-norm".to_owned()));
    let words = argv(&["data=mock", "fused=none"]);
    for gone in [
        "--data-path",
        "--vocab-file",
        "--merge-file",
        "GPT2BPETokenizer",
    ] {
        assert!(!words.iter().any(|w| w == gone), "{gone} in {words:?}");
    }
    let joined = words.join(" ");
    for kept in [
        "--num-layers 2",
        "--split 949,50,1",
        "--transformer-impl local",
        "--train-iters 10",
        "--mock-data",
        "--tokenizer-type NullTokenizer --vocab-size 50257",
        "--no-persist-layer-norm",
        "--no-gradient-accumulation-fusion",
        "--no-masked-softmax-fusion",
        "--no-bias-gelu-fusion",
        "--no-bias-swiglu-fusion",
        "--no-bias-dropout-fusion",
        "--no-rope-fusion",
    ] {
        assert!(joined.contains(kept), "{kept} missing from {joined}");
    }
    // The case's own flag is not given twice.
    let fusion = words
        .iter()
        .filter(|w| *w == "--no-gradient-accumulation-fusion")
        .count();
    assert_eq!(fusion, 1, "{joined}");
}

/// The mission's example case needs 64 ranks (EP 64); on GB200 nodes of 4 GPUs the Slurm
/// executor gives it 16 nodes, one launcher per node with Slurm's node count and id.
#[test]
fn nemotron_super_plans_sixteen_gb200_nodes_on_slurm() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let case = "nemotron/nemotron3_super_release_gb200";
    let plan = |extra: &[&str]| {
        cli::goldgate()
            .args(["plan", case, "--platform", "dgx_gb200", "--root"])
            .arg(&root)
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let local = plan(&[]);
    assert_eq!(
        local.status.code(),
        Some(2),
        "one node of 4 GPUs fails the rank check"
    );
    let out = plan(&["--executor", "slurm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("16 nodes × 4 ranks"), "{text}");
    assert!(
        text.contains("#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=1\n"),
        "{text}"
    );
    let launcher = text
        .lines()
        .find(|l| l.starts_with("ft_launcher "))
        .unwrap_or_else(|| panic!("no launcher line in {text}"));
    for words in [
        "--nproc_per_node 4",
        "--nnodes \"${SLURM_NNODES}\"",
        "--node_rank \"${SLURM_NODEID}\"",
        "--master_addr \"${MASTER_ADDR}\"",
    ] {
        assert!(launcher.contains(words), "{words} missing in {launcher}");
    }
    assert!(text.contains("scontrol show hostnames \"$SLURM_JOB_NODELIST\""));
    assert!(text.contains("\nsrun --ntasks-per-node=1 --kill-on-bad-exit=1 bash "));
}

#[test]
fn list_scope_shows_the_recipe_rows_that_run_scope_plans() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let root = root.display().to_string();
    let run = |args: &[&str]| -> (serde_json::Value, String) {
        let out = cli::goldgate()
            .args(args)
            .args(["--root", &root, "--scope", "mr", "--platform", "dgx_h100"])
            .args(["--format", "json"])
            .env("MEGATRON_LM_DIR", "/opt/megatron-lm")
            .env("DATA_PATH", "/data")
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    };
    let json = |args: &[&str]| run(args).0;
    let listed = json(&["list"]);
    assert_eq!(listed["schema_version"], 1);
    let rows = listed["workloads"].as_array().unwrap();
    assert!(rows.len() > 100, "{}", rows.len());
    for row in rows {
        assert_eq!(row["scope"], "mr", "{row}");
        assert_eq!(row["platform"], "dgx_h100", "{row}");
    }
    // Every job `plan --scope` makes is one listed row, and every listed row is planned or
    // says why not — in `list` and, in the same words, in `plan`'s notes (rows whose recipe
    // runs a perf script or a case folder's own Python, such as gpt/gpt_16b_perf).
    let (planned, notes) = run(&["plan"]);
    let jobs = planned["jobs"].as_array().unwrap();
    assert!(!jobs.is_empty() && jobs.len() <= rows.len());
    for job in jobs {
        let recipe = job["recipe"]["name"].as_str().unwrap();
        assert!(rows.iter().any(|r| r["name"] == recipe), "{recipe}");
    }
    let mut left_out = 0;
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let is_planned = jobs.iter().any(|j| j["recipe"]["name"] == name);
        match row["not_run"].as_str() {
            Some(why) => {
                left_out += 1;
                assert!(!is_planned, "{name}");
                let note = format!("note: skipped {name}: {why}");
                assert!(notes.lines().any(|l| l == note), "{note}\n{notes}");
            }
            None => assert!(is_planned, "{name}: neither planned nor said why"),
        }
    }
    assert!(
        rows.iter()
            .any(|r| r["case"] == "gpt/gpt_16b_perf" && r["not_run"].is_string()),
        "{rows:?}"
    );
    assert_eq!(
        notes
            .lines()
            .filter(|l| l.starts_with("note: skipped"))
            .count(),
        left_out
    );
}

#[test]
fn an_error_keeps_a_long_path_on_one_line() {
    let tree = Tree::new();
    let long = format!(
        "{}/goldgate.yaml",
        ["a-rather-long-folder-name"; 6].join("/")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_goldgate"))
        .args(["plan", "--config", &long])
        .current_dir(tree.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = tree.text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&format!("cannot read {long}:"))),
        "{stderr}"
    );
}

#[test]
fn a_case_needing_more_ranks_is_one_error_with_a_hint_naming_the_slurm_executor() {
    let tree = Tree::new();
    write(
        &tree.path().join("cases/demo/tp2/model_config.yaml"),
        "TEST_TYPE: regular\nMODEL_ARGS:\n  --tensor-model-parallel-size: 2\n  --train-iters: 2\n",
    );
    let out = tree.goldgate(&["plan", "demo/tp2"]);
    assert_eq!(out.status.code(), Some(2));
    // No `0 jobs on platform ` (no platform to name) before the error that explains it.
    assert_eq!(tree.text(&out.stdout), "");
    let stderr = tree.text(&out.stderr);
    assert!(stderr.contains("--executor slurm"), "{stderr}");
    insta::assert_snapshot!(stderr);
}
