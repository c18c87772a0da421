//! Stage "plan": the `Job` boundary type — what `launch` runs — with its folders and launcher.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::placeholder::FromCaller;
use super::variant::Variant;
use goldgate_core::case::{LauncherKind, Mode, TestType};
use goldgate_core::redact::{REDACTED, is_secret_name};

/// How a job's ranks are started. Launcher words are kept apart from the entry so that
/// `launch` can fill in a free port and `repro` can write `${MASTER_PORT}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Launcher {
    /// `torchrun` with Megatron's distributed arguments; `nproc` ranks per node.
    Torchrun { nproc: u32 },
    /// nvidia-resiliency-ext's `ft_launcher`: torchrun's arguments plus `--max-restarts=3`.
    FtLauncher { nproc: u32 },
    /// The entry program itself, as is.
    Direct,
}

/// Where one node of a job starts: the rendezvous and the folder for per-rank logs. Values
/// are words (a number, or a shell reference such as `${MASTER_PORT}` in `plan`/`repro`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// `--nnodes`: a number, or `${SLURM_NNODES}` in a batch script.
    pub nodes: String,
    pub node_rank: String,
    pub master_addr: String,
    pub master_port: String,
    /// `--log-dir`: torchrun writes every rank's stdout and stderr below it.
    pub log_dir: String,
}

/// The shell reference a multi-node command uses for the node's rank.
pub const NODE_RANK_REF: &str = "${NODE_RANK}";
/// The shell reference a multi-node command uses for the first node's address.
pub const MASTER_ADDR_REF: &str = "${MASTER_ADDR}";

/// The rendezvous host when the caller sets no `MASTER_ADDR` (Megatron's default).
pub const DEFAULT_MASTER_ADDR: &str = "localhost";

impl Launcher {
    /// The words before the entry, as Megatron's `_run_training.sh` writes them:
    /// `--nproc_per_node --nnodes --master_addr --master_port --node_rank --log-dir`,
    /// `--tee "0:3,<last rank>:3" --redirects 3` (rank 0's and the node's last rank's output
    /// reach the console, where Megatron prints its log lines; every rank's goes to
    /// `--log-dir`), and for ft_launcher `--max-restarts=3`. `nproc` overrides the ranks per
    /// node for one run.
    fn prefix(&self, nproc: Option<u32>, site: &Site) -> Vec<String> {
        let (program, own) = match self {
            Launcher::Torchrun { nproc } => ("torchrun", *nproc),
            Launcher::FtLauncher { nproc } => ("ft_launcher", *nproc),
            Launcher::Direct => return Vec::new(),
        };
        let nproc = nproc.unwrap_or(own).max(1);
        let mut words: Vec<String> = vec![
            program.to_owned(),
            "--nproc_per_node".to_owned(),
            nproc.to_string(),
            "--nnodes".to_owned(),
            site.nodes.clone(),
            "--master_addr".to_owned(),
            site.master_addr.clone(),
            "--master_port".to_owned(),
            site.master_port.clone(),
            "--node_rank".to_owned(),
            site.node_rank.clone(),
            "--log-dir".to_owned(),
            site.log_dir.clone(),
            "--tee".to_owned(),
            format!("0:3,{}:3", nproc - 1),
            "--redirects".to_owned(),
            "3".to_owned(),
        ];
        if matches!(self, Launcher::FtLauncher { .. }) {
            words.push("--max-restarts=3".to_owned());
        }
        words
    }

    /// Every word of a run's launcher line before the entry: the launcher's own words (see
    /// `prefix`: Megatron's `torchrun`/`ft_launcher` flags for `site`, `nproc` overriding the
    /// ranks per node), then `--no-python` when the entry is a program rather than a `.py`
    /// script. Empty for [`Launcher::Direct`]. [`RunSpec::argv`] is these words plus the entry.
    pub fn words(&self, nproc: Option<u32>, site: &Site, entry_argv: &[String]) -> Vec<String> {
        let mut words = self.prefix(nproc, site);
        if needs_no_python(self, entry_argv) {
            words.push("--no-python".to_owned());
        }
        words
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
    /// Variables this run sets on top of the job's `env` (`RUN_NUMBER`, the run's
    /// `CHECKPOINT_SAVE_PATH`/`CHECKPOINT_LOAD_PATH`/`TENSORBOARD_PATH`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Ranks per node when this run sets its own (checkpoint-consistency's
    /// `MODEL_ENV_VARS.<key>.GPUS_PER_NODE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nproc: Option<u32>,
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
            nproc: None,
        }
    }

    /// THE launcher line of this run — the one builder every consumer uses (the local
    /// executor through `launch::command_line`, `goldgate plan`'s text and JSON, `repro`'s
    /// words, a batch-script renderer): [`Launcher::words`] for `site` and this run's
    /// `nproc`, then the entry words as they are. For a job, pass `&job.launcher` and
    /// `&job.site(port)` (`port` a number, or a shell reference such as `${MASTER_PORT}`).
    ///
    /// ```text
    /// torchrun --nproc_per_node 8 --nnodes 1 --master_addr localhost --master_port 29500
    ///   --node_rank 0 --log-dir <job>/logs --tee 0:3,7:3 --redirects 3 [--no-python] <entry…>
    /// ```
    pub fn argv(&self, launcher: &Launcher, site: &Site) -> Vec<String> {
        let mut argv = launcher.words(self.nproc, site, &self.entry_argv);
        argv.extend(self.entry_argv.iter().cloned());
        argv
    }
}

/// torchrun runs a `.py` entry with Python; any other entry is a program and needs `--no-python`.
fn needs_no_python(launcher: &Launcher, entry_argv: &[String]) -> bool {
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
    /// `CHECKPOINT_SAVE_PATH` (below the platform's `checkpoint_root` when it has one).
    pub checkpoints: PathBuf,
    /// An empty folder standing for Megatron's `/tmp/checkpoints/`: what first runs "load"
    /// (nothing), so a restarted rank never resumes from the run's own saves.
    pub scratch: PathBuf,
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
        let mut scratch = checkpoints.clone().into_os_string();
        scratch.push("-tmp");
        JobDirs {
            checkpoints,
            scratch: PathBuf::from(scratch),
            tensorboard: job.join("tensorboard"),
            data_cache: job.join("data-cache"),
            logs: job.join("logs"),
            output: job.join("output"),
            job,
        }
    }

    /// Every folder, to create before the job starts.
    pub fn all(&self) -> [&Path; 7] {
        [
            &self.job,
            &self.checkpoints,
            &self.scratch,
            &self.tensorboard,
            &self.data_cache,
            &self.logs,
            &self.output,
        ]
    }

    /// The variables these folders define for every run of the job (Megatron's names); the
    /// checkpoint folders and `RUN_NUMBER` are each run's own (`RunSpec::env`).
    pub fn variables(&self, repeat: u32) -> BTreeMap<String, String> {
        let path = |p: &Path| p.display().to_string();
        let inference = self.output.join("inference_output.json");
        [
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
    pub mode: Mode,
    pub launcher: Launcher,
    /// Ranks per node.
    pub nproc: u32,
    /// Nodes the job takes (the local executor runs one).
    pub nodes: u32,
    /// The runs of one repeat, as Megatron's `run_ci_test.sh` lays them out per test type
    /// (two for ckpt-resume and frozen-resume, one per MODEL_ARGS map for
    /// checkpoint-consistency).
    pub runs: Vec<RunSpec>,
    /// `TRAIN_ITERS` of Megatron's checks (`--exit-interval`), for pretraining cases.
    pub train_iters: Option<u64>,
    /// Megatron's `environment` (`dev`, `lts`) of the golden file, when a recipe runs the case.
    pub environment: Option<String>,
    /// The recipe row the job follows, if any.
    pub recipe: Option<RecipeRef>,
    /// `BEFORE_SCRIPT` and `AFTER_SCRIPT` (first placeholder pass done), run by bash in the job
    /// folder around every run, as Megatron's `_run_training.sh` evals them.
    pub before_script: Option<String>,
    pub after_script: Option<String>,
    /// `ENV_VARS.SKIP_PYTEST` is 1: Megatron judges such a job by its exit code alone.
    pub skip_checks: bool,
    /// `TEST_EVALUATION: xpass`: a failing training run is expected and passes.
    pub expect_failure: bool,
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
    /// `TEST_EVALUATION` as the case writes it (recorded; `expect_failure` is its meaning).
    pub test_evaluation: Option<String>,
    /// SHA-256 of the case file as the plan read it (recorded: `compare` says when it changed).
    pub case_sha256: String,
    /// The rules the run was planned with: their source and hash (recorded).
    pub rules: goldgate_schema::RulesRef,
    /// The variant folder of the job's golden files (`golden::variant_key` under the
    /// configuration's axis defaults); `None` for the default variant.
    pub golden_variant: Option<String>,
    /// Placeholders filled from the caller's environment (never printed for secret names).
    #[serde(skip)]
    pub(crate) from_caller: Vec<FromCaller>,
    /// A warm-up job (`goldgate run --warmup N`): it runs so that a cold machine's first job is
    /// not measured, and is recorded but never compared, blessed or calibrated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// A job of a `goldgate ab` sequence: recorded in its `results.json` and `run.json`, so no
    /// command takes it for an ordinary run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<goldgate_schema::AbMember>,
    /// Time limit of each run: the case's `GOLDGATE.timeout`, else the platform's (`goldgate run
    /// --timeout` overrides both); `None` = no limit.
    #[serde(
        rename = "timeout_seconds",
        serialize_with = "goldgate_core::duration::seconds::serialize"
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

impl Job {
    /// Where the job's launcher starts: one node at `localhost` (rank 0), or for a job of
    /// several nodes the per-node references `${MASTER_ADDR}` and `${NODE_RANK}`.
    pub fn site(&self, master_port: &str) -> Site {
        let (addr, rank) = if self.nodes > 1 {
            (MASTER_ADDR_REF, NODE_RANK_REF)
        } else {
            (DEFAULT_MASTER_ADDR, "0")
        };
        Site {
            nodes: self.nodes.to_string(),
            node_rank: rank.to_owned(),
            master_addr: addr.to_owned(),
            master_port: master_port.to_owned(),
            log_dir: self.dirs.logs.display().to_string(),
        }
    }

    /// Every run's ranks: the largest of its runs' nodes × ranks per node.
    pub fn world_size(&self) -> u32 {
        let per_node = self
            .runs
            .iter()
            .map(|r| r.nproc.unwrap_or(self.nproc))
            .max()
            .unwrap_or(self.nproc);
        per_node.saturating_mul(self.nodes)
    }
}

/// The recipe row a job follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecipeRef {
    /// The recipe file.
    pub file: PathBuf,
    /// Megatron's workload name (`<test_case>_<environment>_<platform>`).
    pub name: String,
    pub scope: Option<String>,
    /// Whether the row is for the platform the job is planned on (its nodes and GPUs apply).
    pub exact: bool,
    /// The row's `time_limit` in seconds (a Slurm batch job's limit when nothing else sets one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u64>,
}

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

/// The one redaction list: (name, value) of every secret the job took from the caller's
/// environment (a secret-named variable with a value), longest value first so a secret that
/// contains another is masked whole.
pub fn secrets(job: &Job) -> Vec<(&str, &str)> {
    let mut list: Vec<(&str, &str)> = job
        .from_caller
        .iter()
        .filter(|c| is_secret_name(&c.name) && !c.value.is_empty())
        .map(|c| (c.name.as_str(), c.value.as_str()))
        .collect();
    list.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    list.dedup();
    list
}

/// The first whole occurrence of `value` in `text` at or after `from`: not inside a longer
/// word, path or number (the bytes around it are not letters, digits, `_`, `-`, `.` or `/`),
/// so a short secret (`tmp`) never mangles `/tmp/x`, while `token=s3cret` and `"s3cret"` are
/// masked.
pub(super) fn find_whole(text: &str, value: &str, from: usize) -> Option<usize> {
    let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/');
    let bytes = text.as_bytes();
    let mut start = from;
    while let Some(i) = text.get(start..)?.find(value) {
        let at = start + i;
        let end = at + value.len();
        let before = at.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(end).copied();
        if !before.is_some_and(word) && !after.is_some_and(word) {
            return Some(at);
        }
        start = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// `text` with every whole occurrence of a secret value taken from the caller's environment
/// replaced by `<redacted>` ([`secrets`], [`find_whole`]).
pub fn redact_text(job: &Job, text: &str) -> String {
    redact_with(&secrets(job), text)
}

/// `text` with the values of `secrets` masked as [`redact_text`] does.
pub fn redact_with(secrets: &[(&str, &str)], text: &str) -> String {
    let mut out = text.to_owned();
    for (_, value) in secrets {
        let mut from = 0;
        while let Some(at) = find_whole(&out, value, from) {
            out.replace_range(at..at + value.len(), REDACTED);
            from = at + REDACTED.len();
        }
    }
    out
}

impl Job {
    /// Notes that the plan took `name`'s `value` from the caller's environment, for tests of
    /// later stages.
    #[cfg(test)]
    pub(crate) fn took_from_caller(&mut self, name: &str, value: &str) {
        self.from_caller.push(FromCaller {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }

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
            mode: Mode::Pretraining,
            launcher: Launcher::Direct,
            nproc: 1,
            nodes: 1,
            runs: vec![RunSpec::new(vec!["fake-trainer".to_owned()])],
            train_iters: None,
            environment: None,
            recipe: None,
            before_script: None,
            after_script: None,
            skip_checks: false,
            expect_failure: false,
            env: BTreeMap::new(),
            env_unset: Vec::new(),
            dirs,
            metrics: vec!["lm loss".to_owned()],
            platform: "local".to_owned(),
            config_path: out_dir.join(case).join("model_config.yaml"),
            test_evaluation: None,
            case_sha256: String::new(),
            rules: goldgate_schema::RulesRef::default(),
            golden_variant: None,
            from_caller: Vec::new(),
            warmup: false,
            ab: None,
            timeout: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(nodes: u32) -> Site {
        Site {
            nodes: nodes.to_string(),
            node_rank: "0".into(),
            master_addr: "localhost".into(),
            master_port: "${MASTER_PORT}".into(),
            log_dir: "/j/logs".into(),
        }
    }

    #[test]
    fn launcher_words_are_megatrons() {
        let torchrun = Launcher::Torchrun { nproc: 8 }.prefix(None, &site(2));
        let want = "torchrun --nproc_per_node 8 --nnodes 2 --master_addr localhost \
                    --master_port ${MASTER_PORT} --node_rank 0 --log-dir /j/logs \
                    --tee 0:3,7:3 --redirects 3";
        assert_eq!(
            torchrun.join(" "),
            want.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        let ft = Launcher::FtLauncher { nproc: 2 }.prefix(Some(1), &site(1));
        assert_eq!(ft[0], "ft_launcher");
        assert_eq!(ft[2], "1", "a run's own ranks per node");
        assert_eq!(ft[14], "0:3,0:3");
        assert_eq!(ft.last().map(String::as_str), Some("--max-restarts=3"));
        assert!(Launcher::Direct.prefix(None, &site(1)).is_empty());
        let run = RunSpec::new(vec!["fake-trainer".into(), "--x".into()]);
        assert_eq!(
            run.argv(&Launcher::Direct, &site(1)),
            ["fake-trainer", "--x"]
        );
        let torchrun = Launcher::Torchrun { nproc: 1 };
        assert_eq!(
            run.argv(&torchrun, &site(1))[17..],
            ["--no-python", "fake-trainer", "--x"]
        );
        let script = RunSpec::new(vec!["/m/pretrain_gpt.py".into()]);
        assert_eq!(
            script.argv(&torchrun, &site(1))[17..],
            ["/m/pretrain_gpt.py"]
        );
    }

    #[test]
    fn dirs_follow_the_documented_layout() {
        let dirs = JobDirs::new(Path::new("/out"), "r1", "gpt/a", "allocator-gc80", 2, None);
        assert_eq!(dirs.job, Path::new("/out/r1/gpt/a/allocator-gc80/2"));
        assert_eq!(
            dirs.checkpoints,
            Path::new("/out/r1/gpt/a/allocator-gc80/2/checkpoints")
        );
        assert_eq!(
            dirs.scratch,
            Path::new("/out/r1/gpt/a/allocator-gc80/2/checkpoints-tmp")
        );
        let vars = dirs.variables(2);
        assert!(!vars.contains_key("CHECKPOINT_SAVE_PATH"), "each run's own");
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
    fn secret_values_are_masked_whole_and_only_secret_names_count() {
        let mut job = Job::fixture(Path::new("/out"), "gpt/a", 1);
        for (name, value) in [
            ("MY_API_TOKEN", "s3cr3t-v4lue"),
            ("SHORT_TOKEN", "tmp"),
            ("TOKENIZER_TYPE", "GPT2BPETokenizer"),
        ] {
            job.from_caller.push(FromCaller {
                name: name.into(),
                value: value.into(),
            });
        }
        assert_eq!(
            redact_text(
                &job,
                "OOM token=s3cr3t-v4lue --save /tmp/ck tmp GPT2BPETokenizer \"s3cr3t-v4lue\" s3cr3t-v4lue2"
            ),
            "OOM token=<redacted> --save /tmp/ck <redacted> GPT2BPETokenizer \"<redacted>\" s3cr3t-v4lue2"
        );
        assert_eq!(find_whole("a/tmp b", "tmp", 0), None);
        assert_eq!(find_whole("tmp/ tmp", "tmp", 0), Some(5));
        let names: Vec<&str> = secrets(&job).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["MY_API_TOKEN", "SHORT_TOKEN"]);
    }

    #[test]
    fn secret_names() {
        for name in [
            "HF_TOKEN",
            "WANDB_API_KEY",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "RO_API_TOKEN",
            "GITHUB_TOKEN",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "DATA_PATH",
            "PYTORCH_CUDA_ALLOC_CONF",
            "CUDA_DEVICE_MAX_CONNECTIONS",
            "TOKENIZER_TYPE",
            "TOKENIZER_MODEL_PATH",
            "NUM_OF_TOKENS_PER_CHUNK_COMBINE_API",
            "KEY",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
