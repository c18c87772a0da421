//! Input: Megatron-style flags → a validated [`Config`]. Known flags are checked strictly (bad value →
//! usage error, exit 2); unknown flags are collected so the caller can warn once and carry on, because
//! real Megatron configs carry dozens of flags a fake has no use for.

use std::fmt;
use std::path::PathBuf;

use crate::curve::{Decay, Schedule};
use crate::format::TimingOption;

/// How checkpoints are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SaveMode {
    /// `save_checkpoint` blocks the step loop until files are fsynced.
    Sync,
    /// A persistent background worker writes; the loop blocks only for the staging copy.
    /// `shm`: staging goes through a file in `/dev/shm`.
    Async { shm: bool },
}

/// A failure planted at a given iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Planted {
    Crash,
    Hang,
    Oom,
    Nan,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Config {
    pub(crate) train_iters: u64,
    pub(crate) log_interval: u64,
    pub(crate) global_batch_size: u64,
    pub(crate) seed: u64,
    pub(crate) schedule: Schedule,
    pub(crate) log_memory_interval: Option<u64>,
    pub(crate) save: Option<PathBuf>,
    pub(crate) load: Option<PathBuf>,
    pub(crate) exit_interval: Option<u64>,
    pub(crate) save_interval: Option<u64>,
    pub(crate) save_mode: SaveMode,
    /// `--async-save` was given but Megatron ignores it without `--use-persistent-ckpt-worker`.
    pub(crate) async_ignored: bool,
    pub(crate) async_strategy: String,
    pub(crate) ckpt_format: String,
    pub(crate) timing: TimingOption,
    pub(crate) empty_unused_memory_level: u8,
    pub(crate) step_ms: u64,
    pub(crate) busy: bool,
    pub(crate) model_mb: u64,
    pub(crate) activation_mb: u64,
    pub(crate) ckpt_mb: u64,
    pub(crate) slow_save_ms: u64,
    /// Extra `empty_cache` calls planted in every save (`GOLDGATE_PLANT_EMPTY_CACHE`).
    pub(crate) plant_empty_cache: u64,
    /// In-job A/B from the environment (`GOLDGATE_INJOB_*`, see `crate::injob`).
    pub(crate) injob: Option<crate::injob::InJob>,
    pub(crate) slow_write_ms: u64,
    pub(crate) planted: Vec<(u64, Planted)>,
    /// `--hold-at-step N --hold-file FILE`: iteration N waits while FILE exists.
    pub(crate) hold: Option<(u64, PathBuf)>,
    /// Loss multiplier minus one for a run that resumed from a checkpoint (a planted resume
    /// that does not restore the training state).
    pub(crate) resume_drift: f64,
    pub(crate) ignore_sigterm: bool,
    /// `--exit-signal-handler` (Megatron's flag): on SIGTERM, save a checkpoint after the
    /// current step and exit.
    pub(crate) exit_signal_handler: bool,
    pub(crate) fork_child: bool,
    /// `--fork-workers N`: forked workers sharing a `--shared-mb` buffer with the trainer.
    pub(crate) fork_workers: u64,
    pub(crate) shared_mb: u64,
    /// Words between this program's executable and its own arguments when it is started again
    /// for `--fork-child`: none for `fake-trainer`, `fake-trainer` for `goldgate fake-trainer`.
    pub(crate) reexec_prefix: Vec<String>,
    pub(crate) old_format: bool,
    /// `--tensorboard-dir`: write TensorBoard event files there.
    pub(crate) tensorboard_dir: Option<PathBuf>,
    /// `--log-memory-to-tensorboard`: the `mem-*-bytes` scalars too.
    pub(crate) log_memory_to_tensorboard: bool,
    /// Unknown flags, in order, for one warning line.
    pub(crate) unknown: Vec<String>,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub(crate) enum Command {
    Train(Box<Config>),
    /// The hidden `--child-sleep` mode used by `--fork-child`.
    ChildSleep,
    Help,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum UsageError {
    Missing {
        flag: String,
    },
    Bad {
        flag: String,
        value: String,
        expected: &'static str,
    },
    Unexpected {
        flag: String,
        value: String,
    },
    /// `flag` was given without `needs`, which it cannot work without.
    Without {
        flag: &'static str,
        needs: &'static str,
    },
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::Missing { flag } => write!(f, "{flag} needs a value"),
            UsageError::Bad {
                flag,
                value,
                expected,
            } => {
                write!(f, "invalid value '{value}' for {flag}: expected {expected}")
            }
            UsageError::Unexpected { flag, value } => {
                write!(
                    f,
                    "unexpected value '{value}' after {flag} (it takes no value)"
                )
            }
            UsageError::Without { flag, needs } => write!(f, "{flag} needs {needs}"),
        }
    }
}

pub(crate) const USAGE: &str = "\
usage: fake-trainer [MEGATRON FLAGS] [FAKE KNOBS]

A stand-in training job: prints Megatron-format log lines, holds host memory in a training-like
pattern and writes real checkpoint files. Unknown flags are warned about and ignored.

Megatron flags:
  --train-iters N            iterations to run (default 30)
  --log-interval N           print an iteration line every N iterations (default 1)
  --global-batch-size N      samples per iteration (default 32)
  --seed N                   seed of the loss curve's noise (default 1234)
  --lr X / --min-lr X        learning-rate peak and floor (cosine decay; defaults 1e-4 / 1e-5)
  --lr-warmup-iters N        linear warm-up (default 0)
  --lr-decay-style cosine|linear|constant
  --log-memory-interval N    memory report every N iterations (default: once, at the first log)
  --save DIR                 checkpoint directory (no saves without it)
  --save-interval N          save every N iterations (a final save happens at the end)
  --load DIR                 resume after the iteration in DIR/latest_checkpointed_iteration.txt
                             (reads that checkpoint back; no tracker file: start from scratch)
  --exit-interval N          stop (after a save, when --save is set) at the first multiple of N
  --async-save               save from a background worker (needs --use-persistent-ckpt-worker,
                             as in Megatron; otherwise saves stay synchronous)
  --use-persistent-ckpt-worker
  --async-strategy nvrx|mcore
  --async-ckpt-use-cpu-shm   stage async saves through a file in /dev/shm
  --ckpt-format X            printed in the saving line (default torch_dist)
  --timing-log-option minmax|max|all
  --tensorboard-dir DIR      write TensorBoard event files there (Megatron's scalars per log
                             interval; memory too with --log-memory-to-tensorboard)
  --empty-unused-memory-level 0|1|2   1 frees cached activation memory after every step (one
                             empty_cache), 2 also after the optimizer step (a second one)

Fake knobs:
  --step-ms N                simulated compute per step, added to the real work (default 60)
  --busy                     spin during the simulated compute instead of sleeping
  --model-mb N               resident model buffer (default 256)
  --activation-mb N          per-step activation buffer (default model-mb / 4)
  --ckpt-mb N                checkpoint size per save (default 64)
  --slow-save-ms N           add N ms of blocking work to every save (a planted regression;
                             GOLDGATE_PLANT_SAVE_DELAY_S=SECONDS in the environment adds more;
                             GOLDGATE_PLANT_EMPTY_CACHE=N plants N empty_cache calls per save)
  --resume-drift X           a run that resumed from a checkpoint logs its loss X (a fraction)
                             higher, as if the checkpoint did not restore the training state
  --slow-write-ms N          add N ms to every checkpoint file write (slow storage; in the
                             background worker under async saves)
  --crash-at-step N          raise a Python-like error at iteration N (exit 1)
  --planted-node N           planted failures only on the node whose SLURM_NODEID is N
  --hang-at-step N           sleep forever at iteration N
  --hold-at-step N           wait at iteration N while the file --hold-file FILE exists (a test
                             holds a job running for as long as it needs, then removes FILE)
  --oom-at-step N            CUDA out-of-memory error at iteration N (exit 1)
  --nan-at-step N            NaN-in-grad error at iteration N (exit 1)
  --ignore-sigterm           ignore SIGTERM
  --exit-signal-handler      on SIGTERM, finish the step, save a checkpoint (with --save) and
                             exit 0, as Megatron's flag of that name does
  --fork-child               start a child process that ignores SIGTERM and sleeps forever
  --fork-workers N           fork N workers (at most 64) that share a --shared-mb buffer with
                             the trainer, like dataloader or compile workers: summed RSS counts
                             the buffer N+1 times, PSS once; they die with the trainer
  --shared-mb N              the buffer the forked workers share (default 64)
  --old-format               print pre-2026 lines (no timestamps)
  --help
Environment: PYTORCH_CUDA_ALLOC_CONF is read and echoed at startup.
";

/// Flags that take no value.
const BARE: &[&str] = &[
    "--async-save",
    "--use-persistent-ckpt-worker",
    "--async-ckpt-use-cpu-shm",
    "--busy",
    "--ignore-sigterm",
    "--exit-signal-handler",
    "--fork-child",
    "--old-format",
    "--log-memory-to-tensorboard",
];

/// Raw flag values before validation (the first of two steps, ripgrep's LowArgs).
#[derive(Default)]
struct Raw {
    values: Vec<(String, String)>,
    bare: Vec<String>,
    unknown: Vec<String>,
}

impl Raw {
    fn get(&self, flag: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.as_str())
    }

    fn has(&self, flag: &str) -> bool {
        self.bare.iter().any(|f| f == flag)
    }
}

const VALUED: &[&str] = &[
    "--train-iters",
    "--log-interval",
    "--global-batch-size",
    "--seed",
    "--lr",
    "--min-lr",
    "--lr-warmup-iters",
    "--lr-decay-style",
    "--log-memory-interval",
    "--save",
    "--load",
    "--tensorboard-dir",
    "--exit-interval",
    "--save-interval",
    "--async-strategy",
    "--ckpt-format",
    "--timing-log-option",
    "--empty-unused-memory-level",
    "--step-ms",
    "--model-mb",
    "--activation-mb",
    "--ckpt-mb",
    "--slow-save-ms",
    "--slow-write-ms",
    "--resume-drift",
    "--crash-at-step",
    "--hang-at-step",
    "--hold-at-step",
    "--hold-file",
    "--oom-at-step",
    "--nan-at-step",
    "--planted-node",
    "--fork-workers",
    "--shared-mb",
];

pub(crate) fn parse(argv: &[String]) -> Result<Command, UsageError> {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    if argv.iter().any(|a| a == "--child-sleep") {
        return Ok(Command::ChildSleep);
    }
    let raw = split(argv)?;
    Ok(Command::Train(Box::new(validate(raw)?)))
}

/// Step one: words → flags and values. A flag's value is the next word unless it starts with `--`;
/// unknown flags swallow every following non-flag word (`--spec a b`).
fn split(argv: &[String]) -> Result<Raw, UsageError> {
    let mut raw = Raw::default();
    let mut i = 0;
    while i < argv.len() {
        let word = &argv[i];
        i += 1;
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (word.clone(), None),
        };
        let next_is_value = argv.get(i).is_some_and(|w| !w.starts_with("--"));
        if BARE.contains(&flag.as_str()) {
            if let Some(value) = inline.or_else(|| next_is_value.then(|| argv[i].clone())) {
                return Err(UsageError::Unexpected { flag, value });
            }
            raw.bare.push(flag);
        } else if VALUED.contains(&flag.as_str()) {
            let value = match inline {
                Some(v) => v,
                None if next_is_value => {
                    i += 1;
                    argv[i - 1].clone()
                }
                None => return Err(UsageError::Missing { flag }),
            };
            raw.values.push((flag, value));
        } else {
            while inline.is_none() && argv.get(i).is_some_and(|w| !w.starts_with("--")) {
                i += 1;
            }
            raw.unknown.push(flag);
        }
    }
    Ok(raw)
}

/// Adds `GOLDGATE_PLANT_SAVE_DELAY_S` (seconds, as `workloads/megatron/train_gpt.py` reads it)
/// to `--slow-save-ms`, so goldgate's power study plants the same regression in the fake job as
/// in the Megatron one, and says so on stdout as the Megatron entry does.
pub(crate) fn with_planted_delay(
    mut cfg: Config,
    env: Option<String>,
) -> Result<Config, UsageError> {
    let Some(text) = env.filter(|t| !t.trim().is_empty()) else {
        return Ok(cfg);
    };
    let bad = || UsageError::Bad {
        flag: "GOLDGATE_PLANT_SAVE_DELAY_S".into(),
        value: text.clone(),
        expected: "seconds, at least 0",
    };
    let seconds: f64 = text.trim().parse().map_err(|_| bad())?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(bad());
    }
    if seconds > 0.0 {
        cfg.slow_save_ms += (seconds * 1000.0).round() as u64;
        crate::emit::out(&format!(
            "goldgate: planted regression: +{seconds} s in every save_checkpoint"
        ));
    }
    Ok(cfg)
}

/// Reads `GOLDGATE_PLANT_EMPTY_CACHE` (as `workloads/megatron/train_gpt.py` does): that many
/// extra `empty_cache` calls in every save (`1` re-adds the seed's call), said on stdout.
pub(crate) fn with_planted_empty_cache(
    mut cfg: Config,
    env: Option<String>,
) -> Result<Config, UsageError> {
    let Some(text) = env.filter(|t| !t.trim().is_empty()) else {
        return Ok(cfg);
    };
    let calls: u64 = text.trim().parse().map_err(|_| UsageError::Bad {
        flag: "GOLDGATE_PLANT_EMPTY_CACHE".into(),
        value: text.clone(),
        expected: "a number of calls, at least 0",
    })?;
    if calls > 0 {
        cfg.plant_empty_cache = calls;
        crate::emit::out(&format!(
            "goldgate: planted regression: {calls} extra torch.cuda.empty_cache() in every save"
        ));
    }
    Ok(cfg)
}

fn int(raw: &Raw, flag: &str, default: u64) -> Result<u64, UsageError> {
    match raw.get(flag) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| UsageError::Bad {
            flag: flag.into(),
            value: v.into(),
            expected: "a non-negative integer",
        }),
    }
}

fn positive(raw: &Raw, flag: &str, default: u64) -> Result<u64, UsageError> {
    let n = int(raw, flag, default)?;
    if n == 0 {
        return Err(UsageError::Bad {
            flag: flag.into(),
            value: "0".into(),
            expected: "at least 1",
        });
    }
    Ok(n)
}

fn float(raw: &Raw, flag: &str, default: f64) -> Result<f64, UsageError> {
    match raw.get(flag) {
        None => Ok(default),
        Some(v) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(UsageError::Bad {
                flag: flag.into(),
                value: v.into(),
                expected: "a finite non-negative number",
            }),
        },
    }
}

/// A buffer size in MB, capped so the byte count cannot overflow (1 TiB is far above any host here;
/// allocation failure below that is reported at run time).
fn megabytes(raw: &Raw, flag: &str, default: u64) -> Result<u64, UsageError> {
    let mb = int(raw, flag, default)?;
    if mb > 1 << 20 {
        return Err(UsageError::Bad {
            flag: flag.into(),
            value: mb.to_string(),
            expected: "at most 1048576 (1 TiB)",
        });
    }
    Ok(mb)
}

fn choice<'a>(
    raw: &'a Raw,
    flag: &str,
    allowed: &[&'a str],
    expected: &'static str,
) -> Result<&'a str, UsageError> {
    match raw.get(flag) {
        None => Ok(allowed[0]),
        Some(v) if allowed.contains(&v) => Ok(v),
        Some(v) => Err(UsageError::Bad {
            flag: flag.into(),
            value: v.into(),
            expected,
        }),
    }
}

/// `--fork-workers`: at most [`MAX_FORK_WORKERS`].
fn fork_workers(raw: &Raw) -> Result<u64, UsageError> {
    let n = int(raw, "--fork-workers", 0)?;
    if n > MAX_FORK_WORKERS {
        return Err(UsageError::Bad {
            flag: "--fork-workers".into(),
            value: n.to_string(),
            expected: "at most 64",
        });
    }
    Ok(n)
}

const MAX_FORK_WORKERS: u64 = 64;

/// Step two: flags → a validated [`Config`].
fn validate(raw: Raw) -> Result<Config, UsageError> {
    let model_mb = megabytes(&raw, "--model-mb", 256)?;
    let train_iters = positive(&raw, "--train-iters", 30)?;
    let lr = float(&raw, "--lr", 1e-4)?;
    let decay = match choice(
        &raw,
        "--lr-decay-style",
        &["cosine", "linear", "constant"],
        "cosine, linear or constant",
    )? {
        "linear" => Decay::Linear,
        "constant" => Decay::Constant,
        _ => Decay::Cosine,
    };
    let schedule = Schedule {
        lr,
        min_lr: float(&raw, "--min-lr", lr / 10.0)?,
        warmup: int(&raw, "--lr-warmup-iters", 0)?,
        decay,
        train_iters,
    };
    let timing = match choice(
        &raw,
        "--timing-log-option",
        &["minmax", "max", "all"],
        "minmax, max or all",
    )? {
        "max" => TimingOption::Max,
        "all" => TimingOption::All,
        _ => TimingOption::MinMax,
    };
    let level = choice(
        &raw,
        "--empty-unused-memory-level",
        &["0", "1", "2"],
        "0, 1 or 2",
    )?;
    let async_wanted = raw.has("--async-save");
    let persistent = raw.has("--use-persistent-ckpt-worker");
    let save_mode = if async_wanted && persistent {
        SaveMode::Async {
            shm: raw.has("--async-ckpt-use-cpu-shm"),
        }
    } else {
        SaveMode::Sync
    };
    let save_interval = match raw.get("--save-interval") {
        None => None,
        Some(_) => Some(positive(&raw, "--save-interval", 1)?),
    };
    let mut planted = Vec::new();
    for (flag, kind) in [
        ("--crash-at-step", Planted::Crash),
        ("--hang-at-step", Planted::Hang),
        ("--oom-at-step", Planted::Oom),
        ("--nan-at-step", Planted::Nan),
    ] {
        if raw.get(flag).is_some() {
            planted.push((positive(&raw, flag, 1)?, kind));
        }
    }
    // `--planted-node N`: the planted failures happen on Slurm's node N only (a multi-node
    // job whose one node fails); elsewhere training runs on until the job is stopped.
    if raw.get("--planted-node").is_some() {
        let node = int(&raw, "--planted-node", 0)?;
        let here = std::env::var("SLURM_NODEID")
            .ok()
            .and_then(|v| v.parse::<u64>().ok());
        if here != Some(node) {
            planted.clear();
        }
    }
    let hold = match (raw.get("--hold-at-step"), raw.get("--hold-file")) {
        (None, None) => None,
        (Some(_), Some(file)) => Some((positive(&raw, "--hold-at-step", 1)?, PathBuf::from(file))),
        (Some(_), None) => {
            return Err(UsageError::Without {
                flag: "--hold-at-step",
                needs: "--hold-file",
            });
        }
        (None, Some(_)) => {
            return Err(UsageError::Without {
                flag: "--hold-file",
                needs: "--hold-at-step",
            });
        }
    };
    Ok(Config {
        train_iters,
        log_interval: positive(&raw, "--log-interval", 1)?,
        global_batch_size: positive(&raw, "--global-batch-size", 32)?,
        seed: int(&raw, "--seed", 1234)?,
        schedule,
        log_memory_interval: match raw.get("--log-memory-interval") {
            None => None,
            Some(_) => Some(positive(&raw, "--log-memory-interval", 1)?),
        },
        save: raw.get("--save").map(PathBuf::from),
        load: raw.get("--load").map(PathBuf::from),
        exit_interval: match raw.get("--exit-interval") {
            None => None,
            Some(_) => Some(positive(&raw, "--exit-interval", 1)?),
        },
        save_interval,
        save_mode,
        async_ignored: async_wanted && !persistent,
        async_strategy: choice(
            &raw,
            "--async-strategy",
            &["nvrx", "mcore"],
            "nvrx or mcore",
        )?
        .to_string(),
        ckpt_format: raw.get("--ckpt-format").unwrap_or("torch_dist").to_string(),
        timing,
        empty_unused_memory_level: if level == "0" {
            0
        } else if level == "1" {
            1
        } else {
            2
        },
        step_ms: int(&raw, "--step-ms", 60)?,
        busy: raw.has("--busy"),
        model_mb,
        activation_mb: megabytes(&raw, "--activation-mb", model_mb / 4)?,
        ckpt_mb: megabytes(&raw, "--ckpt-mb", 64)?,
        slow_save_ms: int(&raw, "--slow-save-ms", 0)?,
        plant_empty_cache: 0,
        injob: None,
        slow_write_ms: int(&raw, "--slow-write-ms", 0)?,
        hold,
        planted,
        resume_drift: float(&raw, "--resume-drift", 0.0)?,
        ignore_sigterm: raw.has("--ignore-sigterm"),
        exit_signal_handler: raw.has("--exit-signal-handler"),
        fork_child: raw.has("--fork-child"),
        fork_workers: fork_workers(&raw)?,
        shared_mb: megabytes(&raw, "--shared-mb", 64)?,
        reexec_prefix: Vec::new(),
        old_format: raw.has("--old-format"),
        tensorboard_dir: raw.get("--tensorboard-dir").map(PathBuf::from),
        log_memory_to_tensorboard: raw.has("--log-memory-to-tensorboard"),
        unknown: raw.unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn config(s: &str) -> Config {
        match parse(&words(s)) {
            Ok(Command::Train(c)) => *c,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn the_planted_empty_cache_is_a_count() {
        let c = config("");
        let planted = with_planted_empty_cache(c.clone(), Some("1".into())).unwrap();
        assert_eq!(planted.plant_empty_cache, 1);
        assert_eq!(
            with_planted_empty_cache(c.clone(), None)
                .unwrap()
                .plant_empty_cache,
            0
        );
        for bad in ["-1", "x", "1.5"] {
            assert!(
                with_planted_empty_cache(c.clone(), Some(bad.into())).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_power_studys_planted_delay_adds_to_slow_saves() {
        let c = config("--slow-save-ms 5");
        let planted = with_planted_delay(c.clone(), Some("0.25".into())).unwrap();
        assert_eq!(planted.slow_save_ms, 255);
        assert_eq!(with_planted_delay(c.clone(), None).unwrap().slow_save_ms, 5);
        assert_eq!(
            with_planted_delay(c.clone(), Some(" ".into()))
                .unwrap()
                .slow_save_ms,
            5
        );
        for bad in ["-1", "x", "inf"] {
            assert!(
                with_planted_delay(c.clone(), Some(bad.into())).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn megatron_flags_parse() {
        let c = config(
            "--train-iters 30 --save /tmp/c --save-interval 10 --async-save --use-persistent-ckpt-worker \
             --async-strategy nvrx --async-ckpt-use-cpu-shm --ckpt-format torch_dist --seed=7 \
             --empty-unused-memory-level 2 --lr 1e-5",
        );
        assert_eq!(c.train_iters, 30);
        assert_eq!(c.save.as_deref(), Some(std::path::Path::new("/tmp/c")));
        assert_eq!(c.save_interval, Some(10));
        assert_eq!(c.save_mode, SaveMode::Async { shm: true });
        assert_eq!(c.async_strategy, "nvrx");
        assert_eq!(c.seed, 7);
        assert_eq!(c.empty_unused_memory_level, 2);
        assert_eq!(c.schedule.lr, 1e-5);
        assert!(c.unknown.is_empty());
    }

    #[test]
    fn async_save_needs_the_persistent_worker_as_in_megatron() {
        let c = config("--async-save --async-ckpt-use-cpu-shm");
        assert_eq!(c.save_mode, SaveMode::Sync);
        assert!(c.async_ignored);
    }

    #[test]
    fn unknown_flags_are_collected_with_their_values() {
        let c = config("--spec a b --bf16 --num-layers 12 --train-iters 5 --foo=bar");
        assert_eq!(c.unknown, ["--spec", "--bf16", "--num-layers", "--foo"]);
        assert_eq!(c.train_iters, 5);
    }

    #[test]
    fn defaults() {
        let c = config("");
        assert_eq!(
            (
                c.train_iters,
                c.log_interval,
                c.model_mb,
                c.activation_mb,
                c.ckpt_mb
            ),
            (30, 1, 256, 64, 64)
        );
        assert_eq!(c.save_mode, SaveMode::Sync);
        assert_eq!(c.schedule.min_lr, 1e-5);
        assert_eq!(c.log_memory_interval, None);
    }

    #[test]
    fn planted_failures() {
        let c = config("--crash-at-step 5 --nan-at-step 3");
        assert_eq!(c.planted, [(5, Planted::Crash), (3, Planted::Nan)]);
    }

    #[test]
    fn bad_input_is_a_usage_error() {
        for (argv, msg) in [
            (
                "--train-iters ten",
                "invalid value 'ten' for --train-iters: expected a non-negative integer",
            ),
            (
                "--train-iters 0",
                "invalid value '0' for --train-iters: expected at least 1",
            ),
            ("--train-iters", "--train-iters needs a value"),
            ("--save --async-save", "--save needs a value"),
            (
                "--async-save yes",
                "unexpected value 'yes' after --async-save (it takes no value)",
            ),
            (
                "--async-strategy fast",
                "invalid value 'fast' for --async-strategy: expected nvrx or mcore",
            ),
            (
                "--empty-unused-memory-level 3",
                "invalid value '3' for --empty-unused-memory-level: expected 0, 1 or 2",
            ),
            (
                "--lr nan",
                "invalid value 'nan' for --lr: expected a finite non-negative number",
            ),
            (
                "--model-mb 99999999",
                "invalid value '99999999' for --model-mb: expected at most 1048576 (1 TiB)",
            ),
            (
                "--crash-at-step -1",
                "invalid value '-1' for --crash-at-step: expected a non-negative integer",
            ),
        ] {
            let err = parse(&words(argv)).expect_err(argv);
            assert_eq!(err.to_string(), msg, "{argv}");
        }
    }

    #[test]
    fn help_and_child_modes() {
        assert_eq!(parse(&words("--train-iters x --help")), Ok(Command::Help));
        assert_eq!(
            parse(&words("--child-sleep --ignore-sigterm")),
            Ok(Command::ChildSleep)
        );
    }
}
