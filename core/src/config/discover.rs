//! Stage "plan": which `goldgate.yaml` a command uses, found the way cargo and nextest find
//! their configuration: `--config`, else `GOLDGATE_CONFIG`, else the first `goldgate.yaml` in
//! the working directory or a folder above it up to the repository root (the first folder
//! holding `.git`), else the configuration shipped with goldgate.

use std::path::{Path, PathBuf};

/// The file name looked for in each folder.
pub const CONFIG_NAME: &str = "goldgate.yaml";

/// The environment variable naming the configuration when `--config` is not given.
pub const CONFIG_ENV: &str = "GOLDGATE_CONFIG";

/// Where the configuration comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config PATH` (must exist).
    Flag(PathBuf),
    /// `GOLDGATE_CONFIG=PATH` (must exist).
    Env(PathBuf),
    /// `goldgate.yaml` in the working directory (`above` = 0) or `above` folders up.
    Found { path: PathBuf, above: usize },
    /// No file: the shipped configuration; `searched_to` is the last folder looked in.
    Builtin { searched_to: PathBuf },
}

impl ConfigSource {
    /// The file to read, none for the shipped configuration.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigSource::Flag(p) | ConfigSource::Env(p) => Some(p),
            ConfigSource::Found { path, .. } => Some(path),
            ConfigSource::Builtin { .. } => None,
        }
    }

    /// One line saying which configuration is used, for the cases a user could not guess it
    /// (none for `--config` or `./goldgate.yaml`).
    pub fn note(&self) -> Option<String> {
        match self {
            ConfigSource::Flag(_) | ConfigSource::Found { above: 0, .. } => None,
            ConfigSource::Env(p) => Some(format!("config: {} (from {CONFIG_ENV})", p.display())),
            ConfigSource::Found { path, .. } => Some(format!(
                "config: {} (found above the working directory)",
                path.display()
            )),
            ConfigSource::Builtin { searched_to } => Some(format!(
                "config: built-in (no {CONFIG_NAME} from the working directory up to {})",
                searched_to.display()
            )),
        }
    }
}

/// Decides where the configuration comes from: `flag`, else `env` (an empty value counts as
/// unset), else the walk up from `cwd`.
pub fn discover(flag: Option<&Path>, env: Option<&std::ffi::OsStr>, cwd: &Path) -> ConfigSource {
    if let Some(p) = flag {
        return ConfigSource::Flag(p.to_path_buf());
    }
    if let Some(p) = env.filter(|v| !v.is_empty()) {
        return ConfigSource::Env(PathBuf::from(p));
    }
    let mut last = cwd;
    for (above, dir) in cwd.ancestors().enumerate() {
        last = dir;
        let candidate = dir.join(CONFIG_NAME);
        if crate::fsio::exists(&candidate) {
            let path = if above == 0 {
                PathBuf::from(CONFIG_NAME)
            } else {
                candidate
            };
            return ConfigSource::Found { path, above };
        }
        if crate::fsio::exists(&dir.join(".git")) {
            break;
        }
    }
    ConfigSource::Builtin {
        searched_to: last.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/a/b")).unwrap();
        dir
    }

    #[test]
    fn the_working_directory_wins_and_is_named_relatively() {
        let dir = tree();
        let repo = dir.path().join("repo");
        std::fs::write(repo.join("goldgate.yaml"), "").unwrap();
        std::fs::write(repo.join("a/goldgate.yaml"), "").unwrap();
        let found = discover(None, None, &repo.join("a"));
        assert_eq!(
            found,
            ConfigSource::Found {
                path: PathBuf::from("goldgate.yaml"),
                above: 0
            }
        );
        assert_eq!(found.note(), None);
    }

    #[test]
    fn a_file_above_is_found_and_said() {
        let dir = tree();
        let repo = dir.path().join("repo");
        std::fs::write(repo.join("goldgate.yaml"), "").unwrap();
        let found = discover(None, None, &repo.join("a/b"));
        assert_eq!(
            found,
            ConfigSource::Found {
                path: repo.join("goldgate.yaml"),
                above: 2
            }
        );
        let note = found.note().unwrap();
        assert!(note.contains("found above"), "{note}");
    }

    #[test]
    fn the_walk_stops_at_the_repository_root() {
        let dir = tree();
        // Above the repository: not this repository's configuration.
        std::fs::write(dir.path().join("goldgate.yaml"), "").unwrap();
        let repo = dir.path().join("repo");
        let found = discover(None, None, &repo.join("a"));
        assert_eq!(
            found,
            ConfigSource::Builtin {
                searched_to: repo.clone()
            }
        );
        assert_eq!(found.path(), None);
        assert!(found.note().unwrap().contains("built-in"));
    }

    #[test]
    fn flag_then_env_come_first() {
        let dir = tree();
        let repo = dir.path().join("repo");
        std::fs::write(repo.join("goldgate.yaml"), "").unwrap();
        let env = std::ffi::OsStr::new("/etc/gg.yaml");
        assert_eq!(
            discover(Some(Path::new("x.yaml")), Some(env), &repo),
            ConfigSource::Flag(PathBuf::from("x.yaml"))
        );
        let from_env = discover(None, Some(env), &repo);
        assert_eq!(from_env, ConfigSource::Env(PathBuf::from("/etc/gg.yaml")));
        assert!(from_env.note().unwrap().contains(CONFIG_ENV));
        // An empty variable is unset.
        assert!(matches!(
            discover(None, Some(std::ffi::OsStr::new("")), &repo),
            ConfigSource::Found { above: 0, .. }
        ));
    }
}
