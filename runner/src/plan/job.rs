//! Stage "plan": the `Job` boundary type — what `launch` runs — with its folders and launcher.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::placeholder::FromCaller;
use super::variant::Variant;
use crate::case::{LauncherKind, TestType};

/// How a job's ranks are started. Launcher words are kept apart from the entry so that
/// `launch` can fill in a free port and `repro` can write `${MASTER_PORT}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Launcher {
    /// `torchrun --nproc-per-node N --nnodes 1 --master-port PORT ENTRY...`
    Torchrun { nproc: u32 },
    /// nvidia-resiliency-ext's `ft_launcher`, with torchrun's arguments.
    FtLauncher { nproc: u32 },
    /// The entry program itself, as is.
    Direct,
}

impl Launcher {
    /// The words before the entry; `master_port` is a number or a shell reference.
    pub fn prefix(&self, master_port: &str) -> Vec<String> {
        let (program, nproc) = match self {
            Launcher::Torchrun { nproc } => ("torchrun", nproc),
            Launcher::FtLauncher { nproc } => ("ft_launcher", nproc),
            Launcher::Direct => return Vec::new(),
        };
        // The same words `launch` uses: a single-node rendezvous on 127.0.0.1 and `--tee 3`,
        // so every rank's output reaches the log with a `[defaultN]:` prefix.
        let nproc = nproc.to_string();
        let words = [
            "--nproc-per-node",
            &nproc,
            "--nnodes",
            "1",
            "--master-addr",
            "127.0.0.1",
        ];
        let mut prefix: Vec<String> = std::iter::once(program)
            .chain(words)
            .map(str::to_owned)
            .collect();
        prefix.extend(["--master-port", master_port, "--tee", "3"].map(str::to_owned));
        prefix
    }

    /// The launcher's kind, as a case names it.
    pub fn kind(&self) -> LauncherKind {
        match self {
            Launcher::Torchrun { .. } => LauncherKind::Torchrun,
            Launcher::FtLauncher { .. } => LauncherKind::FtLauncher,
            Launcher::Direct => LauncherKind::Direct,
        }
    }
}

/// One process tree to start: the entry program and its arguments, placeholders resolved.
/// A job's runs are started one after the other, each after its `before` actions; every
/// executor carries them out the same way (`run::apply_action`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunSpec {
    /// Entry words (program first) followed by the MODEL_ARGS argv.
    pub entry_argv: Vec<String>,
    /// What to do to the job's folders before this run starts (e.g. Megatron's ckpt-resume
    /// removes the last checkpoint and points the tracker file back to mid-training).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<RunAction>,
    /// Variables this run sets on top of the job's `env` (e.g. a per-run `TENSORBOARD_PATH`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// A step between two runs of a job, on the job's own folders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum RunAction {
    /// Remove the checkpoint of `iteration` under `dir` (`dir/iter_0000100`), if present.
    RemoveCheckpoint { dir: PathBuf, iteration: u64 },
    /// Write `iteration` into `dir/latest_checkpointed_iteration.txt`, Megatron's tracker file.
    WriteLatestIteration { dir: PathBuf, iteration: u64 },
}

impl RunSpec {
    /// A run of these words with nothing before it and no variables of its own.
    pub fn new(entry_argv: Vec<String>) -> RunSpec {
        RunSpec {
            entry_argv,
            before: Vec::new(),
            env: BTreeMap::new(),
        }
    }

    /// The full argv: launcher words, then the entry.
    pub fn argv(&self, launcher: &Launcher, master_port: &str) -> Vec<String> {
        let mut argv = launcher.prefix(master_port);
        if needs_no_python(launcher, &self.entry_argv) {
            argv.push("--no-python".to_owned());
        }
        argv.extend(self.entry_argv.iter().cloned());
        argv
    }
}

/// torchrun runs a `.py` entry with Python; any other entry is a program and needs `--no-python`.
pub(crate) fn needs_no_python(launcher: &Launcher, entry_argv: &[String]) -> bool {
    *launcher != Launcher::Direct
        && entry_argv
            .first()
            .is_some_and(|first| !first.ends_with(".py"))
}

/// The folders of one job: `OUT/<run-id>/<case>/<variant slug>/<repeat>/...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobDirs {
    /// The job's own folder; `results.json` goes here and the job runs here.
    pub job: PathBuf,
    /// `CHECKPOINT_SAVE_PATH` and `CHECKPOINT_LOAD_PATH` (below the platform's
    /// `checkpoint_root` when it has one).
    pub checkpoints: PathBuf,
    pub tensorboard: PathBuf,
    pub data_cache: PathBuf,
    /// `LOG_DIR`: the job's console log and per-rank logs.
    pub logs: PathBuf,
    /// `OUTPUT_PATH`.
    pub output: PathBuf,
}

impl JobDirs {
    /// The folders of repeat `repeat` of `case` under `variant_slug` in run `run_id`.
    pub fn new(
        out_dir: &Path,
        run_id: &str,
        case: &str,
        variant_slug: &str,
        repeat: u32,
        checkpoint_root: Option<&Path>,
    ) -> JobDirs {
        let tail = Path::new(run_id)
            .join(case)
            .join(variant_slug)
            .join(repeat.to_string());
        let job = out_dir.join(&tail);
        let checkpoints = match checkpoint_root {
            Some(root) => root.join(&tail),
            None => job.join("checkpoints"),
        };
        JobDirs {
            checkpoints,
            tensorboard: job.join("tensorboard"),
            data_cache: job.join("data-cache"),
            logs: job.join("logs"),
            output: job.join("output"),
            job,
        }
    }

    /// Every folder, to create before the job starts.
    pub fn all(&self) -> [&Path; 6] {
        [
            &self.job,
            &self.checkpoints,
            &self.tensorboard,
            &self.data_cache,
            &self.logs,
            &self.output,
        ]
    }

    /// The placeholder variables these folders define (Megatron's names).
    pub fn variables(&self, repeat: u32) -> BTreeMap<String, String> {
        let path = |p: &Path| p.display().to_string();
        let inference = self.output.join("inference_output.json");
        [
            ("CHECKPOINT_SAVE_PATH", path(&self.checkpoints)),
            ("CHECKPOINT_LOAD_PATH", path(&self.checkpoints)),
            ("TENSORBOARD_PATH", path(&self.tensorboard)),
            ("DATA_CACHE_PATH", path(&self.data_cache)),
            ("OUTPUT_PATH", path(&self.output)),
            ("INFERENCE_OUTPUT_PATH", path(&inference)),
            ("LOG_DIR", path(&self.logs)),
            ("REPEAT", repeat.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// One job: a case under one variant, one repeat.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Job {
    /// `<case>@<variant name>#<repeat>`.
    pub id: String,
    pub case: String,
    pub variant: Variant,
    /// 1-based.
    pub repeat: u32,
    pub test_type: TestType,
    pub launcher: Launcher,
    /// Ranks of the job.
    pub nproc: u32,
    /// One run, or two for `ckpt-resume` (the second resumes from the first's checkpoint).
    pub runs: Vec<RunSpec>,
    /// Every variable the plan sets (job folders, platform, ENV_VARS, variant), resolved.
    pub env: BTreeMap<String, String>,
    /// Variables the variant removes from the environment.
    pub env_unset: Vec<String>,
    pub dirs: JobDirs,
    pub metrics: Vec<String>,
    /// The platform it was planned for.
    pub platform: String,
    /// The case's `model_config.yaml`.
    pub config_path: PathBuf,
    /// Placeholders filled from the caller's environment (never printed for secret names).
    #[serde(skip)]
    pub(crate) from_caller: Vec<FromCaller>,
    /// A warm-up job (`goldgate run --warmup N`): it runs so that a cold machine's first job is
    /// not measured, and is recorded but never compared, blessed or calibrated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// Time limit of each run: the case's `GOLDGATE.timeout`, else the platform's (`goldgate run
    /// --timeout` overrides both); `None` = no limit.
    #[serde(
        rename = "timeout_seconds",
        serialize_with = "crate::duration::seconds::serialize"
    )]
    pub timeout: Option<std::time::Duration>,
}

/// Marks the first `n` repeats of every job as warm-up jobs (`goldgate run --warmup N` plans
/// `N` more repeats and measures the ones after them).
pub fn mark_warmup(jobs: &mut [Job], n: u32) {
    for job in jobs {
        job.warmup = job.repeat <= n;
    }
}

/// Whether a variable's value must not be printed (its name holds TOKEN, KEY, SECRET or PASSWORD).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["TOKEN", "KEY", "SECRET", "PASSWORD"]
        .iter()
        .any(|s| upper.contains(s))
}

/// Text shown instead of a secret value.
pub const REDACTED: &str = "<redacted>";

/// The job's environment for printing: secret-named values and any value that holds a secret
/// taken from the caller's environment are replaced by `<redacted>`.
pub fn redacted_env(job: &Job) -> BTreeMap<String, String> {
    job.env
        .iter()
        .map(|(name, value)| {
            let shown = if is_secret_name(name) {
                REDACTED.to_owned()
            } else {
                redact_text(job, value)
            };
            (name.clone(), shown)
        })
        .collect()
}

/// `text` with every secret value taken from the caller's environment replaced by `<redacted>`.
pub fn redact_text(job: &Job, text: &str) -> String {
    job.from_caller
        .iter()
        .filter(|c| is_secret_name(&c.name) && !c.value.is_empty())
        .fold(text.to_owned(), |acc, c| acc.replace(&c.value, REDACTED))
}

impl Job {
    /// A one-run job of `case` planned into `out_dir` (run `r`), for tests of later stages.
    #[cfg(test)]
    pub(crate) fn fixture(out_dir: &Path, case: &str, repeat: u32) -> Job {
        let variant = Variant::default();
        let dirs = JobDirs::new(out_dir, "r", case, &variant.slug(), repeat, None);
        Job {
            id: format!("{case}@{}#{repeat}", variant.name()),
            case: case.to_owned(),
            variant,
            repeat,
            test_type: TestType::Regular,
            launcher: Launcher::Direct,
            nproc: 1,
            runs: vec![RunSpec::new(vec!["fake-trainer".to_owned()])],
            env: BTreeMap::new(),
            env_unset: Vec::new(),
            dirs,
            metrics: vec!["lm loss".to_owned()],
            platform: "local".to_owned(),
            config_path: out_dir.join(case).join("model_config.yaml"),
            from_caller: Vec::new(),
            warmup: false,
            timeout: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_words() {
        let torchrun = Launcher::Torchrun { nproc: 8 }.prefix("${MASTER_PORT}");
        let want = "torchrun --nproc-per-node 8 --nnodes 1 --master-addr 127.0.0.1 --master-port ${MASTER_PORT} --tee 3";
        assert_eq!(torchrun.join(" "), want);
        assert_eq!(
            Launcher::FtLauncher { nproc: 2 }.prefix("29500")[0],
            "ft_launcher"
        );
        assert!(Launcher::Direct.prefix("1").is_empty());
        let run = RunSpec::new(vec!["fake-trainer".into(), "--x".into()]);
        assert_eq!(run.argv(&Launcher::Direct, "1"), ["fake-trainer", "--x"]);
        let torchrun = Launcher::Torchrun { nproc: 1 };
        assert_eq!(
            run.argv(&torchrun, "1")[11..],
            ["--no-python", "fake-trainer", "--x"]
        );
        let script = RunSpec::new(vec!["/m/pretrain_gpt.py".into()]);
        assert_eq!(script.argv(&torchrun, "1")[11..], ["/m/pretrain_gpt.py"]);
    }

    #[test]
    fn dirs_follow_the_documented_layout() {
        let dirs = JobDirs::new(Path::new("/out"), "r1", "gpt/a", "allocator-gc80", 2, None);
        assert_eq!(dirs.job, Path::new("/out/r1/gpt/a/allocator-gc80/2"));
        assert_eq!(
            dirs.checkpoints,
            Path::new("/out/r1/gpt/a/allocator-gc80/2/checkpoints")
        );
        let vars = dirs.variables(2);
        assert_eq!(vars["CHECKPOINT_LOAD_PATH"], vars["CHECKPOINT_SAVE_PATH"]);
        assert_eq!(vars["REPEAT"], "2");
        let fast = JobDirs::new(
            Path::new("/out"),
            "r1",
            "gpt/a",
            "default",
            1,
            Some(Path::new("/nvme")),
        );
        assert_eq!(fast.checkpoints, Path::new("/nvme/r1/gpt/a/default/1"));
    }

    #[test]
    fn secret_names() {
        for name in [
            "HF_TOKEN",
            "WANDB_API_KEY",
            "aws_secret_access_key",
            "DB_PASSWORD",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "DATA_PATH",
            "PYTORCH_CUDA_ALLOC_CONF",
            "CUDA_DEVICE_MAX_CONNECTIONS",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
