//! Stage "case": the plain data types a loaded `model_config.yaml` becomes (the case boundary).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// A 1-based position in a source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Span {
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// What a YAML scalar resolved to; the value itself stays in [`Scalar::text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ScalarKind {
    /// `null`, `~` or nothing.
    Null,
    /// `true`/`false` (also `True`, `FALSE`, ...).
    Bool(bool),
    /// A plain integer such as `42` or `-1`.
    Int,
    /// A plain float such as `1e-8`, `.01` or `1.0e-5`.
    Float,
    /// Anything else, including every quoted or block scalar.
    Str,
}

/// One YAML scalar: its original text (never re-formatted), what it resolved to, where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Scalar {
    /// The text as written (after YAML unquoting/unescaping for quoted scalars).
    pub text: String,
    /// What the text resolves to under YAML's core schema.
    pub kind: ScalarKind,
    /// Where the scalar starts; `None` for values goldgate made up (defaults).
    pub span: Option<Span>,
}

impl Scalar {
    /// A string scalar with no source position (a default).
    pub fn synthetic(text: impl Into<String>) -> Scalar {
        Scalar {
            text: text.into(),
            kind: ScalarKind::Str,
            span: None,
        }
    }

    /// Whether the value is null or an empty string: Megatron drops such MODEL_ARGS entries.
    pub fn is_empty(&self) -> bool {
        self.kind == ScalarKind::Null || self.text.is_empty()
    }
}

/// One argv word before placeholders are resolved, with the position of the YAML it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Word {
    /// The word.
    pub text: String,
    /// Where in `model_config.yaml` it came from (the key for flags, the value for values).
    pub span: Option<Span>,
}

/// Megatron's `TEST_TYPE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestType {
    /// `regular`: one run.
    Regular,
    /// `ckpt-resume`: run, then resume from the checkpoint and compare the second half.
    CkptResume,
    /// `frozen-start`.
    FrozenStart,
    /// `release`.
    Release,
    /// `frozen-resume`.
    FrozenResume,
    /// `checkpoint-consistency`.
    CheckpointConsistency,
}

impl TestType {
    /// Every test type with its spelling in `model_config.yaml`.
    pub const ALL: [(TestType, &'static str); 6] = [
        (TestType::Regular, "regular"),
        (TestType::CkptResume, "ckpt-resume"),
        (TestType::FrozenStart, "frozen-start"),
        (TestType::Release, "release"),
        (TestType::FrozenResume, "frozen-resume"),
        (TestType::CheckpointConsistency, "checkpoint-consistency"),
    ];

    /// ckpt-resume and frozen-resume: a second run resumes from a checkpoint, and its steps
    /// after `TRAIN_ITERS / 2` are compared with the first run's.
    pub fn resumes(self) -> bool {
        matches!(self, TestType::CkptResume | TestType::FrozenResume)
    }

    /// The spelling in `model_config.yaml`.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("regular", |(_, s)| s)
    }
}

/// How the job's ranks are started (`LAUNCHER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LauncherKind {
    /// `torchrun` (Megatron's default).
    #[default]
    Torchrun,
    /// `ft_launcher` (nvidia-resiliency-ext's fault-tolerant torchrun).
    FtLauncher,
    /// `direct`: goldgate starts the entry program itself (one process per rank).
    Direct,
}

impl LauncherKind {
    /// Every launcher with its spelling in `model_config.yaml`.
    pub const ALL: [(LauncherKind, &'static str); 3] = [
        (LauncherKind::Torchrun, "torchrun"),
        (LauncherKind::FtLauncher, "ft_launcher"),
        (LauncherKind::Direct, "direct"),
    ];

    /// The spelling in `model_config.yaml`.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("torchrun", |(_, s)| s)
    }
}

/// Megatron's `MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `pretraining` (the default).
    #[default]
    Pretraining,
    /// `inference`.
    Inference,
    /// `rl`.
    Rl,
}

impl Mode {
    /// Every mode with its spelling in `model_config.yaml`.
    pub const ALL: [(Mode, &'static str); 3] = [
        (Mode::Pretraining, "pretraining"),
        (Mode::Inference, "inference"),
        (Mode::Rl, "rl"),
    ];

    /// The spelling in `model_config.yaml`.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("pretraining", |(_, s)| s)
    }
}

/// One `MODEL_ARGS`-style map (flag → value) in file order, duplicates resolved (last wins).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModelArgs {
    /// The top-level key it came from: `MODEL_ARGS`, `MODEL_ARGS_2`, ...
    pub key: String,
    /// `(flag, value)` in file order; merge-key (`<<:`) entries first, as PyYAML orders them.
    pub entries: Vec<(String, Scalar)>,
    /// Where each flag was written (same order as `entries`).
    pub key_spans: Vec<Option<Span>>,
}

/// goldgate's own optional `GOLDGATE:` block in `model_config.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaseExtras {
    /// Program and leading arguments (a bare name is looked up next to goldgate's exe, then PATH).
    pub entry: Option<Vec<Scalar>>,
    /// Ranks per job (default: the platform's GPUs per node, 1 without a GPU).
    pub nproc: Option<u32>,
    /// Variant axis → the values this case allows (an absent axis allows all).
    pub variants: BTreeMap<String, Vec<String>>,
    /// Time limit of each run of a job (`GOLDGATE.timeout: 30m`); `goldgate run --timeout`
    /// overrides it, and it overrides the platform's.
    #[serde(serialize_with = "crate::duration::seconds::serialize")]
    pub timeout: Option<std::time::Duration>,
}

/// A loaded, validated `model_config.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TestCase {
    /// `<model>/<case>`.
    pub name: String,
    /// The case folder.
    pub dir: PathBuf,
    /// `<dir>/model_config.yaml`.
    pub config_path: PathBuf,
    /// `TEST_TYPE`.
    pub test_type: TestType,
    /// `LAUNCHER` (default torchrun).
    pub launcher: LauncherKind,
    /// `MODE` (default pretraining).
    pub mode: Mode,
    /// `ENV_VARS` in file order, last duplicate wins.
    pub env_vars: Vec<(String, Scalar)>,
    /// `[0]` = `MODEL_ARGS`, then `MODEL_ARGS_2`, `MODEL_ARGS_3`, ... in numeric order.
    pub model_args: Vec<ModelArgs>,
    /// `METRICS`; `["lm loss", "num-zeros"]` when absent, null or empty.
    pub metrics: Vec<String>,
    /// `BASE_MODEL_ARGS` (only a merge-key source in Megatron; kept for completeness).
    pub base_model_args: Option<ModelArgs>,
    /// `MODEL_ENV_VARS`: `MODEL_ARGS_N` → variables for the run that uses it.
    pub model_env_vars: Vec<(String, Vec<(String, Scalar)>)>,
    /// `THROUGHPUT_TEST_PARAMS`.
    pub throughput_test_params: Option<ModelArgs>,
    /// `BEFORE_SCRIPT` (shell).
    pub before_script: Option<Scalar>,
    /// `AFTER_SCRIPT` (shell).
    pub after_script: Option<Scalar>,
    /// `TEST_EVALUATION` (`xpass`: the test is expected to fail).
    pub test_evaluation: Option<Scalar>,
    /// goldgate's own `GOLDGATE:` block.
    pub goldgate: CaseExtras,
    /// SHA-256 (hex) of the file's bytes as read: recorded with each job, so `compare` can say
    /// when the case file changed since the run.
    pub file_sha256: String,
}

impl TestCase {
    /// The MODEL_ARGS map for run `n` (1-based): `MODEL_ARGS_<n>` when present, else `MODEL_ARGS`.
    pub fn model_args_for_run(&self, n: u32) -> Option<&ModelArgs> {
        let wanted = format!("MODEL_ARGS_{n}");
        self.model_args
            .iter()
            .find(|m| n > 1 && m.key == wanted)
            .or_else(|| self.model_args.iter().find(|m| m.key == "MODEL_ARGS"))
    }
}

/// A case found by [`crate::case::discover`]: enough to list it and to load it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct CaseRef {
    /// `<model>/<case>`.
    pub name: String,
    /// The case folder.
    pub dir: PathBuf,
    /// `<dir>/model_config.yaml`.
    pub config_path: PathBuf,
}

/// The metrics Megatron compares when `METRICS` is absent.
pub const DEFAULT_METRICS: [&str; 2] = [
    goldgate_schema::metric_names::LM_LOSS,
    goldgate_schema::metric_names::NUM_ZEROS,
];
