//! Integration: the `goldgate check` and `goldgate list` binaries over broken fixtures and the corpus.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
use crate::common;

use common::cli;
use goldgate_core::fixtures::corpus;

/// goldgate with no data root or Megatron checkout in the environment (`check` plans every
/// case, so placeholders those would fill are reported).
fn goldgate(dir: impl AsRef<Path>, args: &[&str]) -> Output {
    cli::goldgate()
        .args(args)
        .current_dir(dir)
        .env_remove("DATA_PATH")
        .env_remove("MEGATRON_LM_DIR")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn check_reports_every_broken_input_with_its_place_and_exits_2() {
    let started = Instant::now();
    let out = goldgate(
        FIXTURES,
        &["check", "--root", "broken", "--golden-root", "broken"],
    );
    // The alias bomb and the deep nesting are refused quickly, not expanded.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn check_over_the_corpus_finds_only_the_two_empty_goldens() {
    let Some(cases) = corpus::test_cases() else {
        return;
    };
    let out = goldgate(&cases, &["check", "--root", "."]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = text(&out.stdout);
    let errors: Vec<_> = stdout.lines().filter(|l| l.contains(": error: ")).collect();
    assert_eq!(
        errors,
        [
            "./gpt/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed/golden_values_dev_dgxh100_dgxc.json: error: empty golden file (0 bytes)",
            "./moe/gpt3_moe_mcore_te_ep8_resume_torch_dist_dist_optimizer/golden_values_lts_dgx_a100.json: error: empty golden file (0 bytes)",
        ]
    );
    // Without --platform a case is planned on its recipe's platform, else on the platform its
    // golden files name: only the 9 cases with neither are planned on the default dev_cpu (one
    // GPU), where 70 were before and every parallel layout warned.
    let on_default = stdout
        .lines()
        .filter(|l| l.contains("warning: on platform dev_cpu:"))
        .count();
    assert_eq!(on_default, 9, "{stdout}");
    // A full checkout's two folders of recipe scripts are one note each, and say why.
    let scripts = corpus::script_folders_in(&cases);
    for dir in &scripts {
        let note = format!(
            "./{dir}: note: no model_config.yaml in this case folder: it holds scripts that a \
             recipe runs by its own commands, not run_ci_test.sh (Megatron does not treat it as \
             a case either); skipped"
        );
        assert!(stdout.lines().any(|l| l == note), "{stdout}");
    }
    let notes = 69 + scripts.len();
    assert!(
        stdout.ends_with(&format!(
            "checked 333 case(s) and 915 golden file(s): 2 error(s), 304 warning(s), {notes} note(s)\n"
        )),
        "{}",
        stdout.lines().last().unwrap_or("")
    );
}

#[test]
fn a_list_of_lists_golden_is_a_warning_not_an_error() {
    let out = goldgate(FIXTURES, &["check", "--root", "shapes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "shapes/old/lm_loss_2d/golden_values_dev_dgx_h100.json: warning: \"lm loss\": values are \
         a list of lists (3 rows of 2 values), a shape goldgate cannot compare\n  \
         help: compare reports this metric as unsupported; bless writes it afresh\n\
         checked 1 case(s) and 1 golden file(s): 0 error(s), 1 warning(s), 0 note(s)\n"
    );
}

#[test]
fn check_ignore_turns_known_bad_files_into_notes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("goldgate.yaml");
    std::fs::write(
        &config,
        "platforms:\n  dev_cpu: {gpus_per_node: 1}\ncheck:\n  ignore:\n    \
         \"golden/bad_goldens/golden_values_dev_dgx_h*.json\": broken upstream\n    \
         bad/empty/model_config.yaml:\n    bad/gone/*: fixed upstream\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let out = goldgate(
        FIXTURES,
        &[
            "check",
            "--root",
            "broken",
            "--golden-root",
            "broken",
            "--config",
            config,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "other errors remain");
    let stdout = text(&out.stdout);
    let notes: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(": note: ignored"))
        .collect();
    assert_eq!(
        notes,
        [
            "broken/bad/empty/model_config.yaml: note: ignored error: empty file",
            "broken/golden/bad_goldens/golden_values_dev_dgx_h100.json: note: ignored error (broken upstream): empty golden file (0 bytes)",
            "broken/golden/bad_goldens/golden_values_dev_dgx_h100_2nd.json:1:102: note: ignored error (broken upstream): not UTF-8 text (invalid byte sequence)",
        ]
    );
    assert!(
        stdout.contains(&format!(
            "{config}: warning: check.ignore: `bad/gone/*` matches no problem; remove it?"
        )),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("13 error(s), 7 warning(s), 5 note(s)\n"),
        "{stdout}"
    );
}

#[test]
fn check_ignore_acknowledges_the_corpus_known_bad_goldens() {
    let Some(cases) = corpus::test_cases() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("goldgate.yaml");
    std::fs::write(
        &config,
        "check:\n  ignore:\n    \
         gpt/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed/golden_values_dev_dgxh100_dgxc.json: 0 bytes upstream\n    \
         moe/gpt3_moe_mcore_te_ep8_resume_torch_dist_dist_optimizer/golden_values_lts_dgx_a100.json: 0 bytes upstream\n",
    )
    .unwrap();
    let out = goldgate(
        &cases,
        &["check", "--root", ".", "--config", config.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let notes = 71 + corpus::script_folders_in(&cases).len();
    assert!(
        text(&out.stdout).ends_with(&format!("0 error(s), 307 warning(s), {notes} note(s)\n")),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn missing_root_is_a_usage_error() {
    let out = goldgate(FIXTURES, &["check", "--root", "no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no/such/dir: not a folder of test cases"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn list_json_names_every_corpus_case() {
    let Some(cases) = corpus::test_cases() else {
        return;
    };
    let out = goldgate(&cases, &["list", "--root", ".", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    let rows = doc["cases"].as_array().unwrap();
    assert_eq!(rows.len(), 333);
    assert!(
        rows.iter()
            .all(|r| r["name"].as_str().is_some_and(|n| n.contains('/')))
    );
    let resume = rows
        .iter()
        .find(|r| r["name"] == "gpt/gpt3_mcore_reruns_resume_check_grads")
        .unwrap();
    assert_eq!(resume["test_type"], "checkpoint-consistency");
    assert_eq!(resume["launcher"], "ft_launcher");
}

#[test]
fn list_table_with_filter() {
    let Some(cases) = corpus::test_cases() else {
        return;
    };
    let out = goldgate(&cases, &["list", "--root", ".", "--filter", "^gpt-nemo/"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    insta::assert_snapshot!(text(&out.stdout));
}

#[test]
fn list_marks_broken_cases_and_exits_2() {
    let out = goldgate(
        FIXTURES,
        &["list", "--root", "broken", "--filter", "^(bad/empty|warn/)"],
    );
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!(format!(
        "{}\n--- stderr ---\n{}",
        text(&out.stdout),
        text(&out.stderr)
    ));
}

#[test]
fn list_rejects_a_bad_filter() {
    let out = goldgate(FIXTURES, &["list", "--root", "broken", "--filter", "("]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--filter: invalid regular expression"),
        "{}",
        text(&out.stderr)
    );
    assert!(Path::new(FIXTURES).is_dir());
}

#[test]
fn list_finds_goldens_beside_the_config_and_under_the_golden_root() {
    let args = [
        "list",
        "--root",
        "clean",
        "--golden-root",
        "extra_golden",
        "--filter",
        "^good/",
        "--format",
        "json",
    ];
    let out = goldgate(FIXTURES, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<_> = doc["cases"][0]["goldens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "clean/good/tiny/golden_values_dev_dgx_h100.json",
            "extra_golden/good/tiny/golden_values_lts_dgx_a100.json",
        ]
    );
}

#[test]
fn check_passes_a_clean_tree_with_goldens_under_the_golden_root() {
    let out = goldgate(
        FIXTURES,
        &["check", "--root", "clean", "--golden-root", "extra_golden"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "checked 1 case(s) and 2 golden file(s): 0 error(s), 0 warning(s), 0 note(s)\n"
    );
}

#[test]
fn version_names_the_release_tag_and_the_commit_it_was_built_from() {
    let out = goldgate(FIXTURES, &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let line = text(&out.stdout);
    let inside = line
        .strip_prefix(concat!("goldgate ", env!("CARGO_PKG_VERSION"), " ("))
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{line}"));
    // `v0.2.0, commit …` when built at a release tag (or with GOLDGATE_RELEASE), else `commit …`.
    let (tag, commit) = match inside.split_once(", ") {
        Some((tag, rest)) => (Some(tag), rest),
        None => (None, inside),
    };
    let commit = commit
        .strip_prefix("commit ")
        .unwrap_or_else(|| panic!("{line}"));
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-C", FIXTURES])
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    // Built in a git checkout: the short hash, never `unknown`.
    if git(&["rev-parse", "HEAD"]).is_some() {
        assert_eq!(commit.len(), 12, "{line}");
        assert!(commit.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
    }
    if let Some(tag) = tag {
        assert!(tag.starts_with('v'), "{line}");
    }
}

#[test]
fn completions_and_man_pages_come_from_the_parser() {
    for (shell, marker) in [
        ("bash", "_goldgate()"),
        ("zsh", "#compdef goldgate"),
        ("fish", "complete -c goldgate"),
    ] {
        let out = goldgate(FIXTURES, &["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("golden-root"),
            "{shell}: flags are completed"
        );
        assert!(
            !script.contains("fake-trainer"),
            "{shell}: hidden stays hidden"
        );
    }
    let bad = goldgate(FIXTURES, &["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let man = goldgate(FIXTURES, &["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = text(&man.stdout);
    assert!(page.contains(".TH goldgate 1"), "{page}");
    assert!(page.contains("\\-\\-color"), "{page}");

    let dir = tempfile::tempdir().unwrap();
    let out = goldgate(FIXTURES, &["man", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = std::fs::read_to_string(dir.path().join("goldgate-run.1")).unwrap();
    assert!(run.contains(".TH goldgate-run 1"), "{run}");
    assert!(run.contains("\\-\\-partition"), "{run}");
    assert!(!dir.path().join("goldgate-fake-trainer.1").exists());
    // Every page and every --help says the exit codes.
    for page in [&page, &run] {
        assert!(
            page.contains(".SH \"EXIT STATUS\"\n.TP\n0\npass: ") && page.contains(".TP\n3\n"),
            "{page}"
        );
        assert!(!page.contains(".SH EXTRA"), "{page}");
    }
    for args in [&["--help"][..], &["run", "--help"], &["compare", "-h"]] {
        let help = text(&goldgate(FIXTURES, args).stdout);
        let at = help
            .find("Exit status:\n  0  pass: ")
            .unwrap_or_else(|| panic!("{help}"));
        assert!(
            help[at..].contains("\n  3  a job or the infrastructure failed"),
            "{help}"
        );
    }
}

#[test]
fn bash_completes_case_names_from_list_names() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = goldgate(repo, &["list", "--names", "demo/c*"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "demo/ckpt-demo\ndemo/ckpt-power\ndemo/crash-demo\n"
    );
    let script = tempfile::NamedTempFile::new().unwrap();
    let completions = goldgate(repo, &["completions", "bash"]);
    std::fs::write(script.path(), &completions.stdout).unwrap();
    // What bash does on `goldgate <words><TAB>`: the completion function fills COMPREPLY.
    let complete = |words: &str| {
        let bin = Path::new(env!("CARGO_BIN_EXE_goldgate"));
        let line = format!(
            "source {}; COMP_WORDS=({} {words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"goldgate {words}\"; COMP_POINT=${{#COMP_LINE}}; \
             _goldgate_cases goldgate \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.path().display(),
            bin.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &line])
            .current_dir(repo)
            .output()
            .unwrap();
        text(&out.stdout)
    };
    assert_eq!(
        complete("run demo/cr"),
        "demo/crash-demo\n",
        "case names after `run`"
    );
    assert_eq!(
        complete("plan --root test_cases gpt/h200-ckpt-a"),
        "gpt/h200-ckpt-allocator\n"
    );
    assert!(
        !complete("compare demo/").contains("demo/ckpt-demo"),
        "not for compare"
    );
}
