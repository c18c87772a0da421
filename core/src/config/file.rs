//! Stage "plan": reading and validating `goldgate.yaml` (platforms, variant axes, metric rules).
//!
//! Two steps, as everywhere in goldgate: serde reads the file into `Raw*` types (unknown keys
//! are errors with a line and column), then [`Config::from_raw`] checks what serde cannot
//! (a default platform that exists, axes with at least one value) and builds the public types.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::error::ConfigError;
use super::named::{Named, StringMap, string_pairs};
use super::slurm::{ExecutorChoice, RawSlurm, SlurmConfig, slurm_from_raw};
use crate::rules::{RuleOverride, Rules};

/// The repository's `goldgate.yaml` as shipped: used when no file is found (see `discover`).
pub const BUILTIN_CONFIG: &str = include_str!("../../../goldgate.yaml");

/// How a platform launches jobs when the case says nothing more specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LauncherChoice {
    Torchrun,
    FtLauncher,
    Direct,
}

/// A machine kind jobs run on.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Platform {
    pub name: String,
    pub gpus_per_node: u32,
    /// Nodes a job takes unless its recipe or `--nodes` says otherwise (default 1).
    pub nodes: u32,
    /// Megatron's `/mnt/artifacts`: the frozen checkpoints frozen-start, frozen-resume,
    /// release and checkpoint-consistency cases load (`DATA_PATH` when absent, as Megatron's
    /// recipes point both at the same folder).
    pub frozen_checkpoints: Option<String>,
    /// Replaces Megatron's default launcher (torchrun) for cases that do not pick another.
    pub launcher: Option<LauncherChoice>,
    /// `DATA_PATH` for every job (the caller's environment is used when absent).
    pub data_root: Option<String>,
    /// Checkpoints go below this folder instead of the job's output folder.
    pub checkpoint_root: Option<String>,
    /// `MEGATRON_LM_DIR`: the default entry is `$MEGATRON_LM_DIR/pretrain_gpt.py`.
    pub megatron_lm_dir: Option<String>,
    /// Entry words used when the case has no `GOLDGATE.entry`.
    pub entry: Option<Vec<String>>,
    /// Extra variables for every job, in file order.
    pub env: Vec<(String, String)>,
    /// Warm-up jobs `goldgate run` runs first for every job (unless `--warmup` says otherwise),
    /// recorded but never compared or blessed: a cold machine's first job is not the golden.
    pub warmup_jobs: u32,
    /// Time limit of each run of a job on this platform when its case sets none
    /// (`GOLDGATE.timeout`) and `goldgate run --timeout` is not given.
    #[serde(serialize_with = "crate::duration::seconds::serialize")]
    pub timeout: Option<std::time::Duration>,
    /// What runs its jobs unless `--executor` says (`local` by default).
    pub executor: ExecutorChoice,
    /// Whether the cases' `BEFORE_SCRIPT`/`AFTER_SCRIPT` run on this platform's machines
    /// without `--scripts` (`scripts: true`: a disposable machine or container, as Megatron's CI
    /// runs them). Absent: under Slurm yes (the job's node runs them), locally no — they
    /// can change the machine (`pip uninstall -y transformer_engine` in MR-scope cases).
    pub scripts: Option<bool>,
    /// What judges its clocks (iteration, save and async-completion times): golden values
    /// (`golden`, the default), or only `goldgate ab`, A against B on the same machine at the
    /// same time (`ab`: a shared runner whose load moves every clock; `compare` still reports
    /// them against the golden, ungated).
    pub clocks: Clocks,
    /// Its `slurm:` block (empty when absent: the cluster's defaults).
    pub slurm: SlurmConfig,
}

/// What judges a platform's clocks (`platforms.<name>.clocks` in `goldgate.yaml`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clocks {
    /// Golden values, by the metric's rule.
    #[default]
    Golden,
    /// `goldgate ab` only: against a golden they are reported, never gated.
    Ab,
}

/// One value of a variant axis: the edits it makes to a job.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AxisValue {
    pub name: String,
    pub description: Option<String>,
    pub env: Vec<(String, String)>,
    pub unset: Vec<String>,
    /// `--flag: value` added or overridden in MODEL_ARGS (`true` = bare flag).
    pub args: Vec<(String, String)>,
    pub remove_args: Vec<String>,
}

/// A named axis of variants; its first value is the default.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Axis {
    pub name: String,
    /// Applied only to cases that name the axis in `GOLDGATE.variants`, or when chosen.
    pub opt_in: bool,
    pub values: Vec<AxisValue>,
}

impl Axis {
    /// The value called `name`.
    pub fn value(&self, name: &str) -> Option<&AxisValue> {
        self.values.iter().find(|v| v.name == name)
    }

    /// The value names, comma-separated, for error messages.
    pub fn value_names(&self) -> String {
        self.values
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The validated `goldgate.yaml`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Config {
    /// Where it was read from (`<builtin>` for the shipped copy).
    pub path: PathBuf,
    /// Index of the default platform in `platforms`.
    pub default_platform: usize,
    pub platforms: Vec<Platform>,
    pub axes: Vec<Axis>,
    /// Built-in rules with the file's rules in front.
    pub rules: Rules,
    /// The file's `rules:` entries as written, in order (for `compare`'s own rule set).
    pub rule_overrides: Vec<(String, RuleOverride)>,
    /// Megatron's recipe folder (`tests/test_utils/recipes`), when the file names one.
    pub recipes: Option<PathBuf>,
    /// `check.ignore`: path glob (relative to the case or golden root) → why the file is known
    /// to be bad. `goldgate check` reports a problem there as a note, not an error.
    pub check_ignore: Vec<(String, String)>,
    /// The `ab:` block: `goldgate ab`'s statistics (defaults when absent).
    pub ab: super::ab::AbSettings,
    /// `history.database`: the history store (a PostgreSQL URL or a SQLite file, relative to
    /// this file's folder), when the file names one.
    pub history_database: Option<String>,
}

/// Platforms every configuration has (a file's own platform of the same name replaces one):
/// Megatron CI's machines, with the GPUs per node its recipes allocate on them.
pub const BUILTIN_PLATFORMS: [(&str, u32); 3] =
    [("dgx_a100", 8), ("dgx_h100", 8), ("dgx_gb200", 4)];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    default_platform: Option<Spanned<String>>,
    #[serde(default)]
    platforms: Named<RawPlatform>,
    #[serde(default)]
    variants: Named<RawAxis>,
    #[serde(default)]
    rules: Named<RuleOverride>,
    #[serde(default)]
    recipes: Option<String>,
    #[serde(default)]
    check: RawCheck,
    #[serde(default)]
    ab: Option<Spanned<super::ab::RawAb>>,
    #[serde(default)]
    history: RawHistory,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHistory {
    #[serde(default)]
    database: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    #[serde(default)]
    ignore: StringMap,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlatform {
    gpus_per_node: u32,
    #[serde(default)]
    nodes: Option<u32>,
    #[serde(default)]
    frozen_checkpoints: Option<String>,
    #[serde(default)]
    launcher: Option<LauncherChoice>,
    #[serde(default)]
    data_root: Option<String>,
    #[serde(default)]
    checkpoint_root: Option<String>,
    #[serde(default)]
    megatron_lm_dir: Option<String>,
    #[serde(default)]
    entry: Option<Vec<String>>,
    #[serde(default)]
    env: StringMap,
    #[serde(default)]
    warmup_jobs: u32,
    #[serde(default)]
    timeout: Option<Spanned<String>>,
    #[serde(default)]
    executor: Option<ExecutorChoice>,
    #[serde(default)]
    scripts: Option<bool>,
    #[serde(default)]
    clocks: Clocks,
    #[serde(default)]
    slurm: Option<RawSlurm>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    #[serde(default)]
    opt_in: bool,
    values: Named<Option<RawValue>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawValue {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    env: StringMap,
    #[serde(default)]
    unset: Vec<String>,
    #[serde(default)]
    args: StringMap,
    #[serde(default)]
    remove_args: Vec<String>,
}

/// Largest `goldgate.yaml` goldgate reads (the shipped one is a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

impl Config {
    /// Where the rules came from and their hash, as each job's record keeps them
    /// (`judging.rules`): the hash is over the resolved rules (the file's in front of the
    /// built-in ones) serialised as JSON, so equal hashes are equal rules.
    pub fn rules_ref(&self) -> goldgate_schema::RulesRef {
        let json = serde_json::to_vec(&self.rules).unwrap_or_default();
        goldgate_schema::RulesRef {
            source: self.path.display().to_string(),
            sha256: crate::case::sha256_hex(&json),
        }
    }

    /// Reads `path` (it must exist: [`super::discover`] decides when the shipped
    /// configuration is used instead).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match crate::fsio::read_text(path, MAX_CONFIG_BYTES) {
            Ok(text) => Config::parse(&text, path),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The configuration `source` names: its file, or the shipped one.
    pub fn from_source(source: &super::ConfigSource) -> Result<Config, ConfigError> {
        match source.path() {
            Some(path) => Config::load(path),
            None => Config::builtin(),
        }
    }

    /// The configuration shipped with goldgate.
    pub fn builtin() -> Result<Config, ConfigError> {
        Config::parse(BUILTIN_CONFIG, Path::new("<builtin goldgate.yaml>"))
    }

    /// Parses and validates the text of a `goldgate.yaml`; `path` is used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw: RawConfig =
            serde_saphyr::from_str(text).map_err(|e| ConfigError::from_yaml(path, &e))?;
        Config::from_raw(raw, path)
    }

    /// The platform called `name`, or the default one.
    pub fn platform(&self, name: Option<&str>) -> Result<&Platform, ConfigError> {
        let Some(name) = name else {
            return self
                .platforms
                .get(self.default_platform)
                .ok_or(ConfigError::NoPlatform);
        };
        self.platforms
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ConfigError::UnknownPlatform {
                name: name.to_owned(),
                valid: self.platform_names(),
            })
    }

    /// Each axis's default value (its first), by axis name.
    pub fn axis_defaults(&self) -> std::collections::BTreeMap<String, String> {
        self.axes
            .iter()
            .filter_map(|a| Some((a.name.clone(), a.values.first()?.name.clone())))
            .collect()
    }

    /// The axis called `name`.
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    /// The axis names, comma-separated, for error messages.
    pub fn axis_names(&self) -> String {
        self.axes
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn platform_names(&self) -> String {
        self.platforms
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn from_raw(raw: RawConfig, path: &Path) -> Result<Config, ConfigError> {
        // A platform's name becomes part of golden file names.
        for (name, _) in &raw.platforms.0 {
            crate::fsio::check_component("platform", &name.value)
                .map_err(|msg| ConfigError::invalid(path, name, msg))?;
        }
        let mut platforms = raw
            .platforms
            .0
            .into_iter()
            .map(|p| platform_from_raw(p, path))
            .collect::<Result<Vec<Platform>, ConfigError>>()?;
        for (name, gpus) in BUILTIN_PLATFORMS {
            if !platforms.iter().any(|p| p.name == name) {
                platforms.push(Platform::builtin(name, gpus));
            }
        }
        let default_platform = match raw.default_platform {
            None => 0,
            Some(name) => platforms
                .iter()
                .position(|p| p.name == name.value)
                .ok_or_else(|| {
                    ConfigError::invalid(
                        path,
                        &name,
                        format!(
                            "default_platform `{}` is not one of the platforms",
                            name.value
                        ),
                    )
                })?,
        };
        let axes = axes_from_raw(raw.variants, path)?;
        let rule_overrides: Vec<(String, RuleOverride)> =
            raw.rules.0.into_iter().map(|(k, v)| (k.value, v)).collect();
        let rules = Rules::default().with_file_rules(rule_overrides.clone());
        let ab = ab_from_raw(raw.ab, path)?;
        Ok(Config {
            path: path.to_owned(),
            default_platform,
            platforms,
            axes,
            rules,
            rule_overrides,
            recipes: raw.recipes.map(PathBuf::from),
            check_ignore: string_pairs(raw.check.ignore),
            ab,
            history_database: raw.history.database,
        })
    }
}

impl Platform {
    /// A platform with nothing but its GPUs per node (one node, no paths, no variables).
    pub fn builtin(name: &str, gpus_per_node: u32) -> Platform {
        Platform {
            name: name.to_owned(),
            gpus_per_node,
            nodes: 1,
            frozen_checkpoints: None,
            warmup_jobs: 0,
            timeout: None,
            launcher: None,
            data_root: None,
            checkpoint_root: None,
            megatron_lm_dir: None,
            entry: None,
            env: Vec::new(),
            executor: ExecutorChoice::Local,
            scripts: None,
            clocks: Clocks::Golden,
            slurm: SlurmConfig::default(),
        }
    }
}

fn platform_from_raw(
    (name, raw): (Spanned<String>, RawPlatform),
    path: &Path,
) -> Result<Platform, ConfigError> {
    let timeout =
        match &raw.timeout {
            None => None,
            Some(text) => Some(crate::duration::parse_duration(&text.value).map_err(
                |message| ConfigError::invalid(path, text, format!("timeout: {message}")),
            )?),
        };
    Ok(Platform {
        name: name.value,
        gpus_per_node: raw.gpus_per_node,
        nodes: raw.nodes.unwrap_or(1).max(1),
        frozen_checkpoints: raw.frozen_checkpoints,
        launcher: raw.launcher,
        data_root: raw.data_root,
        checkpoint_root: raw.checkpoint_root,
        megatron_lm_dir: raw.megatron_lm_dir,
        entry: raw.entry,
        env: string_pairs(raw.env),
        warmup_jobs: raw.warmup_jobs,
        timeout,
        executor: raw.executor.unwrap_or_default(),
        scripts: raw.scripts,
        clocks: raw.clocks,
        slurm: match raw.slurm {
            Some(block) => slurm_from_raw(block, path)?,
            None => SlurmConfig::default(),
        },
    })
}

/// The variant axes, in file order; an axis without values is an error.
fn axes_from_raw(raw: Named<RawAxis>, path: &Path) -> Result<Vec<Axis>, ConfigError> {
    let mut axes = Vec::new();
    for (name, axis) in raw.0 {
        if axis.values.0.is_empty() {
            let msg = format!("variant axis `{}` has no values", name.value);
            return Err(ConfigError::invalid(path, &name, msg));
        }
        let values = axis.values.0.into_iter().map(value_from_raw).collect();
        axes.push(Axis {
            name: name.value,
            opt_in: axis.opt_in,
            values,
        });
    }
    Ok(axes)
}

/// The `ab:` block's settings (defaults when absent); an error points at the block.
fn ab_from_raw(
    raw: Option<Spanned<super::ab::RawAb>>,
    path: &Path,
) -> Result<super::ab::AbSettings, ConfigError> {
    let Some(block) = raw else {
        return Ok(super::ab::AbSettings::default());
    };
    let at = Spanned {
        value: (),
        referenced: block.referenced,
        defined: block.defined,
    };
    block
        .value
        .settings()
        .map_err(|msg| ConfigError::invalid(path, &at, msg))
}

fn value_from_raw((name, raw): (Spanned<String>, Option<RawValue>)) -> AxisValue {
    let raw = raw.unwrap_or_default();
    AxisValue {
        name: name.value,
        description: raw.description,
        env: string_pairs(raw.env),
        unset: raw.unset,
        args: string_pairs(raw.args),
        remove_args: raw.remove_args,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("goldgate.yaml"))
    }

    #[test]
    fn shipped_config_is_valid_and_has_the_required_axes() {
        let config = Config::builtin().unwrap();
        for (axis, values) in [
            ("allocator", "default, expandable, gc80"),
            ("checkpoint", "sync, async_nvrx, async_mcore, async_shm"),
            ("empty_cache", "level0, level2"),
            ("data", "real, mock"),
            ("fused", "default, none"),
        ] {
            assert_eq!(config.axis(axis).unwrap().value_names(), values);
        }
        let gc80 = config.axis("allocator").unwrap().value("gc80").unwrap();
        assert_eq!(
            gc80.env,
            [(
                "PYTORCH_CUDA_ALLOC_CONF".to_owned(),
                "expandable_segments:True,garbage_collection_threshold:0.8".to_owned()
            )]
        );
    }

    #[test]
    fn default_platform_is_named_or_first() {
        let text = "platforms:\n  a: {gpus_per_node: 1}\n  b: {gpus_per_node: 8}\n";
        assert_eq!(parse(text).unwrap().platform(None).unwrap().name, "a");
        let named = format!("default_platform: b\n{text}");
        assert_eq!(parse(&named).unwrap().platform(None).unwrap().name, "b");
    }

    #[test]
    fn errors_point_into_the_file() {
        let cases = [
            (
                "platforms:\n  a:\n    gpus_per_node: 1\n    gpus: 2\n",
                "goldgate.yaml:4:5",
            ),
            (
                "default_platform: nope\nplatforms:\n  a: {gpus_per_node: 1}\n",
                "goldgate.yaml:1:19",
            ),
            ("variants:\n  axis:\n    values: {}\n", "goldgate.yaml:2:3"),
            ("rules:\n  lm loss: {rtool: 1}\n", "goldgate.yaml:2:13"),
        ];
        for (text, place) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with(place), "{err:?} should start with {place}");
        }
    }

    /// The help of a bad `goldgate.yaml` names every top-level key the reader accepts: the
    /// keys are taken from the reader's own "expected one of" list.
    #[test]
    fn the_config_errors_help_names_every_top_level_key() {
        let err = parse("platform: {}\n").unwrap_err();
        let message = err.to_string();
        let (_, expected) = message
            .split_once("expected one of ")
            .unwrap_or_else(|| panic!("{message}"));
        let keys: Vec<&str> = expected
            .split(", ")
            .map(|k| k.trim().trim_matches('`'))
            .collect();
        assert!(keys.len() >= 8, "{keys:?}");
        let help = miette::Diagnostic::help(&err).unwrap().to_string();
        for key in keys {
            assert!(
                help.contains(&format!("`{key}`")),
                "{key} missing from: {help}"
            );
        }
    }

    #[test]
    fn clocks_are_golden_by_default_and_ab_where_a_platform_says() {
        let text = "platforms:\n  a: {gpus_per_node: 1}\n  b: {gpus_per_node: 1, clocks: ab}\n";
        let config = parse(text).unwrap();
        assert_eq!(config.platform(Some("a")).unwrap().clocks, Clocks::Golden);
        assert_eq!(config.platform(Some("b")).unwrap().clocks, Clocks::Ab);
        let bad = parse("platforms:\n  a: {gpus_per_node: 1, clocks: never}\n").unwrap_err();
        assert!(bad.to_string().starts_with("goldgate.yaml:2:"), "{bad}");
        let shipped = Config::builtin().unwrap();
        assert_eq!(
            shipped.platform(Some("dev_cpu")).unwrap().clocks,
            Clocks::Ab
        );
        assert_eq!(
            shipped.platform(Some("h200")).unwrap().clocks,
            Clocks::Golden
        );
    }

    #[test]
    fn check_ignore_keeps_globs_and_reasons_in_order() {
        let text = "platforms:\n  a: {gpus_per_node: 1}\ncheck:\n  ignore:\n    \"gpt/*/x.json\": 0 bytes upstream\n    moe/y.json:\n";
        let config = parse(text).unwrap();
        assert_eq!(
            config.check_ignore,
            [
                ("gpt/*/x.json".to_owned(), "0 bytes upstream".to_owned()),
                ("moe/y.json".to_owned(), String::new())
            ]
        );
        let err = parse("check:\n  skip: []\n").unwrap_err().to_string();
        assert!(err.starts_with("goldgate.yaml:2:3"), "{err}");
    }

    #[test]
    fn platform_timeouts_are_durations() {
        let config = parse("platforms:\n  gpu: {gpus_per_node: 1, timeout: 45m}\n").unwrap();
        let gpu = config.platform(Some("gpu")).unwrap();
        assert_eq!(gpu.timeout, Some(std::time::Duration::from_secs(2700)));
        let err = parse("platforms:\n  gpu:\n    gpus_per_node: 1\n    timeout: soon\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("goldgate.yaml:4:14: timeout: `soon` is not a duration"),
            "{err}"
        );
    }

    #[test]
    fn slurm_blocks_are_checked_with_their_place() {
        let text = "platforms:\n  c:\n    gpus_per_node: 4\n    executor: slurm\n    slurm:\n      partition: batch\n      gres: gpu:4\n      time_limit: 30m\n      sbatch_args: [--exclusive]\n      container_image: nvcr.io/x:1\n      container_mounts: [/lustre:/lustre]\n      job_root: /lustre/gg\n";
        let config = parse(text).unwrap();
        let c = config.platform(Some("c")).unwrap();
        assert_eq!(c.executor, ExecutorChoice::Slurm);
        assert_eq!(c.slurm.gres.as_deref(), Some("gpu:4"));
        assert_eq!(
            c.slurm.time_limit,
            Some(std::time::Duration::from_secs(1800))
        );
        assert_eq!(
            config.platform(Some("dgx_h100")).unwrap().executor,
            ExecutorChoice::Local
        );
        let cases = [
            ("      gres: 4\n", "goldgate.yaml:5:13: slurm.gres: `4`"),
            (
                "      time_limit: soon\n",
                "goldgate.yaml:5:19: slurm.time_limit",
            ),
            (
                "      sbatch_args: [--nodes=2]\n",
                "goldgate.yaml:5:21: slurm.sbatch_args: goldgate sets `--nodes`",
            ),
            (
                "      container_mounts: [data:/data]\n",
                "goldgate.yaml:5:26: slurm.container_mounts",
            ),
            ("      job_root: gg\n", "goldgate.yaml:5:17: slurm.job_root"),
            (
                "      partition: a b\n",
                "goldgate.yaml:5:18: slurm.partition",
            ),
            ("      nodes: 2\n", "goldgate.yaml:5:7"),
            ("    executor: k8s\n", "goldgate.yaml:5:15"),
        ];
        for (line, want) in cases {
            let text = format!("platforms:\n  c:\n    gpus_per_node: 4\n    slurm:\n{line}");
            let text = if line.starts_with("    executor") {
                format!("platforms:\n  c:\n    gpus_per_node: 4\n    slurm: {{}}\n{line}")
            } else {
                text
            };
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.starts_with(want), "{err:?} should start with {want:?}");
        }
    }

    #[test]
    fn platforms_may_ask_for_warmup_jobs() {
        let text =
            "platforms:\n  gpu: {gpus_per_node: 1, warmup_jobs: 1}\n  cpu: {gpus_per_node: 1}\n";
        let config = parse(text).unwrap();
        assert_eq!(config.platform(Some("gpu")).unwrap().warmup_jobs, 1);
        assert_eq!(config.platform(Some("cpu")).unwrap().warmup_jobs, 0);
    }

    #[test]
    fn unknown_platform_lists_the_valid_ones() {
        let config =
            parse("platforms:\n  a: {gpus_per_node: 1}\n  b: {gpus_per_node: 2}\n").unwrap();
        let err = config.platform(Some("c")).unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown platform `c` (valid: a, b, dgx_a100, dgx_h100, dgx_gb200)"
        );
    }

    #[test]
    fn megatron_platforms_are_built_in_and_a_file_can_replace_them() {
        let config = parse("platforms:\n  dgx_h100: {gpus_per_node: 2, nodes: 3}\n").unwrap();
        let gpus = |name: &str| {
            let p = config.platform(Some(name)).unwrap();
            (p.gpus_per_node, p.nodes)
        };
        assert_eq!(gpus("dgx_a100"), (8, 1));
        assert_eq!(gpus("dgx_gb200"), (4, 1));
        assert_eq!(gpus("dgx_h100"), (2, 3), "the file's own dgx_h100");
    }
}
