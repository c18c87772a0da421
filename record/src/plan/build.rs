//! Stage "plan": turning a loaded case into jobs — variant edits, Megatron CI's edits, the
//! runs of its test type, environment, the two placeholder passes, argv, the rank check.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::environment::{JobEnv, Layers, Place, job_env, megatron_vars};
use super::error::PlanError;
use super::job::{Job, JobDirs, Launcher, RecipeRef, RunAction, RunSpec};
use super::megatron::{
    CiEdits, LayoutDirs, RunLayout, ci_edits, is_lightweight, is_nemo, n_repeat, run_layouts,
    train_iters,
};
use super::placeholder::{FromCaller, Names, resolve};
use super::ranks::Layout;
use super::variant::{Variant, VariantRequest, applied_values, check_case_variants, expand};
use goldgate_core::case::{
    CaseRecipe, LauncherKind, Lookups, ModelArgs, Scalar, ScalarKind, Span, TestCase, TestType,
    model_argv,
};
use goldgate_core::config::{AxisValue, Config, LauncherChoice, Platform};

/// Everything a plan needs besides the case: configuration, platform, where outputs go, the
/// recipes, and the caller's environment (passed in, so planning is a pure function).
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
    /// Megatron's `environment` (`dev`, `lts`): which golden file a recipe case is judged by.
    pub environment: &'a str,
    /// `--nodes`: replaces the recipe's and the platform's node count.
    pub nodes: Option<u32>,
    /// `--gpus-per-node`: replaces the recipe's and the platform's GPUs per node.
    pub gpus_per_node: Option<u32>,
    /// Warm-up repeats planned before the measured ones (`goldgate run --warmup N`).
    pub warmup: u32,
    /// The executor starts one launcher per node (Slurm): a job whose node count comes from
    /// the platform's default, not `--nodes` or its recipe, gets the fewest nodes its parallel
    /// layout runs on when the default is too few.
    pub fit_nodes: bool,
}

/// The entry used when neither the case, its recipe nor the platform names one.
pub const DEFAULT_ENTRY: &str = "${MEGATRON_LM_DIR}/pretrain_gpt.py";

/// A placeholder no layer, no ENV_VARS entry and no caller variable sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unset {
    /// The first case that uses it.
    pub case: String,
    pub name: String,
    /// Where it is first used.
    pub place: Place,
    /// The cases of the selection that use it, the first included.
    pub cases: usize,
}

/// The jobs of a case and the placeholders nothing sets.
#[derive(Clone, Debug, Default)]
pub struct Planned {
    pub jobs: Vec<Job>,
    pub unset: Vec<Unset>,
}

/// Every job of `case`: each variant the request expands to, times the repeats (`repeats`,
/// else the case's `ENV_VARS.N_REPEAT`, else 1; lightweight mode: 1), after
/// `inputs.warmup` warm-up repeats (marked, never judged).
pub fn plan_case(
    inputs: &PlanInputs<'_>,
    case: &TestCase,
    recipe: CaseRecipe<'_>,
    request: &VariantRequest,
    repeats: Option<u32>,
) -> Result<Planned, PlanError> {
    if repeats == Some(0) {
        return Err(PlanError::ZeroRepeat);
    }
    let allowed = &case.goldgate.variants;
    check_case_variants(
        inputs.config,
        &case.config_path.display().to_string(),
        allowed,
    )?;
    let lightweight = is_lightweight(case, inputs.caller_env);
    let repeats = repeats.unwrap_or_else(|| n_repeat(case, lightweight, 1));
    let mut planned = Planned::default();
    for variant in expand(inputs.config, request, &case.name, allowed)? {
        for repeat in 1..=repeats.saturating_add(inputs.warmup) {
            let (mut job, unset) = plan_job(inputs, case, recipe, &variant, repeat)?;
            job.warmup = repeat <= inputs.warmup;
            for u in unset {
                if !planned.unset.iter().any(|p| p.name == u.name) {
                    planned.unset.push(u);
                }
            }
            planned.jobs.push(job);
        }
    }
    Ok(planned)
}

/// A word to resolve and the place to name if it cannot be.
struct Located {
    text: String,
    place: Place,
}

/// What a case contributes to each of its jobs under one variant.
struct Shape<'a> {
    case: &'a TestCase,
    entry: Vec<Located>,
    /// The recipe's `TRAINING_SCRIPT_PATH`, which Megatron exports.
    training_script: Option<String>,
    nemo: bool,
    lightweight: bool,
    edits: CiEdits,
    train_iters: Option<u64>,
    nproc: u32,
    nodes: u32,
    /// `--nodes` or the recipe set `nodes` (else it is the platform's default).
    nodes_given: bool,
}

fn plan_job(
    inputs: &PlanInputs<'_>,
    case: &TestCase,
    recipe: CaseRecipe<'_>,
    variant: &Variant,
    repeat: u32,
) -> Result<(Job, Vec<Unset>), PlanError> {
    let values = applied_values(inputs.config, variant, &case.goldgate.variants);
    let mut shape = shape(inputs, case, recipe, &values)?;
    let draft = draft(inputs, &shape, &values, variant, repeat)?;
    let mut missing = draft.env.missing.clone();
    let mut runs = Vec::new();
    for (layout, vars) in draft.layouts.iter().zip(&draft.run_vars) {
        let run = plan_run(inputs, &shape, layout, vars, &draft, &mut missing)?;
        runs.push(run);
    }
    add_resume_actions(case.test_type, shape.train_iters, &draft.dirs, &mut runs);
    if inputs.fit_nodes && !shape.nodes_given {
        shape.nodes = fitted_nodes(&shape, &runs);
    }
    check_ranks(case, &shape, &runs)?;
    let scripts = scripts(&shape, &draft, inputs, &mut missing);
    let job = assemble(
        inputs, &shape, recipe, variant, repeat, draft, runs, scripts,
    );
    Ok((job, unset_list(case, missing)))
}

/// A job before its runs: folders, each run's layout and variables, the environment.
struct Draft {
    dirs: JobDirs,
    layouts: Vec<RunLayout>,
    run_vars: Vec<BTreeMap<String, String>>,
    env: JobEnv,
    from_caller: RefCell<Vec<FromCaller>>,
}

impl Draft {
    /// The first run's own variables (scripts and ENV_VARS see the job as its first run does).
    fn run1(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.run_vars.first().unwrap_or(&EMPTY)
    }
}

fn draft(
    inputs: &PlanInputs<'_>,
    shape: &Shape<'_>,
    values: &[&AxisValue],
    variant: &Variant,
    repeat: u32,
) -> Result<Draft, PlanError> {
    let case = shape.case;
    let dirs = JobDirs::new(
        inputs.out_dir,
        inputs.run_id,
        &case.name,
        &variant.slug(),
        repeat,
        inputs.platform.checkpoint_root.as_deref().map(Path::new),
    );
    let from_caller = RefCell::new(Vec::new());
    let (mut base, frozen) = base_vars(inputs, shape, &dirs, repeat, &from_caller);
    base.extend(megatron_vars(case, shape.lightweight));
    let layout_dirs = LayoutDirs {
        checkpoints: &dirs.checkpoints,
        scratch: &dirs.scratch,
        frozen: &frozen,
        tensorboard: &dirs.tensorboard,
    };
    let layouts = run_layouts(case, repeat, &layout_dirs);
    let run_vars: Vec<BTreeMap<String, String>> = layouts.iter().map(layout_vars).collect();
    let empty = BTreeMap::new();
    let place = |s: &Scalar| place(case, s.span);
    let layers = Layers {
        base,
        platform: inputs.platform,
        env_vars: &shape.edits.env_vars,
        values,
        caller: inputs.caller_env,
        run1: run_vars.first().unwrap_or(&empty),
        place: &place,
    };
    let env = job_env(&layers, &from_caller)?;
    Ok(Draft {
        dirs,
        layouts,
        run_vars,
        env,
        from_caller,
    })
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    inputs: &PlanInputs<'_>,
    shape: &Shape<'_>,
    recipe: CaseRecipe<'_>,
    variant: &Variant,
    repeat: u32,
    draft: Draft,
    runs: Vec<RunSpec>,
    scripts: (Option<String>, Option<String>),
) -> Job {
    let case = shape.case;
    let env = draft.env;
    Job {
        id: format!("{}@{}#{repeat}", case.name, variant.name()),
        case: case.name.clone(),
        variant: variant.clone(),
        repeat,
        test_type: case.test_type,
        mode: case.mode,
        launcher: launcher(case.launcher, inputs.platform.launcher, shape.nproc),
        nproc: shape.nproc,
        nodes: shape.nodes,
        runs,
        train_iters: shape.train_iters,
        environment: recipe.any.map(|_| inputs.environment.to_owned()),
        recipe: recipe.any.map(|row| RecipeRef {
            file: row.file.clone(),
            name: row.name.clone(),
            scope: row.scope.clone(),
            exact: recipe.exact.is_some(),
            time_limit: row.time_limit,
        }),
        before_script: scripts.0,
        after_script: scripts.1,
        skip_checks: env.env.get("SKIP_PYTEST").is_some_and(|v| v.trim() == "1"),
        expect_failure: case
            .test_evaluation
            .as_ref()
            .is_some_and(|t| t.text == "xpass"),
        env: env.env,
        env_unset: env.unset,
        dirs: draft.dirs,
        metrics: case.metrics.clone(),
        platform: inputs.platform.name.clone(),
        config_path: case.config_path.clone(),
        test_evaluation: case.test_evaluation.as_ref().map(|t| t.text.clone()),
        case_sha256: case.file_sha256.clone(),
        rules: inputs.config.rules_ref(),
        golden_variant: golden_variant(inputs, variant),
        from_caller: draft.from_caller.into_inner(),
        warmup: false,
        ab: None,
        timeout: case.goldgate.timeout.or(inputs.platform.timeout),
    }
}

/// The variant folder of a job's golden files under the configuration's axis defaults.
fn golden_variant(inputs: &PlanInputs<'_>, variant: &Variant) -> Option<String> {
    let mut choices: Vec<(&str, &str)> = (variant.choices.iter())
        .map(|(a, v)| (a.as_str(), v.as_str()))
        .collect();
    choices.sort();
    goldgate_core::golden::variant_key(choices, &inputs.config.axis_defaults())
}

/// The variant's and Megatron CI's edits, the entry, and the job's size.
fn shape<'a>(
    inputs: &PlanInputs<'_>,
    case: &'a TestCase,
    recipe: CaseRecipe<'_>,
    values: &[&AxisValue],
) -> Result<Shape<'a>, PlanError> {
    let entry = entry_words(inputs, case, recipe);
    if entry.is_empty() {
        return Err(PlanError::NothingToRun {
            case: case.name.clone(),
        });
    }
    let nemo = entry.first().is_some_and(|w| is_nemo(&w.text))
        || case
            .model_args
            .first()
            .is_some_and(ModelArgs::looks_like_nemo);
    let lightweight = is_lightweight(case, inputs.caller_env);
    let mut edited = case.clone();
    for args in &mut edited.model_args {
        *args = edit_model_args(args, values);
    }
    let edits = ci_edits(&edited, nemo, lightweight);
    let train_iters = train_iters(case, &edits, nemo);
    let exact = recipe.exact;
    let nproc = inputs
        .gpus_per_node
        .or(case.goldgate.nproc)
        .or(exact.map(|r| r.gpus_per_node()))
        .unwrap_or(inputs.platform.gpus_per_node)
        .max(1);
    let given = inputs.nodes.or(exact.and_then(|r| r.nodes));
    let nodes = given.unwrap_or(inputs.platform.nodes).max(1);
    Ok(Shape {
        case,
        entry,
        training_script: recipe
            .any
            .and_then(|r| r.training_script())
            .map(str::to_owned),
        nemo,
        lightweight,
        edits,
        train_iters,
        nproc,
        nodes,
        nodes_given: given.is_some(),
    })
}

/// The variables every run of the job sees: its folders, `DATA_PATH` and `MEGATRON_LM_DIR`
/// from the platform, `TRAINING_SCRIPT_PATH`. Also the frozen-checkpoint folder.
fn base_vars(
    inputs: &PlanInputs<'_>,
    shape: &Shape<'_>,
    dirs: &JobDirs,
    repeat: u32,
    from_caller: &RefCell<Vec<FromCaller>>,
) -> (BTreeMap<String, String>, PathBuf) {
    let mut vars = dirs.variables(repeat);
    let platform = inputs.platform;
    if let Some(data) = &platform.data_root {
        vars.insert("DATA_PATH".to_owned(), data.clone());
    }
    if let Some(dir) = &platform.megatron_lm_dir {
        vars.insert("MEGATRON_LM_DIR".to_owned(), dir.clone());
    }
    let names = Names {
        layers: vec![&vars],
        caller: inputs.caller_env,
        unset: &[],
        from_caller,
    };
    let frozen = platform
        .frozen_checkpoints
        .clone()
        .or_else(|| names.get("DATA_PATH"))
        .unwrap_or_default();
    if let Some(script) = &shape.training_script {
        vars.insert("TRAINING_SCRIPT_PATH".to_owned(), script.clone());
    }
    (vars, PathBuf::from(frozen))
}

/// A run's own variables: its checkpoint folders, TensorBoard folder and number.
fn layout_vars(layout: &RunLayout) -> BTreeMap<String, String> {
    let path = |p: &Path| p.display().to_string();
    [
        ("CHECKPOINT_SAVE_PATH", path(&layout.save)),
        ("CHECKPOINT_LOAD_PATH", path(&layout.load)),
        ("TENSORBOARD_PATH", path(&layout.tensorboard)),
        ("RUN_NUMBER", layout.number.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// One run: the entry and MODEL_ARGS words through Megatron's two placeholder passes.
fn plan_run(
    inputs: &PlanInputs<'_>,
    shape: &Shape<'_>,
    layout: &RunLayout,
    vars: &BTreeMap<String, String>,
    draft: &Draft,
    missing: &mut Vec<(String, Place)>,
) -> Result<RunSpec, PlanError> {
    let case = shape.case;
    let env = &draft.env;
    let names = |layers| Names {
        layers,
        caller: inputs.caller_env,
        unset: &env.unset,
        from_caller: &draft.from_caller,
    };
    let first_pass = names(vec![vars, &env.before_env_vars]);
    let shell = names(vec![&env.env, vars]);
    let mut words = Vec::new();
    for word in &shape.entry {
        let resolved = resolve(&word.text, &shell);
        missing.extend(
            resolved
                .missing
                .into_iter()
                .map(|n| (n, word.place.clone())),
        );
        words.push(absolute(inputs.base_dir, resolved.text));
    }
    let args = shape.edits.model_args.iter().find(|m| m.key == layout.key);
    let pass1 = |n: &str| first_pass.get(n);
    let pass2 = |n: &str| shell.get(n);
    let lookups = Lookups {
        nemo: shape.nemo,
        env: &pass1,
        shell: &pass2,
    };
    let argv = model_argv(&args.cloned().unwrap_or_else(empty_args), &lookups).map_err(|e| {
        PlanError::Argv {
            place: place(case, e.span()).to_string(),
            message: e.to_string(),
        }
    })?;
    for (expansion, span) in argv.expansions {
        if expansion.value.is_none() {
            missing.push((expansion.name, place(case, span)));
        }
    }
    words.extend(argv.words.into_iter().map(|w| w.text));
    let mut run = RunSpec::new(words);
    run.env = vars.clone();
    run.nproc = layout.gpus_per_node;
    Ok(run)
}

/// ckpt-resume: before the second run Megatron removes the last iteration's checkpoint and
/// points the tracker file at `TRAIN_ITERS / 2`, so the second run resumes mid-training.
fn add_resume_actions(
    test_type: TestType,
    train_iters: Option<u64>,
    dirs: &JobDirs,
    runs: &mut [RunSpec],
) {
    let (TestType::CkptResume, Some(iters), Some(second)) =
        (test_type, train_iters, runs.get_mut(1))
    else {
        return;
    };
    second.before = vec![
        RunAction::RemoveCheckpoint {
            dir: dirs.checkpoints.clone(),
            iteration: iters,
        },
        RunAction::WriteLatestIteration {
            dir: dirs.checkpoints.clone(),
            iteration: iters / 2,
        },
    ];
}

/// The fewest nodes, from the shape's own count up, on which every run's ranks fit its
/// parallel layout (the shape's count when none up to 10,000 does).
fn fitted_nodes(shape: &Shape<'_>, runs: &[RunSpec]) -> u32 {
    let layouts: Vec<(u64, Layout)> = runs
        .iter()
        .map(|run| {
            let per_node = u64::from(run.nproc.unwrap_or(shape.nproc));
            (per_node, Layout::of(&run.entry_argv))
        })
        .collect();
    let fits = |nodes: u32| {
        layouts
            .iter()
            .all(|(per_node, layout)| layout.check(per_node * u64::from(nodes)).is_ok())
    };
    (shape.nodes..=10_000)
        .find(|n| fits(*n))
        .unwrap_or(shape.nodes)
}

/// Refuses a job whose ranks do not fit the parallel layout its flags ask for.
fn check_ranks(case: &TestCase, shape: &Shape<'_>, runs: &[RunSpec]) -> Result<(), PlanError> {
    for (i, run) in runs.iter().enumerate() {
        let layout = Layout::of(&run.entry_argv);
        let per_node = run.nproc.unwrap_or(shape.nproc);
        let world = u64::from(per_node) * u64::from(shape.nodes);
        if let Err(why) = layout.check(world) {
            return Err(PlanError::Ranks {
                case: case.name.clone(),
                run: i + 1,
                why,
                nodes: shape.nodes,
                per_node,
                min: layout.min_world(),
            });
        }
    }
    Ok(())
}

/// `BEFORE_SCRIPT` and `AFTER_SCRIPT` after the first placeholder pass (bash expands the rest
/// when it runs them, as Megatron's `eval` does).
fn scripts(
    shape: &Shape<'_>,
    draft: &Draft,
    inputs: &PlanInputs<'_>,
    missing: &mut Vec<(String, Place)>,
) -> (Option<String>, Option<String>) {
    let case = shape.case;
    let env = &draft.env;
    let names = Names {
        layers: vec![draft.run1(), &env.before_env_vars],
        caller: inputs.caller_env,
        unset: &env.unset,
        from_caller: &draft.from_caller,
    };
    let mut one = |script: &Option<Scalar>| {
        let script = script.as_ref()?;
        let resolved = resolve(&script.text, &names);
        // Names the ENV_VARS define (and the exit code the after script may set) are the
        // shell's when the script runs.
        let defined = |n: &String| env.env.contains_key(n) || n == "EXIT_CODE";
        missing.extend(
            resolved
                .missing
                .into_iter()
                .filter(|n| !defined(n))
                .map(|n| (n, place(case, script.span))),
        );
        Some(resolved.text)
    };
    (one(&case.before_script), one(&case.after_script))
}

fn unset_list(case: &TestCase, missing: Vec<(String, Place)>) -> Vec<Unset> {
    let mut out: Vec<Unset> = Vec::new();
    for (name, place) in missing {
        if !out.iter().any(|u| u.name == name) {
            out.push(Unset {
                case: case.name.clone(),
                name,
                place,
                cases: 1,
            });
        }
    }
    out
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

/// Entry words: the case's `GOLDGATE.entry`, else its recipe's training script (in
/// `$MEGATRON_LM_DIR`; NeMo's command as is), else the platform's entry, else Megatron's
/// `pretrain_gpt.py`.
fn entry_words(inputs: &PlanInputs<'_>, case: &TestCase, recipe: CaseRecipe<'_>) -> Vec<Located> {
    if let Some(entry) = &case.goldgate.entry {
        return entry
            .iter()
            .map(|s| Located {
                text: s.text.clone(),
                place: place(case, s.span),
            })
            .collect();
    }
    if let Some((row, script)) = recipe.any.and_then(|r| Some((r, r.training_script()?))) {
        let place = Place {
            file: Some(row.file.clone()),
            at: None,
            what: Some("TRAINING_SCRIPT_PATH".to_owned()),
        };
        let located = |text: String| Located {
            text,
            place: place.clone(),
        };
        if is_nemo(script) {
            return script
                .split_whitespace()
                .map(|w| located(w.to_owned()))
                .collect();
        }
        let script = script.trim_start_matches("./");
        return vec![located(format!("${{MEGATRON_LM_DIR}}/{script}"))];
    }
    if let Some(entry) = &inputs.platform.entry {
        let place = Place {
            file: Some(inputs.config.path.clone()),
            at: None,
            what: Some(format!("platforms.{}.entry", inputs.platform.name)),
        };
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
        place: Place {
            file: None,
            at: None,
            what: Some(
                "the default entry (set megatron_lm_dir or entry in the platform)".to_owned(),
            ),
        },
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
    // A word that starts with a placeholder nothing set (`${MEGATRON_LM_DIR}/pretrain_gpt.py`)
    // stays as written: joined to the folder it would read as a path that exists nowhere.
    let placeholder = word.starts_with('$');
    if word.contains('/')
        && !word.starts_with('/')
        && !word.starts_with('-')
        && !url
        && !placeholder
    {
        return base_dir.join(&word).display().to_string();
    }
    word
}

fn place(case: &TestCase, span: Option<Span>) -> Place {
    Place {
        file: Some(case.config_path.clone()),
        at: span,
        what: None,
    }
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
            super::megatron::set(&mut args, flag, variant_scalar(text));
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

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::case::case_from_yaml as load;

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

    fn planned(yaml: &str, platform: &str, variants: &[&str]) -> Result<Planned, PlanError> {
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
            environment: "dev",
            nodes: None,
            gpus_per_node: None,
            warmup: 0,
            fit_nodes: false,
        };
        let none = CaseRecipe {
            exact: None,
            any: None,
        };
        plan_case(&inputs, &case, none, &request, Some(1))
    }

    fn plan(yaml: &str, platform: &str, variants: &[&str]) -> Result<Vec<Job>, PlanError> {
        planned(yaml, platform, variants).map(|p| p.jobs)
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
        let kept = planned(yaml, "plain", &[]).unwrap();
        assert_eq!(
            kept.jobs[0].runs[0].entry_argv[1..],
            ["--data-path", "${DATA_PATH}"]
        );
        assert_eq!(
            kept.unset[0].name, "DATA_PATH",
            "no DATA_PATH anywhere: one warning"
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
        let yaml = "TEST_TYPE: regular\nENV_VARS:\n  SHARED: case\n  BOOL: True\n  NUM: 1e-8\n  EMPTY:\n  NCCL_ALGO: Tree\nMODEL_ARGS: {}\n";
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
        assert_eq!(
            env("NCCL_PROTO").as_deref(),
            Some("simple"),
            "Megatron's NCCL defaults"
        );
        assert_eq!(
            env("NCCL_ALGO").as_deref(),
            Some("Tree"),
            "the case's own value wins"
        );
        let job = &plan(yaml, "plain", &["allocator=gc80"]).unwrap()[0];
        assert_eq!(job.env["SHARED"], "variant", "the variant beats ENV_VARS");
        assert!(!job.env.contains_key("ONLY_PLATFORM"));
        assert_eq!(job.env_unset, ["ONLY_PLATFORM"]);
        assert_eq!(job.id, "m/c@allocator=gc80#1");
    }

    #[test]
    fn ckpt_resume_resumes_from_the_middle_with_model_args_2() {
        let yaml = "TEST_TYPE: ckpt-resume\nMODEL_ARGS:\n  --train-iters: 100\n  --load: ${CHECKPOINT_LOAD_PATH}\nMODEL_ARGS_2:\n  --train-iters: 200\n  --load: ${CHECKPOINT_LOAD_PATH}\n";
        let job = &plan(yaml, "plain", &[]).unwrap()[0];
        assert_eq!(job.runs.len(), 2);
        let ckpt = "/out/r/m/c/default/1/checkpoints";
        assert_eq!(
            job.runs[0].entry_argv[1..],
            [
                "--train-iters",
                "100",
                "--load",
                &format!("{ckpt}-tmp"),
                "--exit-interval",
                "100"
            ]
        );
        assert_eq!(
            job.runs[1].entry_argv[1..],
            ["--train-iters", "200", "--load", ckpt]
        );
        assert_eq!(job.train_iters, Some(100));
        assert_eq!(
            job.runs[1].before,
            [
                RunAction::RemoveCheckpoint {
                    dir: ckpt.into(),
                    iteration: 100
                },
                RunAction::WriteLatestIteration {
                    dir: ckpt.into(),
                    iteration: 50
                },
            ]
        );
        assert_eq!(job.runs[1].env["RUN_NUMBER"], "2");
    }

    #[test]
    fn names_nobody_sets_stay_as_written_and_env_vars_feed_the_second_pass() {
        let yaml = "TEST_TYPE: regular\nENV_VARS:\n  X: ${NOPE_A}\n  CKPT: ${MEGATRON_LM_DIR}/ckpt\nMODEL_ARGS:\n  --a: ${NOPE_B}\n  --b: $NOPE_A\n  --c: ${CKPT}\n";
        let planned = planned(yaml, "plain", &[]).unwrap();
        let names: Vec<_> = planned.unset.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["NOPE_A", "NOPE_B"], "one warning per name");
        let argv = &planned.jobs[0].runs[0].entry_argv;
        assert_eq!(
            argv[1..7],
            [
                "--a",
                "${NOPE_B}",
                "--b",
                "$NOPE_A",
                "--c",
                "/caller/megatron/ckpt"
            ]
        );
        assert!(
            planned.unset[1]
                .place
                .to_string()
                .ends_with("model_config.yaml:6:8"),
            "{:?}",
            planned.unset
        );
    }

    #[test]
    fn too_few_ranks_are_refused_with_the_flags_and_the_number() {
        let yaml = "TEST_TYPE: regular\nMODEL_ARGS:\n  --tensor-model-parallel-size: 2\n  --expert-model-parallel-size: 64\n  --expert-tensor-parallel-size: 1\n";
        let err = plan(yaml, "plain", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "m/c: run 1 needs at least 64 ranks (TP 2 = 2 for the model, EP 64 × ETP 1 = 64 for the experts), but gets 4 (1 node(s) × 4 GPU(s) per node)"
        );
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
