//! Stage "case": `model_config.yaml` → [`TestCase`], with every Megatron key and goldgate's
//! own `GOLDGATE:` block; `load_case_checked` also returns lint warnings for `goldgate check`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::CaseError;
use super::types::{
    CaseExtras, DEFAULT_METRICS, LauncherKind, Mode, ModelArgs, Scalar, ScalarKind, Span, TestCase,
    TestType,
};
use super::yaml::{self, Node, NodeKind};

/// A map of variable → value, in file order.
type EnvVars = Vec<(String, Scalar)>;

/// Largest `model_config.yaml` goldgate reads (the corpus' largest is a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Something `goldgate check` reports without failing: unknown keys, unknown placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseWarning {
    /// The file.
    pub path: PathBuf,
    /// Where in the file, when known.
    pub at: Option<Span>,
    /// What is odd.
    pub message: String,
}

impl fmt::Display for CaseWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(at) => write!(f, "{}:{at}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Loads and validates one `model_config.yaml`; `root` names the case (`<model>/<case>`).
pub fn load_case(root: &Path, config_path: &Path) -> Result<TestCase, CaseError> {
    load_case_checked(root, config_path).map(|(case, _)| case)
}

/// [`load_case`] plus the warnings `goldgate check` prints.
pub fn load_case_checked(
    root: &Path,
    config_path: &Path,
) -> Result<(TestCase, Vec<CaseWarning>), CaseError> {
    let (case, mut warnings, lints) = load_case_parts(root, config_path)?;
    warnings.extend(lints);
    Ok((case, warnings))
}

/// [`load_case`] plus a warning for each key the file holds twice (`TEST_TYPE` written twice:
/// the last value is used, a reader sees the first), which `plan`, `run` and `list` print too;
/// the other lints are `goldgate check`'s.
pub fn load_case_noting_duplicates(
    root: &Path,
    config_path: &Path,
) -> Result<(TestCase, Vec<CaseWarning>), CaseError> {
    load_case_parts(root, config_path).map(|(case, duplicates, _)| (case, duplicates))
}

/// The case, its duplicate-key warnings and its other lints.
fn load_case_parts(
    root: &Path,
    config_path: &Path,
) -> Result<(TestCase, Vec<CaseWarning>, Vec<CaseWarning>), CaseError> {
    let text = read_text(config_path, MAX_CONFIG_BYTES)?;
    let node = yaml::parse(&text).map_err(|e| {
        let path = config_path.to_path_buf();
        if e.limit {
            CaseError::Limit {
                path,
                at: e.span,
                message: e.message,
            }
        } else {
            CaseError::Syntax {
                path,
                at: e.span,
                message: e.message,
            }
        }
    })?;
    let dir = config_path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let name = case_name(root, &dir);
    let mut loader = Loader {
        path: config_path,
        warnings: Vec::new(),
    };
    let mut case = loader.case(name, dir, &node)?;
    case.file_sha256 = sha256_hex(text.as_bytes());
    let mut duplicates = Vec::new();
    duplicate_keys(config_path, &node, &mut Vec::new(), &mut duplicates);
    Ok((case, duplicates, loader.warnings))
}

/// A warning for every key a map of the file holds twice (`TEST_TYPE` written twice): the
/// last value is the one used, as Megatron's YAML reader (PyYAML) takes it, but a reviewer
/// reading the file sees the first. `place`: the keys of the enclosing maps.
fn duplicate_keys(
    path: &Path,
    node: &yaml::Node,
    place: &mut Vec<String>,
    out: &mut Vec<CaseWarning>,
) {
    match &node.kind {
        yaml::NodeKind::Map(entries) => {
            let mut seen: std::collections::HashMap<&str, Option<Span>> = Default::default();
            for (key, value) in entries {
                if let Some(first) = seen.get(key.text.as_str()).copied() {
                    let line = |s: Option<Span>| s.map_or(0, |s| s.line);
                    let mut shown = place.clone();
                    shown.push(key.text.clone());
                    out.push(CaseWarning {
                        path: path.to_path_buf(),
                        at: key.span,
                        message: format!(
                            "duplicate key {} (first on line {}): the last value is used, as \
                             Megatron's reader takes it, but a reader of the file sees the first",
                            shown.join("."),
                            line(first)
                        ),
                    });
                } else {
                    seen.insert(&key.text, key.span);
                }
                place.push(key.text.clone());
                duplicate_keys(path, value, place, out);
                place.pop();
            }
        }
        yaml::NodeKind::Seq(items) => {
            for item in items {
                duplicate_keys(path, item, place, out);
            }
        }
        yaml::NodeKind::Scalar(_) => {}
    }
}

/// Reads a UTF-8 text file of at most `limit` bytes; errors name the file and the bad byte.
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, CaseError> {
    let read = |source| CaseError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = crate::fsio::read_limited(path, limit).map_err(read)?;
    let bytes = match bytes {
        Ok(b) => b,
        Err(size) => {
            return Err(CaseError::TooLarge {
                path: path.to_path_buf(),
                bytes: size,
                limit,
            });
        }
    };
    if bytes.is_empty() {
        return Err(CaseError::Empty {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = position(e.as_bytes(), e.utf8_error().valid_up_to());
        CaseError::NotUtf8 {
            path: path.to_path_buf(),
            at,
        }
    })
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn position(bytes: &[u8], offset: usize) -> Span {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Span {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

/// `<model>/<case>`: the case folder relative to the root, with `/` separators.
fn case_name(root: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        dir.display().to_string()
    } else {
        parts.join("/")
    }
}

/// PyYAML's reading of a map with repeated keys: the first position, the last value.
fn last_value_wins(entries: &[(Scalar, Node)]) -> Vec<&(Scalar, Node)> {
    let mut out: Vec<&(Scalar, Node)> = Vec::with_capacity(entries.len());
    for entry in entries {
        match out.iter().position(|(k, _)| k.text == entry.0.text) {
            Some(i) => out[i] = entry,
            None => out.push(entry),
        }
    }
    out
}

struct Loader<'p> {
    path: &'p Path,
    warnings: Vec<CaseWarning>,
}

impl Loader<'_> {
    fn case(&mut self, name: String, dir: PathBuf, root: &Node) -> Result<TestCase, CaseError> {
        let entries = self.map("(top level)", root)?.unwrap_or_default();
        let mut case = blank_case(name, dir, self.path);
        let mut test_type = None;
        let mut numbered = Vec::new();
        for (key, value) in entries {
            let k = key.text.as_str();
            match k {
                "ENV_VARS" => case.env_vars = self.scalar_map(k, value)?,
                "TEST_TYPE" => test_type = Some(self.choice("TEST_TYPE", value, &TestType::ALL)?),
                "LAUNCHER" => {
                    case.launcher = self.choice_or("LAUNCHER", value, &LauncherKind::ALL)?
                }
                "MODE" => case.mode = self.choice_or("MODE", value, &Mode::ALL)?,
                "METRICS" => case.metrics = self.metrics(value)?,
                "BASE_MODEL_ARGS" => case.base_model_args = Some(self.model_args(k, value)?),
                "THROUGHPUT_TEST_PARAMS" => {
                    case.throughput_test_params = Some(self.model_args(k, value)?);
                }
                "MODEL_ENV_VARS" => case.model_env_vars = self.model_env_vars(value)?,
                "BEFORE_SCRIPT" => case.before_script = self.opt_scalar(k, value)?,
                "AFTER_SCRIPT" => case.after_script = self.opt_scalar(k, value)?,
                "TEST_EVALUATION" => case.test_evaluation = self.opt_scalar(k, value)?,
                "GOLDGATE" => case.goldgate = self.extras(value)?,
                _ => match model_args_index(k) {
                    Some(n) => numbered.push((n, self.model_args(k, value)?)),
                    None => self.warn(key.span, format!("unknown top-level key `{k}` (ignored)")),
                },
            }
        }
        case.test_type = test_type.ok_or(CaseError::Missing {
            path: self.path.to_path_buf(),
            key: "TEST_TYPE",
        })?;
        if !numbered.iter().any(|(n, _)| *n == 1) {
            return Err(CaseError::Missing {
                path: self.path.to_path_buf(),
                key: "MODEL_ARGS",
            });
        }
        numbered.sort_by_key(|(n, _)| *n);
        case.model_args = numbered.into_iter().map(|(_, m)| m).collect();
        if case.metrics.is_empty() {
            case.metrics = DEFAULT_METRICS.iter().map(|m| m.to_string()).collect();
        }
        Ok(case)
    }

    fn warn(&mut self, at: Option<Span>, message: String) {
        self.warnings.push(CaseWarning {
            path: self.path.to_path_buf(),
            at,
            message,
        });
    }

    fn wrong(&self, key: &str, node: &Node, expected: &'static str) -> CaseError {
        CaseError::WrongType {
            path: self.path.to_path_buf(),
            at: node.span,
            key: key.to_string(),
            expected,
            found: node.type_name().to_string(),
        }
    }

    /// A map's entries with PyYAML's rule for repeated keys (first position, last value);
    /// `None` for null.
    fn map<'n>(
        &self,
        key: &str,
        node: &'n Node,
    ) -> Result<Option<Vec<&'n (Scalar, Node)>>, CaseError> {
        Ok(self.raw_map(key, node)?.map(last_value_wins))
    }

    /// A map's entries as written, repeated keys included (what yq prints for MODEL_ARGS);
    /// `None` for null.
    fn raw_map<'n>(
        &self,
        key: &str,
        node: &'n Node,
    ) -> Result<Option<&'n [(Scalar, Node)]>, CaseError> {
        match &node.kind {
            NodeKind::Map(entries) => Ok(Some(entries)),
            NodeKind::Scalar(s) if s.kind == ScalarKind::Null => Ok(None),
            _ => Err(self.wrong(key, node, "a map")),
        }
    }

    fn scalar<'n>(&self, key: &str, node: &'n Node) -> Result<&'n Scalar, CaseError> {
        match &node.kind {
            NodeKind::Scalar(s) => Ok(s),
            _ => Err(self.wrong(key, node, "a scalar")),
        }
    }

    fn opt_scalar(&self, key: &str, node: &Node) -> Result<Option<Scalar>, CaseError> {
        let s = self.scalar(key, node)?;
        Ok((s.kind != ScalarKind::Null).then(|| s.clone()))
    }

    fn scalar_map(&self, key: &str, node: &Node) -> Result<Vec<(String, Scalar)>, CaseError> {
        let entries = self.map(key, node)?.unwrap_or_default();
        entries
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.text.clone(),
                    self.scalar(&format!("{key}.{}", k.text), v)?.clone(),
                ))
            })
            .collect()
    }

    fn model_args(&self, key: &str, node: &Node) -> Result<ModelArgs, CaseError> {
        let entries = self.raw_map(key, node)?.unwrap_or_default();
        let mut args = ModelArgs {
            key: key.to_string(),
            entries: Vec::new(),
            key_spans: Vec::new(),
        };
        for (k, v) in entries {
            let value = self.scalar(&format!("{key}.{}", k.text), v)?.clone();
            args.entries.push((k.text.clone(), value));
            args.key_spans.push(k.span);
        }
        Ok(args)
    }

    fn model_env_vars(&self, node: &Node) -> Result<Vec<(String, EnvVars)>, CaseError> {
        let entries = self.map("MODEL_ENV_VARS", node)?.unwrap_or_default();
        entries
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.text.clone(),
                    self.scalar_map(&format!("MODEL_ENV_VARS.{}", k.text), v)?,
                ))
            })
            .collect()
    }

    fn choice<T: Copy>(
        &self,
        key: &'static str,
        node: &Node,
        all: &[(T, &str)],
    ) -> Result<T, CaseError> {
        let s = self.scalar(key, node)?;
        all.iter()
            .find(|(_, name)| *name == s.text)
            .map(|(t, _)| *t)
            .ok_or_else(|| CaseError::UnknownValue {
                path: self.path.to_path_buf(),
                at: node.span,
                key,
                value: s.text.clone(),
                allowed: all.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", "),
            })
    }

    /// Like `choice`, but null means the first (default) value.
    fn choice_or<T: Copy>(
        &self,
        key: &'static str,
        node: &Node,
        all: &[(T, &str)],
    ) -> Result<T, CaseError> {
        match (&node.kind, all.first()) {
            (NodeKind::Scalar(s), Some((first, _))) if s.kind == ScalarKind::Null => Ok(*first),
            _ => self.choice(key, node, all),
        }
    }

    fn metrics(&self, node: &Node) -> Result<Vec<String>, CaseError> {
        match &node.kind {
            NodeKind::Seq(items) => items
                .iter()
                .map(|n| Ok(self.scalar("METRICS[]", n)?.text.clone()))
                .collect(),
            NodeKind::Scalar(s) if s.kind == ScalarKind::Null => Ok(Vec::new()),
            _ => Err(self.wrong("METRICS", node, "a list of metric names")),
        }
    }

    fn extras(&mut self, node: &Node) -> Result<CaseExtras, CaseError> {
        let mut extras = CaseExtras::default();
        for (k, v) in self.map("GOLDGATE", node)?.unwrap_or_default() {
            match k.text.as_str() {
                "entry" => extras.entry = Some(self.entry(v)?),
                "nproc" => extras.nproc = Some(self.count("GOLDGATE.nproc", v)?),
                "timeout" => extras.timeout = Some(self.duration("GOLDGATE.timeout", v)?),
                "variants" => {
                    for (axis, values) in self.map("GOLDGATE.variants", v)?.unwrap_or_default() {
                        let key = format!("GOLDGATE.variants.{}", axis.text);
                        let values = self.scalar_list(&key, values)?;
                        extras.variants.insert(
                            axis.text.clone(),
                            values.into_iter().map(|s| s.text).collect(),
                        );
                    }
                }
                other => self.warn(k.span, format!("unknown key `GOLDGATE.{other}` (ignored)")),
            }
        }
        Ok(extras)
    }

    fn scalar_list(&self, key: &str, node: &Node) -> Result<Vec<Scalar>, CaseError> {
        match &node.kind {
            NodeKind::Seq(items) => items
                .iter()
                .map(|n| Ok(self.scalar(key, n)?.clone()))
                .collect(),
            _ => Err(self.wrong(key, node, "a list")),
        }
    }

    /// `GOLDGATE.entry`: a program and its leading words; an empty list runs nothing (`plan`
    /// refuses it, so `check` must too).
    fn entry(&self, node: &Node) -> Result<Vec<Scalar>, CaseError> {
        let words = self.scalar_list("GOLDGATE.entry", node)?;
        match words.first() {
            Some(program) if !program.text.is_empty() => Ok(words),
            _ => Err(self.wrong("GOLDGATE.entry", node, "a list that starts with a program")),
        }
    }

    fn duration(&self, key: &str, node: &Node) -> Result<std::time::Duration, CaseError> {
        let s = self.scalar(key, node)?;
        crate::duration::parse_duration(&s.text).map_err(|_| CaseError::WrongType {
            path: self.path.to_path_buf(),
            at: node.span,
            key: key.to_string(),
            expected: "a duration such as 90s, 30m or 2h",
            found: format!("`{}`", s.text),
        })
    }

    fn count(&self, key: &str, node: &Node) -> Result<u32, CaseError> {
        let s = self.scalar(key, node)?;
        match s.text.parse::<u32>() {
            Ok(n) if n > 0 && s.kind == ScalarKind::Int => Ok(n),
            _ => Err(CaseError::WrongType {
                path: self.path.to_path_buf(),
                at: node.span,
                key: key.to_string(),
                expected: "a positive integer",
                found: format!("`{}`", s.text),
            }),
        }
    }
}

/// A case with every optional key at its default, to be filled from the file.
fn blank_case(name: String, dir: PathBuf, config_path: &Path) -> TestCase {
    TestCase {
        name,
        config_path: config_path.to_path_buf(),
        dir,
        test_type: TestType::Regular,
        launcher: LauncherKind::default(),
        mode: Mode::default(),
        env_vars: Vec::new(),
        model_args: Vec::new(),
        metrics: Vec::new(),
        base_model_args: None,
        model_env_vars: Vec::new(),
        throughput_test_params: None,
        before_script: None,
        after_script: None,
        test_evaluation: None,
        goldgate: CaseExtras::default(),
        file_sha256: String::new(),
    }
}

/// The SHA-256 of a case file as [`load_case`] records it ([`TestCase::file_sha256`]): what
/// `compare` checks a record against to say the case changed since the run.
pub fn case_file_sha256(config_path: &Path) -> Result<String, CaseError> {
    read_text(config_path, MAX_CONFIG_BYTES).map(|text| sha256_hex(text.as_bytes()))
}

/// SHA-256 of `bytes` as lowercase hex: the one content hash goldgate records (a case file's,
/// the rules').
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `MODEL_ARGS` → 1, `MODEL_ARGS_<n>` → n (n ≥ 2).
fn model_args_index(key: &str) -> Option<u32> {
    if key == "MODEL_ARGS" {
        return Some(1);
    }
    let n: u32 = key.strip_prefix("MODEL_ARGS_")?.parse().ok()?;
    (n >= 2).then_some(n)
}

/// A case loaded from `yaml`, written to `m/c/model_config.yaml` in a fresh folder that lives
/// as long as the returned guard (for unit tests of the stages after `case`).
#[cfg(any(test, feature = "fixtures"))]
#[allow(clippy::unwrap_used)]
pub fn case_from_yaml(yaml: &str) -> (tempfile::TempDir, TestCase) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m/c/model_config.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, yaml).unwrap();
    let case = load_case(dir.path(), &path).unwrap();
    (dir, case)
}
