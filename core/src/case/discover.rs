//! Stage "case": finding cases laid out `<root>/<model>/<case>/model_config.yaml`.
//!
//! Megatron nests exactly two levels (all 333 corpus cases do), so only that depth is
//! searched; a folder at case depth without `model_config.yaml` is reported, not an error.
//! A Megatron-LM checkout has six: four hold only golden files, two (`common/moe_perf`,
//! `gpt/gpt_inference_server_smoke_tp1_pp1_dp8_583m`) hold Python that their recipe's own
//! `script` runs instead of `run_ci_test.sh` — not a case for Megatron either
//! ([`holds_scripts`] tells them apart). A `model_config.yaml` that is not a regular file is
//! a case that fails to load, never a folder "without config".

use std::path::{Path, PathBuf};

use super::error::CaseError;
use super::types::CaseRef;

/// The file name of a case's configuration.
pub const CONFIG_FILE: &str = "model_config.yaml";

/// What a walk of a case root found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Cases, sorted by name.
    pub cases: Vec<CaseRef>,
    /// Case-depth folders with no `model_config.yaml`, sorted.
    pub without_config: Vec<PathBuf>,
}

/// Every case under `root`, sorted by name.
pub fn discover(root: &Path) -> Result<Vec<CaseRef>, CaseError> {
    discover_all(root).map(|d| d.cases)
}

/// Every case under `root` plus the case folders that lack a `model_config.yaml`.
pub fn discover_all(root: &Path) -> Result<Discovery, CaseError> {
    if !root.is_dir() {
        return Err(CaseError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let mut found = Discovery::default();
    for model in subdirs(root)? {
        let model_name = file_name(&model);
        for dir in subdirs(&model)? {
            let config_path = dir.join(CONFIG_FILE);
            // Any file by that name makes a case, also a folder, a FIFO or a symlink loop:
            // loading it then fails with an error naming it, instead of a silent skip.
            if crate::fsio::exists(&config_path) {
                let name = format!("{model_name}/{}", file_name(&dir));
                found.cases.push(CaseRef {
                    name,
                    dir,
                    config_path,
                });
            } else {
                found.without_config.push(dir);
            }
        }
    }
    found.cases.sort();
    found.without_config.sort();
    Ok(found)
}

/// Whether a folder holds scripts (`*.py`, `*.sh`): a case folder without `model_config.yaml`
/// that a recipe runs by its own commands, rather than one keeping golden files only.
pub fn holds_scripts(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".py") || name.ends_with(".sh")
        })
    })
}

/// Sub-folders of `dir` (hidden ones skipped), sorted.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, CaseError> {
    let read = |source| CaseError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        if !file_name(&path).starts_with('.') && path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_two_level_cases_sorted_and_reports_folders_without_config() {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["gpt/b", "gpt/a", "bert/x", "gpt/no_config", ".hidden/y"] {
            std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        for dir in ["gpt/b", "gpt/a", "bert/x", ".hidden/y"] {
            std::fs::write(
                tmp.path().join(dir).join(CONFIG_FILE),
                "TEST_TYPE: regular\n",
            )
            .unwrap();
        }
        let found = discover_all(tmp.path()).unwrap();
        let names: Vec<_> = found.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bert/x", "gpt/a", "gpt/b"]);
        assert_eq!(found.without_config, [tmp.path().join("gpt/no_config")]);
        assert!(!holds_scripts(&tmp.path().join("gpt/no_config")));
        std::fs::write(tmp.path().join("gpt/no_config/serve.py"), "").unwrap();
        assert!(holds_scripts(&tmp.path().join("gpt/no_config")));
    }

    #[test]
    fn missing_root_is_an_error() {
        let e = discover(Path::new("/nonexistent/goldgate/root")).unwrap_err();
        assert!(e.to_string().contains("not a folder of test cases"), "{e}");
    }

    #[test]
    fn a_broken_config_file_is_a_case_that_fails_to_load_not_a_skip() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in ["m/folder", "m/fifo", "m/loop"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::create_dir(root.join("m/folder").join(CONFIG_FILE)).unwrap();
        let fifo = root.join("m/fifo").join(CONFIG_FILE);
        crate::fsio::mkfifo(&fifo);
        let looped = root.join("m/loop").join(CONFIG_FILE);
        std::os::unix::fs::symlink(&looped, &looped).unwrap();
        let found = discover_all(root).unwrap();
        let names: Vec<_> = found.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["m/fifo", "m/folder", "m/loop"]);
        assert!(found.without_config.is_empty());
        for case in &found.cases {
            let err = crate::case::load_case(root, &case.config_path).unwrap_err();
            let text = format!(
                "{err} {}",
                std::error::Error::source(&err)
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
            assert!(
                text.contains(&case.config_path.display().to_string()),
                "{text}"
            );
        }
    }
}
