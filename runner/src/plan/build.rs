//! Stage "plan": turning a loaded case into jobs — variant edits, placeholders, environment, argv.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::PlanError;
use super::job::{Job, JobDirs, Launcher, RunSpec};
use super::placeholder::{FromCaller, Lookup, is_name, resolve};
use super::variant::{Variant, VariantRequest, applied_values, check_case_variants, expand};
use crate::case::{LauncherKind, ModelArgs, Scalar, ScalarKind, TestCase, TestType, Word};
use crate::config::{AxisValue, Config, LauncherChoice, Platform};

/// Everything a plan needs besides the case: configuration, platform, where outputs go, and
/// the caller's environment (passed in, so planning is a pure function).
pub struct PlanInputs<'a> {
    pub config: &'a Config,
    pub platform: &'a Platform,
    /// `OUT`: jobs go to `OUT/<run-id>/...`.
    pub out_dir: &'a Path,
    pub run_id: &'a str,
    /// Relative paths in entry words (`workloads/megatron/train_gpt.py`) are taken from here
    /// (goldgate's working directory), since jobs run in their own folder.
    pub base_dir: &'a Path,
    pub caller_env: &'a BTreeMap<String, String>,
}

/// The entry used when neither the case nor the platform names one.
pub const DEFAULT_ENTRY: &str = "${MEGATRON_LM_DIR}/pretrain_gpt.py";

/// Every job of `case`: each variant the request expands to, times `repeats`.
pub fn plan_case(
    inputs: &PlanInputs<'_>,
    case: &TestCase,
    request: &VariantRequest,
    repeats: u32,
) -> Result<Vec<Job>, PlanError> {
    if repeats == 0 {
        return Err(PlanError::ZeroRepeat);
    }
    let allowed = &case.goldgate.variants;
    check_case_variants(
        inputs.config,
        &case.config_path.display().to_string(),
        allowed,
    )?;
    let mut jobs = Vec::new();
    for variant in expand(inputs.config, request, &case.name, allowed)? {
        for repeat in 1..=repeats {
            jobs.push(plan_job(inputs, case, &variant, repeat)?);
        }
    }
    Ok(jobs)
}

/// A word to resolve and the place to name if it cannot be.
struct Located {
    text: String,
    place: String,
}

/// Collects resolution results over all words of a job.
struct Resolver<'a> {
    lookup: Lookup<'a>,
    /// `(name, place)` of every unresolved placeholder, in order of appearance.
    missing: Vec<(String, String)>,
    from_caller: Vec<FromCaller>,
}

impl Resolver<'_> {
    fn text(&mut self, word: &Located) -> String {
        let resolved = resolve(&word.text, &self.lookup);
        for name in resolved.missing {
            let found = (name, word.place.clone());
            if !self.missing.contains(&found) {
                self.missing.push(found);
            }
        }
        for found in resolved.from_caller {
            if !self.from_caller.contains(&found) {
                self.from_caller.push(found);
            }
        }
        resolved.text
    }
}

fn plan_job(
    inputs: &PlanInputs<'_>,
    case: &TestCase,
    variant: &Variant,
    repeat: u32,
) -> Result<Job, PlanError> {
    let platform = inputs.platform;
    let checkpoint_root = platform.checkpoint_root.as_deref().map(Path::new);
    let dirs = JobDirs::new(
        inputs.out_dir,
        inputs.run_id,
        &case.name,
        &variant.slug(),
        repeat,
        checkpoint_root,
    );
    let mut job_vars = dirs.variables(repeat);
    if let Some(data) = &platform.data_root {
        job_vars.insert("DATA_PATH".to_owned(), data.clone());
    }
    if let Some(dir) = &platform.megatron_lm_dir {
        job_vars.insert("MEGATRON_LM_DIR".to_owned(), dir.clone());
    }
    let values = applied_values(inputs.config, variant, &case.goldgate.variants);
    let mut resolver = Resolver {
        lookup: Lookup {
            job: &job_vars,
            caller: inputs.caller_env,
        },
        missing: Vec::new(),
        from_caller: Vec::new(),
    };

    let entry = entry_words(inputs, case);
    if entry.is_empty() {
        return Err(PlanError::NothingToRun {
            case: case.name.clone(),
        });
    }
    let (env, env_unset) = job_env(inputs, case, &values, &job_vars, &mut resolver)?;
    let mut runs = Vec::new();
    for run in run_numbers(case.test_type) {
        let args = case
            .model_args_for_run(run)
            .map(|m| edit_model_args(m, &values))
            .unwrap_or_else(empty_args);
        let mut words: Vec<String> = entry
            .iter()
            .map(|w| absolute(inputs.base_dir, resolver.text(w)))
            .collect();
        words.extend(
            located_args(case, &args.argv())
                .iter()
                .map(|w| resolver.text(w)),
        );
        runs.push(RunSpec::new(words));
    }
    if !resolver.missing.is_empty() {
        return Err(unresolved(case, &resolver.missing));
    }
    let nproc = case.goldgate.nproc.unwrap_or(platform.gpus_per_node).max(1);
    Ok(Job {
        id: format!("{}@{}#{repeat}", case.name, variant.name()),
        case: case.name.clone(),
        variant: variant.clone(),
        repeat,
        test_type: case.test_type,
        launcher: launcher(case.launcher, platform.launcher, nproc),
        nproc,
        runs,
        env,
        env_unset,
        dirs,
        metrics: case.metrics.clone(),
        platform: platform.name.clone(),
        config_path: case.config_path.clone(),
        from_caller: resolver.from_caller,
        warmup: false,
        timeout: case.goldgate.timeout.or(platform.timeout),
    })
}

fn unresolved(case: &TestCase, missing: &[(String, String)]) -> PlanError {
    let list: Vec<String> = missing
        .iter()
        .map(|(name, place)| format!("  ${{{name}}} at {place}"))
        .collect();
    let mut names: Vec<String> = missing.iter().map(|(name, _)| name.clone()).collect();
    names.sort();
    names.dedup();
    PlanError::Unresolved {
        case: case.name.clone(),
        names,
        list: list.join("\n"),
    }
}

/// Runs of a test type: two for `ckpt-resume` (MODEL_ARGS, then MODEL_ARGS_2 when present).
fn run_numbers(test_type: TestType) -> Vec<u32> {
    match test_type {
        TestType::CkptResume => vec![1, 2],
        _ => vec![1],
    }
}

/// A case's own launcher wins unless it is Megatron's default, torchrun, and the platform names another.
fn launcher(case: LauncherKind, platform: Option<LauncherChoice>, nproc: u32) -> Launcher {
    let kind = match (case, platform) {
        (LauncherKind::Torchrun, Some(LauncherChoice::FtLauncher)) => LauncherKind::FtLauncher,
        (LauncherKind::Torchrun, Some(LauncherChoice::Direct)) => LauncherKind::Direct,
        (kind, _) => kind,
    };
    match kind {
        LauncherKind::Torchrun => Launcher::Torchrun { nproc },
        LauncherKind::FtLauncher => Launcher::FtLauncher { nproc },
        LauncherKind::Direct => Launcher::Direct,
    }
}

/// Entry words: the case's `GOLDGATE.entry`, else the platform's, else Megatron's script.
fn entry_words(inputs: &PlanInputs<'_>, case: &TestCase) -> Vec<Located> {
    if let Some(entry) = &case.goldgate.entry {
        return entry
            .iter()
            .map(|s| Located {
                text: s.text.clone(),
                place: place(case, s.span),
            })
            .collect();
    }
    let config = inputs.config.path.display();
    if let Some(entry) = &inputs.platform.entry {
        let place = format!("{config}: platforms.{}.entry", inputs.platform.name);
        return entry
            .iter()
            .map(|t| Located {
                text: t.clone(),
                place: place.clone(),
            })
            .collect();
    }
    vec![Located {
        text: DEFAULT_ENTRY.to_owned(),
        place: "the default entry (set megatron_lm_dir or entry in the platform)".to_owned(),
    }]
}

/// A relative path among the entry words, made absolute; options, plain names and URLs
/// (`http://host/x`, `s3://bucket/key`) stay as they are.
fn absolute(base_dir: &Path, word: String) -> String {
    let url = word.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if word.contains('/') && !word.starts_with('/') && !word.starts_with('-') && !url {
        return base_dir.join(&word).display().to_string();
    }
    word
}

fn place(case: &TestCase, span: Option<crate::case::Span>) -> String {
    let path = case.config_path.display();
    match span {
        Some(span) => format!("{path}:{}:{}", span.line, span.column),
        None => path.to_string(),
    }
}

fn located_args(case: &TestCase, words: &[Word]) -> Vec<Located> {
    words
        .iter()
        .map(|w| Located {
            text: w.text.clone(),
            place: place(case, w.span),
        })
        .collect()
}

fn empty_args() -> ModelArgs {
    ModelArgs {
        key: "MODEL_ARGS".to_owned(),
        entries: Vec::new(),
        key_spans: Vec::new(),
    }
}

/// MODEL_ARGS with the variant's edits applied in axis order: removals, then additions/overrides.
fn edit_model_args(args: &ModelArgs, values: &[&AxisValue]) -> ModelArgs {
    let mut args = args.clone();
    args.key_spans.resize(args.entries.len(), None);
    for value in values {
        for flag in &value.remove_args {
            while let Some(i) = args.entries.iter().position(|(f, _)| f == flag) {
                args.entries.remove(i);
                args.key_spans.remove(i);
            }
        }
        for (flag, text) in &value.args {
            let scalar = variant_scalar(text);
            match args.entries.iter().position(|(f, _)| f == flag) {
                Some(i) => args.entries[i].1 = scalar,
                None => {
                    args.entries.push((flag.clone(), scalar));
                    args.key_spans.push(None);
                }
            }
        }
    }
    args
}

fn variant_scalar(text: &str) -> Scalar {
    let kind = match text {
        "true" => ScalarKind::Bool(true),
        "false" => ScalarKind::Bool(false),
        _ => ScalarKind::Str,
    };
    Scalar {
        text: text.to_owned(),
        kind,
        span: None,
    }
}

/// The environment a job sets, lowest precedence first: job folders, platform `env`, the
/// case's ENV_VARS (placeholders resolved; values as written, as Megatron's `yq` exports them),
/// the variant's `env`; then the variant's `unset`.
fn job_env(
    inputs: &PlanInputs<'_>,
    case: &TestCase,
    values: &[&AxisValue],
    job_vars: &BTreeMap<String, String>,
    resolver: &mut Resolver<'_>,
) -> Result<(BTreeMap<String, String>, Vec<String>), PlanError> {
    let mut env = job_vars.clone();
    env.extend(inputs.platform.env.iter().cloned());
    for (name, scalar) in &case.env_vars {
        if !is_name(name) {
            return Err(PlanError::EnvName {
                place: place(case, scalar.span),
                name: name.clone(),
            });
        }
        let value = if scalar.kind == ScalarKind::Null {
            String::new()
        } else {
            scalar.text.clone()
        };
        let resolved = resolver.text(&Located {
            text: value,
            place: place(case, scalar.span),
        });
        env.insert(name.clone(), resolved);
    }
    let mut unset = Vec::new();
    for value in values {
        env.extend(value.env.iter().cloned());
        for name in &value.unset {
            env.remove(name);
            if !unset.contains(name) {
                unset.push(name.clone());
            }
        }
    }
    Ok((env, unset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::load_case;

    const CONFIG: &str = r#"platforms:
  plain: {gpus_per_node: 4, env: {SHARED: platform, ONLY_PLATFORM: p}}
  direct:
    gpus_per_node: 2
    launcher: direct
    megatron_lm_dir: /opt/megatron
    data_root: /datasets
    entry: [python, -u, tools/train.py]
    checkpoint_root: /nvme
variants:
  allocator:
    values:
      default: {}
      gc80: {env: {SHARED: variant}, unset: [ONLY_PLATFORM]}
"#;

    fn load(yaml: &str) -> (tempfile::TempDir, TestCase) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m/c/model_config.yaml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, yaml).unwrap();
        let case = load_case(dir.path(), &path).unwrap();
        (dir, case)
    }

    fn plan(yaml: &str, platform: &str, variants: &[&str]) -> Result<Vec<Job>, PlanError> {
        let config = Config::parse(CONFIG, Path::new("goldgate.yaml")).unwrap();
        let platform = config.platform(Some(platform)).unwrap();
        let variants: Vec<String> = variants.iter().map(|v| (*v).to_owned()).collect();
        let request = VariantRequest::parse(&config, &variants, &[])?;
        let caller =
            BTreeMap::from([("MEGATRON_LM_DIR".to_owned(), "/caller/megatron".to_owned())]);
        let (_dir, case) = load(yaml);
        let inputs = PlanInputs {
            config: &config,
            platform,
            out_dir: Path::new("/out"),
            run_id: "r",
            base_dir: Path::new("/repo"),
            caller_env: &caller,
        };
        plan_case(&inputs, &case, &request, 1)
    }

    #[test]
    fn entry_and_launcher_precedence() {
        let yaml = "TEST_TYPE: regular\nMODEL_ARGS:\n  --data-path: ${DATA_PATH}\n";
        let plain = "TEST_TYPE: regular\nMODEL_ARGS:\n  --lr: 1.0e-4\n";
        let job = &plan(plain, "plain", &[]).unwrap()[0];
        assert_eq!(job.launcher, Launcher::Torchrun { nproc: 4 });
        assert_eq!(
            job.runs[0].entry_argv,
            ["/caller/megatron/pretrain_gpt.py", "--lr", "1.0e-4"]
        );
        assert!(
            matches!(plan(yaml, "plain", &[]), Err(PlanError::Unresolved { .. })),
            "no DATA_PATH anywhere"
        );
        let job = &plan(yaml, "direct", &[]).unwrap()[0];
        assert_eq!(
            job.launcher,
            Launcher::Direct,
            "the platform replaces Megatron's default launcher"
        );
        assert_eq!(
            job.runs[0].entry_argv,
            [
                "python",
                "-u",
                "/repo/tools/train.py",
                "--data-path",
                "/datasets"
            ]
        );
        assert_eq!(job.dirs.checkpoints, Path::new("/nvme/r/m/c/default/1"));
        let own = "TEST_TYPE: regular\nLAUNCHER: ft_launcher\nMODEL_ARGS: {}\nGOLDGATE:\n  entry: [fake-trainer, --fast]\n  nproc: 3\n";
        let job = &plan(own, "direct", &[]).unwrap()[0];
        assert_eq!(
            job.launcher,
            Launcher::FtLauncher { nproc: 3 },
            "the case's own launcher wins"
        );
        assert_eq!(job.runs[0].entry_argv, ["fake-trainer", "--fast"]);
    }

    #[test]
    fn environment_layers_and_scalar_text() {
        let yaml = "TEST_TYPE: regular\nENV_VARS:\n  SHARED: case\n  BOOL: True\n  NUM: 1e-8\n  EMPTY:\nMODEL_ARGS: {}\n";
        let job = &plan(yaml, "plain", &[]).unwrap()[0];
        let env = |k: &str| job.env.get(k).cloned();
        assert_eq!(
            env("SHARED").as_deref(),
            Some("case"),
            "ENV_VARS beat the platform"
        );
        assert_eq!(
            env("BOOL").as_deref(),
            Some("True"),
            "exported as written, as Megatron's yq does"
        );
        assert_eq!(env("NUM").as_deref(), Some("1e-8"));
        assert_eq!(env("EMPTY").as_deref(), Some(""));
        assert_eq!(env("ONLY_PLATFORM").as_deref(), Some("p"));
        assert_eq!(env("REPEAT").as_deref(), Some("1"));
        let job = &plan(yaml, "plain", &["allocator=gc80"]).unwrap()[0];
        assert_eq!(job.env["SHARED"], "variant", "the variant beats ENV_VARS");
        assert!(!job.env.contains_key("ONLY_PLATFORM"));
        assert_eq!(job.env_unset, ["ONLY_PLATFORM"]);
        assert_eq!(job.id, "m/c@allocator=gc80#1");
    }

    #[test]
    fn ckpt_resume_uses_model_args_2_for_the_second_run() {
        let yaml = "TEST_TYPE: ckpt-resume\nMODEL_ARGS:\n  --train-iters: 100\nMODEL_ARGS_2:\n  --train-iters: 200\n";
        let job = &plan(yaml, "plain", &[]).unwrap()[0];
        assert_eq!(job.runs.len(), 2);
        assert_eq!(job.runs[0].entry_argv[1..], ["--train-iters", "100"]);
        assert_eq!(job.runs[1].entry_argv[1..], ["--train-iters", "200"]);
    }

    #[test]
    fn unresolved_names_are_all_listed_with_their_place() {
        let yaml = "TEST_TYPE: regular\nENV_VARS:\n  X: ${NOPE_A}\nMODEL_ARGS:\n  --a: ${NOPE_B}\n  --b: $NOPE_A\n";
        let err = plan(yaml, "plain", &[]).unwrap_err();
        let PlanError::Unresolved { names, list, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(names, &["NOPE_A", "NOPE_B"]);
        assert_eq!(list.lines().count(), 3, "{list}");
        assert!(list.contains("model_config.yaml:5:8"), "{list}");
    }

    #[test]
    fn relative_entry_words_become_absolute_but_urls_do_not() {
        let base = Path::new("/repo");
        let cases = [
            ("scripts/train.sh", "/repo/scripts/train.sh"),
            ("http://host/x", "http://host/x"),
            ("s3://bucket/key", "s3://bucket/key"),
            ("git+https://h/r.git", "git+https://h/r.git"),
            ("--flag=a/b", "--flag=a/b"),
            ("/abs/p", "/abs/p"),
            ("plain", "plain"),
            ("a/://b", "/repo/a/://b"),
        ];
        for (word, want) in cases {
            assert_eq!(absolute(base, word.to_owned()), want, "{word}");
        }
    }
}
