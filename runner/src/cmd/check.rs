//! `goldgate check`: validates every case and golden file under a root; a linter for pull requests.
//!
//! Output is one line per problem, `path:line:column: severity: message` (or `path:
//! severity: message` when there is no position), sorted by file and position, then a summary.
//! Errors (exit 2): configs or goldens that do not load, MODEL_ARGS Megatron's script cannot
//! turn into arguments. Warnings: unknown keys, placeholders nothing sets and parallel layouts
//! that do not fit the platform (each exactly as `plan` reports them: `check` plans every case),
//! goldens without metrics, metrics of a shape goldgate cannot compare (a list of lists).
//! Notes: skipped folders, inference goldens, and problems in files that goldgate.yaml's
//! `check.ignore` lists as known to be bad (`note: ignored (REASON): ...`), so a repository can
//! acknowledge upstream files it cannot fix and still gate on everything else.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::out;
use goldgate_core::case::{self, Span};
use goldgate_core::golden::{self, GoldenError};
use goldgate_core::rules::glob_match;
use goldgate_schema::Exit;

/// Arguments of `goldgate check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub root: super::args::CaseRoot,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Platform the cases are planned on (default: goldgate.yaml's default platform).
    #[arg(long)]
    pub platform: Option<String>,
    #[command(flatten)]
    pub recipes: super::select::RecipeArgs,
}

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Fails the check (exit 2).
    Error,
    /// Reported, does not fail.
    Warning,
    /// For information (skipped files).
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// The file (or folder).
    pub path: PathBuf,
    /// Where in it.
    pub at: Option<Span>,
    /// How bad.
    pub severity: Severity,
    /// What is wrong (without the location).
    pub message: String,
    /// How to fix it, when the error knows.
    pub hint: Option<String>,
}

/// Everything `check` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Cases looked at.
    pub cases: usize,
    /// Golden files looked at.
    pub goldens: usize,
    /// Findings, sorted.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    fn count(&self, severity: Severity) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == severity)
            .count()
    }
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let golden_root = args
        .golden_root
        .path
        .is_dir()
        .then_some(args.golden_root.path.as_path());
    let config = args.config.load()?;
    let mut report = collect(&args.root.path, golden_root)?;
    report.problems.extend(plan_lints(&args, &config)?);
    report.problems.sort();
    let roots: Vec<&Path> = std::iter::once(args.root.path.as_path())
        .chain(golden_root)
        .collect();
    apply_ignores(&mut report, &roots, &config.path, &config.check_ignore);
    out!("{}", render(&report));
    Ok(if report.count(Severity::Error) > 0 {
        Exit::Usage
    } else {
        Exit::Pass
    })
}

/// The note for a case folder without `model_config.yaml`.
fn no_config_note(dir: &Path) -> Problem {
    Problem {
        path: dir.to_path_buf(),
        at: None,
        severity: Severity::Note,
        message: if case::holds_scripts(dir) {
            "no model_config.yaml in this case folder: it holds scripts that a recipe runs \
             by its own commands, not run_ci_test.sh (Megatron does not treat it as a \
             case either); skipped"
        } else {
            "no model_config.yaml in this case folder; skipped"
        }
        .into(),
        hint: None,
    }
}

/// Checks every case under `root` and every golden file beside them and under `golden_root`.
pub fn collect(root: &Path, golden_root: Option<&Path>) -> Result<CheckReport, AppError> {
    let found = case::discover_all(root)?;
    let mut report = CheckReport {
        cases: found.cases.len(),
        ..CheckReport::default()
    };
    let mut golden_dirs: Vec<PathBuf> = Vec::new();
    for c in &found.cases {
        match case::load_case_checked(root, &c.config_path) {
            Ok((_, warnings)) => report
                .problems
                .extend(warnings.into_iter().map(|w| Problem {
                    path: w.path,
                    at: w.at,
                    severity: Severity::Warning,
                    message: w.message,
                    hint: None,
                })),
            Err(e) => report
                .problems
                .push(diagnostic(e.path(), Severity::Error, &e)),
        }
        golden_dirs.push(c.dir.clone());
    }
    for dir in &found.without_config {
        report.problems.push(no_config_note(dir));
        golden_dirs.push(dir.clone());
    }
    if let Some(golden_root) = golden_root {
        let more = case::discover_all(golden_root)?;
        golden_dirs.extend(more.cases.into_iter().map(|c| c.dir));
        golden_dirs.extend(more.without_config);
    }
    let goldens = golden_files(golden_dirs);
    report.goldens = goldens.len();
    report
        .problems
        .extend(par_map(&goldens, |path| check_golden(path)).concat());
    report.problems.sort();
    Ok(report)
}

/// Every golden file of the case folders `dirs` (their own and their variants').
fn golden_files(mut dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    dirs.sort();
    dirs.dedup();
    dirs.iter()
        .flat_map(|d| {
            let mut g = golden::goldens_in(d);
            g.extend(golden::variant_goldens(d));
            g
        })
        .map(|g| g.path)
        .collect()
}

/// What planning every case would say: a placeholder nothing sets and a parallel layout the
/// platform's ranks do not fit are warnings (`plan` and `run` refuse the latter); a value
/// Megatron's script cannot turn into arguments is an error, as in `plan`.
fn plan_lints(
    args: &Args,
    config: &goldgate_core::config::Config,
) -> Result<Vec<Problem>, AppError> {
    use goldgate_record::plan::{PlanInputs, VariantRequest, plan_case};
    let chosen = config.platform(args.platform.as_deref())?;
    let rows = goldgate_record::plan::load_rows(&args.recipes.query(), &args.root.path, config)?;
    let caller = goldgate_record::plan::caller_env();
    let environment = args
        .recipes
        .environment
        .clone()
        .unwrap_or_else(|| "dev".to_owned());
    let mut problems: Vec<Problem> = Vec::new();
    for c in case::discover(&args.root.path)? {
        let Ok(loaded) = case::load_case(&args.root.path, &c.config_path) else {
            continue; // already an error of its own
        };
        // Without --platform a case with a recipe is checked on its recipe's platform, one
        // without on the platform its golden files name (`golden_values_dev_dgx_h100.json`):
        // the default platform's one GPU would warn on every parallel layout of a corpus that
        // never runs there.
        let mut recipe = case::for_case(&rows, &c.name, &environment, &chosen.name);
        let own = recipe.any.and_then(|r| r.platform.as_deref());
        let platform = match own.map(|p| (p, config.platform(Some(p)))) {
            Some((name, Ok(p))) if args.platform.is_none() => {
                recipe = case::for_case(&rows, &c.name, &environment, name);
                p
            }
            None if args.platform.is_none() => golden_platform(args, config, &c).unwrap_or(chosen),
            _ => chosen,
        };
        let inputs = PlanInputs {
            config,
            platform,
            out_dir: Path::new("/goldgate-check"),
            run_id: "check",
            base_dir: Path::new("."),
            caller_env: &caller,
            environment: &environment,
            nodes: None,
            gpus_per_node: None,
            warmup: 0,
            fit_nodes: false,
        };
        let planned = plan_case(
            &inputs,
            &loaded,
            recipe,
            &VariantRequest::default(),
            Some(1),
        );
        problems.extend(lints_of(&c.config_path, &platform.name, planned));
    }
    Ok(problems)
}

/// Of the platforms `config` knows among those the case's golden files are named for, the one
/// with the most ranks (a case blessed on DGX A100 and GB200 runs on either).
fn golden_platform<'c>(
    args: &Args,
    config: &'c goldgate_core::config::Config,
    c: &case::CaseRef,
) -> Option<&'c goldgate_core::config::Platform> {
    let root = Some(args.golden_root.path.as_path()).filter(|p| p.is_dir());
    golden::find_goldens(&c.dir, root, &c.name)
        .into_iter()
        .filter_map(|g| g.name.platform)
        .filter_map(|p| config.platform(Some(&p)).ok())
        .max_by_key(|p| p.gpus_per_node * p.nodes)
}

/// The problems one case's plan shows.
fn lints_of(
    config_path: &Path,
    platform: &str,
    planned: Result<goldgate_record::plan::Planned, goldgate_record::plan::PlanError>,
) -> Vec<Problem> {
    use goldgate_record::plan::PlanError;
    match planned {
        // Names used outside the case file (the default entry's `MEGATRON_LM_DIR`) are the
        // environment's business, not the case's: `plan` warns about them.
        Ok(planned) => planned
            .unset
            .iter()
            .filter(|u| u.place.file.as_deref() == Some(config_path))
            .map(|u| Problem {
                path: config_path.to_path_buf(),
                at: u.place.at,
                severity: Severity::Warning,
                message: format!(
                    "`${{{}}}` is set by nothing (the environment, the platform, the case's ENV_VARS); plan leaves it as written",
                    u.name
                ),
                hint: None,
            })
            .collect(),
        Err(e @ PlanError::Ranks { .. }) => {
            let mut problem = diagnostic(config_path, Severity::Warning, &e);
            problem.message = format!("on platform {platform}: {}", problem.message);
            vec![problem]
        }
        Err(e) => vec![diagnostic(config_path, Severity::Error, &e)],
    }
}

/// `f` over `items` on all cores (golden files are many and independent), results in order.
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        // A worker only panics if `f` does; pass that panic on rather than hide it.
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn check_golden(path: &Path) -> Vec<Problem> {
    let problem = |severity, message: String, hint: Option<&str>| Problem {
        path: path.to_path_buf(),
        at: None,
        severity,
        message,
        hint: hint.map(str::to_owned),
    };
    let read = golden::read_golden(path);
    let mut problems = match &read {
        Ok(file) => file
            .duplicates
            .iter()
            .map(|d| Problem {
                at: Some(goldgate_core::case::Span {
                    line: d.line,
                    column: 1,
                }),
                ..problem(Severity::Warning, d.describe(), None)
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    problems.extend(golden_problems(path, read, problem));
    problems
}

/// What `check` says about a golden file besides its repeated keys.
fn golden_problems(
    path: &Path,
    read: Result<golden::GoldenFile, GoldenError>,
    problem: impl Fn(Severity, String, Option<&str>) -> Problem,
) -> Vec<Problem> {
    match read {
        Ok(file) if !file.unsupported.is_empty() => file
            .unsupported
            .iter()
            .map(|(metric, shape)| {
                problem(
                    Severity::Warning,
                    format!("{metric:?}: values are {shape}, a shape goldgate cannot compare"),
                    Some("compare reports this metric as unsupported; bless writes it afresh"),
                )
            })
            .collect(),
        Ok(file) if file.metrics.is_empty() => vec![problem(
            Severity::Warning,
            "golden file has no metrics (`{}`)".into(),
            None,
        )],
        Ok(_) => Vec::new(),
        Err(e @ GoldenError::Inference { .. }) => vec![from_display(
            path,
            Severity::Note,
            &format!("{e} (skipped)"),
        )],
        Err(e) => vec![diagnostic(path, Severity::Error, &e)],
    }
}

/// Turns every problem in a file that `check.ignore` lists into a note naming the reason, and
/// warns about entries that match no file (a fixed upstream file leaves a stale entry behind).
fn apply_ignores(
    report: &mut CheckReport,
    roots: &[&Path],
    config: &Path,
    ignore: &[(String, String)],
) {
    let mut used = vec![false; ignore.len()];
    for p in &mut report.problems {
        let rel = roots.iter().find_map(|r| p.path.strip_prefix(r).ok());
        let Some(rel) = rel.and_then(Path::to_str) else {
            continue;
        };
        let Some(i) = ignore.iter().position(|(glob, _)| glob_match(glob, rel)) else {
            continue;
        };
        used[i] = true;
        let reason = &ignore[i].1;
        let why = if reason.is_empty() {
            String::new()
        } else {
            format!(" ({reason})")
        };
        p.message = format!("ignored {}{why}: {}", p.severity, p.message);
        p.severity = Severity::Note;
        p.hint = None;
    }
    for ((glob, _), used) in ignore.iter().zip(used) {
        if !used {
            report.problems.push(Problem {
                path: config.to_path_buf(),
                at: None,
                severity: Severity::Warning,
                message: format!("check.ignore: `{glob}` matches no problem; remove it?"),
                hint: None,
            });
        }
    }
    report.problems.sort();
}

/// A problem from an error, with its `help` as the hint.
fn diagnostic(path: &Path, severity: Severity, e: &dyn miette::Diagnostic) -> Problem {
    let mut problem = from_display(path, severity, e);
    problem.hint = e.help().map(|h| h.to_string());
    problem
}

/// Splits an error's `path:line:col: message` (or `path: message`) display into a problem.
fn from_display(path: &Path, severity: Severity, e: &dyn fmt::Display) -> Problem {
    let text = e.to_string();
    let prefix = path.display().to_string();
    let rest = text.strip_prefix(&prefix).unwrap_or(&text);
    let (at, message) = match rest.strip_prefix(':').map(split_span) {
        Some((at, message)) => (at, message.trim_start().to_string()),
        None => (None, rest.to_string()),
    };
    Problem {
        path: path.to_path_buf(),
        at,
        severity,
        message,
        hint: None,
    }
}

/// `"3:7: msg"` → `(Some(3:7), "msg")`; `" msg"` → `(None, " msg")`.
fn split_span(rest: &str) -> (Option<Span>, &str) {
    let mut parts = rest.splitn(3, ':');
    let (Some(l), Some(c), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
        return (None, rest);
    };
    match (l.parse(), c.parse()) {
        (Ok(line), Ok(column)) => (Some(Span { line, column }), msg),
        _ => (None, rest),
    }
}

/// The lines `check` prints: one per problem, then a summary.
pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    for p in &report.problems {
        let at = p.at.map(|s| format!(":{s}")).unwrap_or_default();
        out.push_str(&format!(
            "{}{at}: {}: {}\n",
            p.path.display(),
            p.severity,
            p.message
        ));
        if let Some(hint) = &p.hint {
            out.push_str(&format!("  help: {hint}\n"));
        }
    }
    out.push_str(&format!(
        "checked {} case(s) and {} golden file(s): {} error(s), {} warning(s), {} note(s)\n",
        report.cases,
        report.goldens,
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Note),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_locations_off_messages() {
        let p = from_display(
            Path::new("a/b.yaml"),
            Severity::Error,
            &"a/b.yaml:3:7: invalid YAML: x: y",
        );
        assert_eq!(
            (p.at, p.message.as_str()),
            (Some(Span { line: 3, column: 7 }), "invalid YAML: x: y")
        );
        let p = from_display(
            Path::new("a/b.yaml"),
            Severity::Error,
            &"a/b.yaml: empty file",
        );
        assert_eq!((p.at, p.message.as_str()), (None, "empty file"));
    }
}
