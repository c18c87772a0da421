//! A stand-in for GitHub's runner that runs the steps of a composite action (`action.yml`) the
//! way a job runs them, so the tests exercise the action's own steps and scripts rather than a
//! copy: each step's `if:` and `${{ }}` expressions are evaluated (the contexts `inputs`,
//! `steps`, `github`, `vars`, `secrets`, `env`, `runner`; `&&`, `||`, `!`, `==`, `!=`,
//! `success()`, `failure()`, `always()`, `cancelled()`), a `run:` step runs as GitHub runs a
//! `shell: bash` step (`bash --noprofile --norc -eo pipefail FILE`, with `GITHUB_OUTPUT`,
//! `GITHUB_PATH`, `GITHUB_STEP_SUMMARY`, `GITHUB_ACTION_PATH` …), and its outputs and `PATH`
//! additions reach the later steps.
//!
//! The `uses:` steps are GitHub's own actions, which do not run here; each is replaced by what
//! it does to the job's files, and nothing else: `actions/checkout` clones the test's origin
//! repository at the ref into the path, `actions/upload-artifact` copies the path into a
//! folder standing in for the artifact store (`store/<run id>/<name>/`), and
//! `actions/download-artifact` copies a run's artifacts out of it; `actions/cache` restores
//! nothing (a cache miss). Any other action fails the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One job's setting: where things are and the contexts its expressions read.
pub struct Job {
    /// The action's folder (`GITHUB_ACTION_PATH`), holding `action.yml`.
    pub action_dir: PathBuf,
    /// `GITHUB_WORKSPACE`.
    pub workspace: PathBuf,
    /// `RUNNER_TEMP`.
    pub temp: PathBuf,
    /// The artifact store's stand-in: `store/<run id>/<artifact name>/`.
    pub store: PathBuf,
    /// The repository `actions/checkout` clones from.
    pub origin: PathBuf,
    /// `github.run_id` of this job's workflow run.
    pub run_id: u64,
    /// The `github` context (`event_name`, `ref_name`, `event`, `action_ref`, …).
    pub github: Value,
    /// The `vars` and `secrets` contexts.
    pub vars: Value,
    pub secrets: Value,
    /// The job's environment (besides the `GITHUB_*` variables set here).
    pub env: Vec<(String, String)>,
}

/// What a job's steps did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `steps.<id>.outputs`.
    pub outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// Whether a step failed (the job failed).
    pub failed: bool,
    /// Every step's name (its id, its `run:` or its `uses:`) and whether it ran.
    pub steps: Vec<(String, bool)>,
    /// Everything the steps printed, in order, with a `## step` line before each.
    pub log: String,
    /// The step summary the steps wrote.
    pub summary: String,
}

impl Outcome {
    /// A step output; empty when the step did not set it.
    pub fn output(&self, step: &str, name: &str) -> &str {
        self.outputs
            .get(step)
            .and_then(|o| o.get(name))
            .map_or("", String::as_str)
    }
}

/// A value of an expression.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(String),
    Bool(bool),
}

impl Val {
    fn truthy(&self) -> bool {
        match self {
            Val::Str(s) => !s.is_empty(),
            Val::Bool(b) => *b,
        }
    }

    fn text(&self) -> String {
        match self {
            Val::Str(s) => s.clone(),
            Val::Bool(b) => b.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    Not,
    And,
    Or,
    Eq,
    Ne,
    Str(String),
    Name(String),
}

fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '(' => (out.push(Tok::Open), i += 1).1,
            ')' => (out.push(Tok::Close), i += 1).1,
            '!' if next == Some('=') => (out.push(Tok::Ne), i += 2).1,
            '!' => (out.push(Tok::Not), i += 1).1,
            '&' if next == Some('&') => (out.push(Tok::And), i += 2).1,
            '|' if next == Some('|') => (out.push(Tok::Or), i += 2).1,
            '=' if next == Some('=') => (out.push(Tok::Eq), i += 2).1,
            '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            s.push('\'');
                            i += 2;
                        }
                        Some('\'') => break,
                        Some(&ch) => {
                            s.push(ch);
                            i += 1;
                        }
                        None => panic!("unterminated string in `{text}`"),
                    }
                }
                i += 1;
                out.push(Tok::Str(s));
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '-' | '.'))
                {
                    i += 1;
                }
                out.push(Tok::Name(chars[start..i].iter().collect()));
            }
            other => panic!("the step driver cannot read `{other}` in `{text}`"),
        }
    }
    out
}

/// What an expression reads: the contexts, the step outputs so far, whether the job failed.
/// An input or step that `action.yml` does not declare is a mistake in it, and fails the test
/// (`declared`: the step ids; `None` outside the action, where `inputs` are a workflow's).
struct Scope<'a> {
    job: &'a Job,
    inputs: &'a BTreeMap<String, String>,
    outcome: &'a Outcome,
    declared: Option<&'a [String]>,
}

impl Scope<'_> {
    fn lookup(&self, name: &str) -> Val {
        let parts: Vec<&str> = name.split('.').collect();
        let from_json = |root: &Value, rest: &[&str]| {
            let mut v = root;
            for p in rest {
                v = &v[*p];
            }
            match v {
                Value::String(s) => Val::Str(s.clone()),
                Value::Bool(b) => Val::Bool(*b),
                Value::Number(n) => Val::Str(n.to_string()),
                Value::Null => Val::Str(String::new()),
                other => Val::Str(other.to_string()),
            }
        };
        match parts.as_slice() {
            ["true"] => Val::Bool(true),
            ["false"] => Val::Bool(false),
            ["inputs", input] => match (self.inputs.get(*input), self.declared) {
                (Some(v), _) => Val::Str(v.clone()),
                (None, None) => Val::Str(String::new()),
                (None, Some(_)) => panic!("action.yml reads the undeclared input `{input}`"),
            },
            ["steps", id, "outputs", key] => {
                let declared = self.declared.unwrap_or_default();
                assert!(
                    declared.iter().any(|d| d == id),
                    "action.yml reads the undeclared step `{id}`"
                );
                Val::Str(self.outcome.output(id, key).to_owned())
            }
            ["github", rest @ ..] => from_json(&self.job.github, rest),
            ["vars", rest @ ..] => from_json(&self.job.vars, rest),
            ["secrets", rest @ ..] => from_json(&self.job.secrets, rest),
            ["runner", "temp"] => Val::Str(self.job.temp.display().to_string()),
            ["runner", "os"] => Val::Str("Linux".to_owned()),
            ["env", var] => Val::Str(
                self.job
                    .env
                    .iter()
                    .find(|(k, _)| k == var)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            ),
            _ => panic!("the step driver knows no context `{name}`"),
        }
    }

    fn eval(&self, text: &str) -> Val {
        let toks = tokens(text);
        let mut at = 0;
        let v = self.or(&toks, &mut at);
        assert_eq!(at, toks.len(), "unread words in `{text}`");
        v
    }

    fn or(&self, t: &[Tok], at: &mut usize) -> Val {
        let mut v = self.and(t, at);
        while t.get(*at) == Some(&Tok::Or) {
            *at += 1;
            let rhs = self.and(t, at);
            if !v.truthy() {
                v = rhs;
            }
        }
        v
    }

    fn and(&self, t: &[Tok], at: &mut usize) -> Val {
        let mut v = self.unary(t, at);
        while t.get(*at) == Some(&Tok::And) {
            *at += 1;
            let rhs = self.unary(t, at);
            if v.truthy() {
                v = rhs;
            }
        }
        v
    }

    fn unary(&self, t: &[Tok], at: &mut usize) -> Val {
        if t.get(*at) == Some(&Tok::Not) {
            *at += 1;
            return Val::Bool(!self.unary(t, at).truthy());
        }
        let lhs = self.primary(t, at);
        match t.get(*at) {
            Some(Tok::Eq) | Some(Tok::Ne) => {
                let eq = t[*at] == Tok::Eq;
                *at += 1;
                let rhs = self.primary(t, at);
                // GitHub compares strings ignoring case.
                let same = lhs.text().eq_ignore_ascii_case(&rhs.text());
                Val::Bool(same == eq)
            }
            _ => lhs,
        }
    }

    fn primary(&self, t: &[Tok], at: &mut usize) -> Val {
        let tok = t.get(*at).cloned();
        *at += 1;
        match tok {
            Some(Tok::Open) => {
                let v = self.or(t, at);
                assert_eq!(t.get(*at), Some(&Tok::Close), "unclosed ( in {t:?}");
                *at += 1;
                v
            }
            Some(Tok::Str(s)) => Val::Str(s),
            Some(Tok::Name(name)) if t.get(*at) == Some(&Tok::Open) => {
                assert_eq!(
                    t.get(*at + 1),
                    Some(&Tok::Close),
                    "{name}() takes nothing here"
                );
                *at += 2;
                Val::Bool(match name.as_str() {
                    "success" => !self.outcome.failed,
                    "failure" => self.outcome.failed,
                    "always" => true,
                    "cancelled" => false,
                    other => panic!("the step driver knows no function {other}()"),
                })
            }
            Some(Tok::Name(name)) => self.lookup(&name),
            other => panic!("unexpected {other:?} in {t:?}"),
        }
    }

    /// `text` with every `${{ expression }}` replaced by its value.
    fn interpolate(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let end = rest[start..]
                .find("}}")
                .unwrap_or_else(|| panic!("unclosed ${{{{ in `{text}`"));
            out.push_str(&self.eval(&rest[start + 3..start + end]).text());
            rest = &rest[start + end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// A step's `if:` (an expression with or without `${{ }}`; absent: `success()`).
    fn condition(&self, step: &Value) -> bool {
        let Some(cond) = step.get("if").and_then(Value::as_str) else {
            return !self.outcome.failed;
        };
        let cond = cond.trim();
        let inner = cond
            .strip_prefix("${{")
            .and_then(|c| c.strip_suffix("}}"))
            .unwrap_or(cond);
        // As GitHub: a condition without a status function holds only while nothing failed.
        let status = ["success(", "failure(", "always(", "cancelled("]
            .iter()
            .any(|f| inner.contains(f));
        (status || !self.outcome.failed) && self.eval(inner).truthy()
    }
}

/// A YAML file read as JSON values (serde-saphyr, as goldgate reads its own YAML).
pub fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The values an expression in a workflow gives, in this job's contexts (e.g. a workflow
/// step's `with:` for the action, with the workflow's own `inputs`).
pub fn evaluate_with(
    job: &Job,
    with: &Value,
    inputs: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let outcome = Outcome::default();
    let scope = Scope {
        job,
        inputs,
        outcome: &outcome,
        declared: None,
    };
    with.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), scope.interpolate(&scalar(v))))
                .collect()
        })
        .unwrap_or_default()
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl Job {
    /// Runs `action.yml`'s steps with `given` inputs (the others take their defaults).
    pub fn run(&self, given: &[(String, String)]) -> Outcome {
        let action = read_yaml(&self.action_dir.join("action.yml"));
        assert_eq!(action["runs"]["using"], "composite");
        let mut outcome = Outcome::default();
        // The inputs: those given, else their defaults (which may be expressions).
        let mut inputs = BTreeMap::new();
        let declared = action["inputs"]
            .as_object()
            .expect("action.yml declares inputs");
        for (name, _) in given {
            assert!(
                declared.contains_key(name),
                "action.yml has no input `{name}`"
            );
        }
        for (name, decl) in declared {
            let value = match given.iter().find(|(n, _)| n == name) {
                Some((_, v)) => v.clone(),
                None => {
                    let empty = BTreeMap::new();
                    let scope = Scope {
                        job: self,
                        inputs: &empty,
                        outcome: &outcome,
                        declared: None,
                    };
                    scope.interpolate(&scalar(&decl["default"]))
                }
            };
            inputs.insert(name.clone(), value);
        }
        let mut path_additions: Vec<String> = Vec::new();
        let summary = self.temp.join("step-summary.md");
        let all = action["runs"]["steps"]
            .as_array()
            .expect("action.yml has steps");
        let ids: Vec<String> = all
            .iter()
            .filter_map(|s| s["id"].as_str().map(str::to_owned))
            .collect();
        for (n, step) in all.iter().enumerate() {
            let label = step["id"]
                .as_str()
                .or_else(|| step["uses"].as_str())
                .map_or_else(|| format!("step {n}"), str::to_owned);
            let scope = Scope {
                job: self,
                inputs: &inputs,
                outcome: &outcome,
                declared: Some(&ids),
            };
            if !scope.condition(step) {
                outcome.steps.push((label, false));
                continue;
            }
            let env: Vec<(String, String)> = step["env"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), scope.interpolate(&scalar(v))))
                        .collect()
                })
                .unwrap_or_default();
            let with: BTreeMap<String, String> = step["with"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), scope.interpolate(&scalar(v))))
                        .collect()
                })
                .unwrap_or_default();
            let cwd = match step["working-directory"].as_str() {
                Some(d) => self.workspace.join(scope.interpolate(d)),
                None => self.workspace.clone(),
            };
            outcome.log.push_str(&format!("## {label}\n"));
            let result = if let Some(script) = step["run"].as_str() {
                assert_eq!(
                    step["shell"], "bash",
                    "{label}: a run step says shell: bash"
                );
                self.run_step(script, &env, &cwd, &summary, &mut path_additions)
            } else {
                let uses = step["uses"].as_str().expect("a step runs or uses");
                self.uses(uses, &with).map(|log| (log, BTreeMap::new()))
            };
            match result {
                Ok((log, outputs)) => {
                    outcome.log.push_str(&log);
                    if let Some(id) = step["id"].as_str() {
                        outcome.outputs.insert(id.to_owned(), outputs);
                    }
                }
                Err(log) => {
                    outcome.log.push_str(&log);
                    outcome.failed = true;
                }
            }
            outcome.steps.push((label, true));
        }
        outcome.summary = std::fs::read_to_string(&summary).unwrap_or_default();
        outcome
    }

    /// The variables GitHub sets for every step.
    fn github_env(&self) -> Vec<(String, String)> {
        let g = |k: &str| scalar(&self.github[k]);
        vec![
            ("CI".to_owned(), "true".to_owned()),
            ("GITHUB_ACTIONS".to_owned(), "true".to_owned()),
            (
                "GITHUB_ACTION_PATH".to_owned(),
                self.action_dir.display().to_string(),
            ),
            (
                "GITHUB_WORKSPACE".to_owned(),
                self.workspace.display().to_string(),
            ),
            ("RUNNER_TEMP".to_owned(), self.temp.display().to_string()),
            ("RUNNER_OS".to_owned(), "Linux".to_owned()),
            ("GITHUB_RUN_ID".to_owned(), self.run_id.to_string()),
            ("GITHUB_EVENT_NAME".to_owned(), g("event_name")),
            ("GITHUB_REF_NAME".to_owned(), g("ref_name")),
            ("GITHUB_SHA".to_owned(), g("sha")),
            ("GITHUB_REPOSITORY".to_owned(), g("repository")),
            ("GITHUB_SERVER_URL".to_owned(), g("server_url")),
            ("GITHUB_API_URL".to_owned(), g("api_url")),
        ]
    }

    fn run_step(
        &self,
        script: &str,
        env: &[(String, String)],
        cwd: &Path,
        summary: &Path,
        path_additions: &mut Vec<String>,
    ) -> Result<(String, BTreeMap<String, String>), String> {
        let file = self.temp.join("step.sh");
        let output = self.temp.join("step-output");
        let path_file = self.temp.join("step-path");
        let event = self.temp.join("event.json");
        std::fs::write(&file, script).expect("the step's script is written");
        std::fs::write(&output, "").expect("GITHUB_OUTPUT is made");
        std::fs::write(&path_file, "").expect("GITHUB_PATH is made");
        std::fs::write(&event, self.github["event"].to_string()).expect("the event is written");
        let mut path: Vec<String> = path_additions.iter().rev().cloned().collect();
        path.extend(
            self.env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone()),
        );
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .current_dir(cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(self.github_env())
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", summary)
            .env("GITHUB_EVENT_PATH", &event)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("PATH", path.join(":"))
            .output()
            .unwrap_or_else(|e| panic!("bash did not start in {}: {e}", cwd.display()));
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let outputs = std::fs::read_to_string(&output)
            .expect("GITHUB_OUTPUT is read")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        path_additions.extend(
            std::fs::read_to_string(&path_file)
                .expect("GITHUB_PATH is read")
                .lines()
                .map(str::to_owned),
        );
        match out.status.success() {
            true => Ok((log, outputs)),
            false => Err(format!("{log}(exit {:?})\n", out.status.code())),
        }
    }

    /// What a GitHub action does to the job's files (see the module's note).
    fn uses(&self, uses: &str, with: &BTreeMap<String, String>) -> Result<String, String> {
        let name = uses.split('@').next().unwrap_or(uses);
        let get = |k: &str| with.get(k).cloned().unwrap_or_default();
        match name {
            "actions/cache" => Ok(format!("cache {}: not restored (a miss)\n", get("key"))),
            "actions/checkout" => {
                let path = self.workspace.join(get("path"));
                git(
                    &self.workspace,
                    &["clone", "--quiet", "--no-checkout"],
                    &[&self.origin, &path],
                )?;
                git(
                    &path,
                    &["checkout", "--quiet", "--detach", &get("ref")],
                    &[],
                )?;
                Ok(format!(
                    "checked out {} at {}\n",
                    get("ref"),
                    path.display()
                ))
            }
            "actions/upload-artifact" => {
                let to = self.store.join(self.run_id.to_string()).join(get("name"));
                if to.exists() {
                    return Err(format!(
                        "an artifact named {} exists in this run\n",
                        get("name")
                    ));
                }
                copy_dir(Path::new(&get("path")), &to);
                Ok(format!("uploaded {} to {}\n", get("name"), to.display()))
            }
            "actions/download-artifact" => {
                let run = self.store.join(get("run-id"));
                let prefix = get("pattern");
                let prefix = prefix.strip_suffix('*').expect("a pattern NAME-*");
                let into = PathBuf::from(get("path"));
                let mut names = Vec::new();
                for entry in std::fs::read_dir(&run).into_iter().flatten().flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name.starts_with(prefix) {
                        copy_dir(&entry.path(), &into.join(&name));
                        names.push(name);
                    }
                }
                Ok(format!("downloaded {names:?} from run {}\n", get("run-id")))
            }
            other => panic!("the step driver does not stand in for {other}"),
        }
    }
}

fn git(dir: &Path, args: &[&str], paths: &[&Path]) -> Result<(), String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .args(paths)
        .output()
        .map_err(|e| format!("git: {e}\n"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "git {args:?}: {}\n",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// Copies the folder `from` to `to` (made), file by file.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
        }
    }
}
