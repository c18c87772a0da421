//! Stage "case" (golden): finding a case's golden files and reading environment/platform
//! from their names.
//!
//! Names: `golden_values_<env>_<platform>[_2nd].json` (`dev`/`lts`; `dgx_h100`, `dgx_a100`,
//! `dgx_gb200`, legacy cluster names such as `dgxa100_dracooci-ord`), and the legacy
//! `golden_values_<env>.json` without a platform. Two places are searched: beside the
//! case's `model_config.yaml` (Megatron's layout) and `<golden root>/<model>/<case>/`.

use std::path::{Path, PathBuf};

/// What a golden file's name says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct GoldenName {
    /// `dev` or `lts` (whatever the name holds).
    pub environment: String,
    /// `dgx_h100`, ...; `None` for the legacy `golden_values_<env>.json`.
    pub platform: Option<String>,
    /// The `_2nd` file: the second run of a resume test.
    pub second: bool,
}

impl GoldenName {
    /// Parses `golden_values_<env>[_<platform>][_2nd].json`; `None` for other names.
    pub fn parse(file_name: &str) -> Option<GoldenName> {
        let stem = file_name
            .strip_prefix("golden_values_")?
            .strip_suffix(".json")?;
        let (stem, second) = match stem.strip_suffix("_2nd") {
            Some(s) => (s, true),
            None => (stem, false),
        };
        let (environment, platform) = match stem.split_once('_') {
            Some((env, platform)) if !platform.is_empty() => (env, Some(platform.to_string())),
            Some(_) => return None,
            None => (stem, None),
        };
        if environment.is_empty() {
            return None;
        }
        Some(GoldenName {
            environment: environment.to_string(),
            platform,
            second,
        })
    }

    /// The file name this parses from.
    pub fn file_name(&self) -> String {
        let platform = self
            .platform
            .as_deref()
            .map(|p| format!("_{p}"))
            .unwrap_or_default();
        let second = if self.second { "_2nd" } else { "" };
        format!("golden_values_{}{platform}{second}.json", self.environment)
    }
}

/// A golden file found on disk.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct GoldenRef {
    /// Where it is.
    pub path: PathBuf,
    /// What its name says.
    #[serde(flatten)]
    pub name: GoldenName,
}

/// `golden_values_<env>_<platform>.json`.
pub fn golden_file_name(env: &str, platform: &str) -> String {
    GoldenName {
        environment: env.to_string(),
        platform: Some(platform.to_string()),
        second: false,
    }
    .file_name()
}

/// The platform part of a golden file name (`golden_values_dev_dgx_h100.json` → `dgx_h100`);
/// `None` for names without one (`golden_values_lts.json`).
pub fn platform_of(path: &Path) -> Option<String> {
    GoldenName::parse(path.file_name()?.to_str()?)?.platform
}

/// The folder of `case`'s golden files in goldgate's tree under one variant: the case folder
/// for the default variant (`variant_slug` `None`, Megatron's layout),
/// `<case>/variants/<variant slug>/` for any other.
pub fn golden_dir(golden_root: &Path, case: &str, variant_slug: Option<&str>) -> PathBuf {
    let dir = case
        .split('/')
        .fold(golden_root.to_path_buf(), |p, part| p.join(part));
    match variant_slug {
        None => dir,
        Some(slug) => dir.join(VARIANTS_DIR).join(slug),
    }
}

/// The folder name of a variant's golden files: its non-default choices, by axis name, as
/// `axis-value+axis-value` (so `--variant allocator=gc80` and
/// `--variant allocator=gc80 --variant checkpoint=sync` share one golden); `None` for the
/// default variant, whose golden is the case's own file. `choices` in axis-name order.
pub fn variant_key<'a>(
    choices: impl IntoIterator<Item = (&'a str, &'a str)>,
    axis_defaults: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let parts: Vec<String> = choices
        .into_iter()
        .filter(|(axis, value)| axis_defaults.get(*axis).map(String::as_str) != Some(*value))
        .map(|(axis, value)| format!("{}-{}", path_safe(axis), path_safe(value)))
        .collect();
    (!parts.is_empty()).then(|| parts.join("+"))
}

fn path_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The one golden file a job of `case` on `platform` is judged against: env `dev` before
/// `lts`. The default variant looks in goldgate's golden tree (`<golden_root>/<case>/`), then
/// beside the case (`<root>/<case>/`, Megatron's layout); another variant looks only in its
/// own folder, so a variant is never judged against another variant's values.
pub fn find_golden(
    golden_root: &Path,
    root: &Path,
    case: &str,
    platform: &str,
    variant_slug: Option<&str>,
) -> Option<PathBuf> {
    let dirs = match variant_slug {
        None => vec![golden_dir(golden_root, case, None), root.join(case)],
        Some(_) => vec![golden_dir(golden_root, case, variant_slug)],
    };
    ["dev", "lts"].iter().find_map(|env| {
        let name = golden_file_name(env, platform);
        // Any file by that name, not only a regular one: a FIFO or a link to a device where a
        // golden should be is reported with its path when read, never as "no golden file".
        dirs.iter()
            .map(|d| d.join(&name))
            .find(|p| crate::fsio::exists(p))
    })
}

/// Every golden file of one case: beside its config, then under `golden_root/<case name>/`
/// with its variants' (`find_golden` picks the one a job is judged against).
pub fn find_goldens(
    case_dir: &Path,
    golden_root: Option<&Path>,
    case_name: &str,
) -> Vec<GoldenRef> {
    let mut found = goldens_in(case_dir);
    if let Some(root) = golden_root {
        let dir = golden_dir(root, case_name, None);
        if dir != case_dir {
            found.extend(goldens_in(&dir));
        }
        found.extend(variant_goldens(&dir));
    }
    found
}

/// Golden files of a case's variants: `<case golden dir>/variants/<variant slug>/` (goldgate's
/// layout; the default variant's files sit in the case folder itself, as in Megatron's).
pub fn variant_goldens(case_golden_dir: &Path) -> Vec<GoldenRef> {
    let Ok(entries) = std::fs::read_dir(case_golden_dir.join(VARIANTS_DIR)) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().flat_map(|d| goldens_in(d)).collect()
}

/// Folder under a case's golden folder that holds one folder per non-default variant.
pub const VARIANTS_DIR: &str = "variants";

/// Golden files directly inside `dir`, sorted by path; an unreadable or missing folder has none.
pub fn goldens_in(dir: &Path) -> Vec<GoldenRef> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<GoldenRef> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = GoldenName::parse(e.file_name().to_str()?)?;
            Some(GoldenRef {
                path: e.path(),
                name,
            })
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_from_file_names() {
        for (name, want) in [
            ("golden_values_dev_dgx_h100.json", Some("dgx_h100")),
            (
                "golden_values_lts_dgxa100_dracooci-ord.json",
                Some("dgxa100_dracooci-ord"),
            ),
            ("golden_values_dev_dgx_gb200_2nd.json", Some("dgx_gb200")),
            ("golden_values_lts.json", None),
        ] {
            assert_eq!(platform_of(Path::new(name)).as_deref(), want, "{name}");
        }
        assert_eq!(
            golden_file_name("dev", "h200"),
            "golden_values_dev_h200.json"
        );
    }

    #[test]
    fn the_default_variant_prefers_goldgates_tree_then_dev_over_lts() {
        let tmp = tempfile::tempdir().unwrap();
        let (golden_root, root) = (tmp.path().join("golden"), tmp.path().join("cases"));
        let put = |dir: &Path, name: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(name), "{}").unwrap();
        };
        let find = |variant| find_golden(&golden_root, &root, "gpt/a", "h200", variant);
        assert_eq!(find(None), None);
        put(&root.join("gpt/a"), "golden_values_lts_h200.json");
        assert_eq!(
            find(None),
            Some(root.join("gpt/a/golden_values_lts_h200.json"))
        );
        put(&golden_root.join("gpt/a"), "golden_values_lts_h200.json");
        let ours = golden_root.join("gpt/a/golden_values_lts_h200.json");
        assert_eq!(find(None), Some(ours));
        put(&root.join("gpt/a"), "golden_values_dev_h200.json");
        assert_eq!(
            find(None),
            Some(root.join("gpt/a/golden_values_dev_h200.json"))
        );
        assert_eq!(
            find(Some("allocator-gc80")),
            None,
            "never another variant's"
        );
        let variant = golden_dir(&golden_root, "gpt/a", Some("allocator-gc80"));
        put(&variant, "golden_values_dev_h200.json");
        assert_eq!(
            find(Some("allocator-gc80")),
            Some(variant.join("golden_values_dev_h200.json"))
        );
        let listed = find_goldens(&root.join("gpt/a"), Some(&golden_root), "gpt/a");
        assert_eq!(listed.len(), 4);
    }

    #[test]
    fn parses_every_corpus_name_form() {
        let cases = [
            (
                "golden_values_dev_dgx_h100.json",
                "dev",
                Some("dgx_h100"),
                false,
            ),
            (
                "golden_values_dev_dgx_gb200_2nd.json",
                "dev",
                Some("dgx_gb200"),
                true,
            ),
            (
                "golden_values_lts_dgxa100_dracooci-ord.json",
                "lts",
                Some("dgxa100_dracooci-ord"),
                false,
            ),
            (
                "golden_values_dev_dgxh100_dgxc.json",
                "dev",
                Some("dgxh100_dgxc"),
                false,
            ),
            ("golden_values_lts.json", "lts", None, false),
            ("golden_values_dev.json", "dev", None, false),
        ];
        for (file, env, platform, second) in cases {
            let name = GoldenName::parse(file).unwrap();
            assert_eq!(
                (
                    name.environment.as_str(),
                    name.platform.as_deref(),
                    name.second
                ),
                (env, platform, second),
                "{file}"
            );
            assert_eq!(name.file_name(), file);
        }
    }

    #[test]
    fn other_names_are_not_goldens() {
        for file in [
            "model_config.yaml",
            "golden_values_.json",
            "golden_values_dev_.json",
            "golden_values_dev.txt",
        ] {
            assert_eq!(GoldenName::parse(file), None, "{file}");
        }
    }

    #[test]
    fn finds_beside_the_config_and_under_the_golden_root() {
        let tmp = tempfile::tempdir().unwrap();
        let case_dir = tmp.path().join("cases/gpt/a");
        let golden_dir = tmp.path().join("golden/gpt/a");
        std::fs::create_dir_all(&case_dir).unwrap();
        std::fs::create_dir_all(&golden_dir).unwrap();
        std::fs::write(case_dir.join("golden_values_dev_dgx_h100.json"), "{}").unwrap();
        std::fs::write(case_dir.join("notes.json"), "{}").unwrap();
        std::fs::write(golden_dir.join("golden_values_dev_dgx_h100_2nd.json"), "{}").unwrap();
        let found = find_goldens(&case_dir, Some(&tmp.path().join("golden")), "gpt/a");
        let names: Vec<_> = found.iter().map(|g| g.name.file_name()).collect();
        assert_eq!(
            names,
            [
                "golden_values_dev_dgx_h100.json",
                "golden_values_dev_dgx_h100_2nd.json"
            ]
        );
    }
}
