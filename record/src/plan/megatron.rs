//! Stage "plan": what Megatron's `run_ci_test.sh` decides before a case trains — edits to the
//! case (`--exit-interval`, lightweight mode), which folder each run loads from and saves to
//! for each test type, the iteration count the checks use, the NCCL defaults
//! `_run_training.sh` exports, and whether the NeMo branch of the script runs the case.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goldgate_core::case::{Mode, ModelArgs, Scalar, ScalarKind, TestCase, TestType};

/// Variables `_run_training.sh` exports unless the environment already sets them.
pub const NCCL_DEFAULTS: [(&str, &str); 7] = [
    ("NCCL_PROTO", "simple"),
    ("NCCL_ALGO", "Ring"),
    ("NCCL_COLLNET_ENABLE", "0"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("NCCL_TUNER_PLUGIN", ""),
    ("NCCL_BUFFSIZE", "4194304"),
    ("TORCH_NCCL_AVOID_RECORD_STREAMS", "1"),
];

/// Iteration count Megatron's checks assume when a case sets neither flag.
const DEFAULT_TRAIN_ITERS: u64 = 100;

/// Whether `_run_training.sh` takes its NeMo branch: the training script's name holds "nemo".
pub fn is_nemo(training_script: &str) -> bool {
    training_script.to_ascii_lowercase().contains("nemo")
}

/// Lightweight mode: `ENABLE_LIGHTWEIGHT_MODE=true` in the caller's environment or the
/// case's ENV_VARS (compared as text, as the script compares yq's output).
pub(super) fn is_lightweight(case: &TestCase, caller_env: &BTreeMap<String, String>) -> bool {
    caller_env
        .get("ENABLE_LIGHTWEIGHT_MODE")
        .map(String::as_str)
        == Some("true")
        || case
            .env_vars
            .iter()
            .rev()
            .find(|(k, _)| k == "ENABLE_LIGHTWEIGHT_MODE")
            .is_some_and(|(_, v)| v.text == "true")
}

/// The case as `run_ci_test.sh` leaves it for training: MODEL_ARGS maps (run 1's edited) and
/// the ENV_VARS entries it adds.
pub(super) struct CiEdits {
    pub model_args: Vec<ModelArgs>,
    pub env_vars: Vec<(String, Scalar)>,
}

/// `run_ci_test.sh`'s `yq -i` edits: pretraining cases other than release get `--exit-interval`
/// = `--train-iters` (lightweight: 4, with `SKIP_PYTEST=1` and, for resume tests,
/// `--save-interval 2`); NeMo lightweight cases get `trainer.max_steps 2`; lightweight
/// inference cases get `SKIP_PYTEST=1`.
pub(super) fn ci_edits(case: &TestCase, nemo: bool, lightweight: bool) -> CiEdits {
    let mut model_args = case.model_args.clone();
    let mut env_vars = case.env_vars.clone();
    let run1 = model_args.iter_mut().find(|m| m.key == "MODEL_ARGS");
    let not_release = case.test_type != TestType::Release;
    match (case.mode, run1) {
        (Mode::Pretraining, Some(args)) if not_release => {
            if lightweight && nemo {
                set(args, "trainer.max_steps", int(2));
            } else if lightweight {
                env_vars.push(("SKIP_PYTEST".to_owned(), int(1)));
                set(args, "--exit-interval", int(4));
                if matches!(
                    case.test_type,
                    TestType::CkptResume | TestType::FrozenResume
                ) {
                    set(args, "--save-interval", int(2));
                }
            } else if !nemo && let Some(iters) = get(args, "--train-iters").cloned() {
                // Without `--train-iters` Megatron's copy writes `--exit-interval null`, which
                // Megatron's own argument parser rejects; goldgate leaves such a case alone.
                set(args, "--exit-interval", iters);
            }
        }
        (Mode::Inference, _) if not_release && lightweight && !nemo => {
            env_vars.push(("SKIP_PYTEST".to_owned(), int(1)));
        }
        _ => {}
    }
    CiEdits {
        model_args,
        env_vars,
    }
}

fn int(n: u64) -> Scalar {
    Scalar {
        text: n.to_string(),
        kind: ScalarKind::Int,
        span: None,
    }
}

fn get<'a>(args: &'a ModelArgs, flag: &str) -> Option<&'a Scalar> {
    args.entries.iter().find(|(k, _)| k == flag).map(|(_, v)| v)
}

/// yq's `.MODEL_ARGS."flag" = value`: every entry of that flag changes; none → appended
/// (with no source span; `key_spans` must be as long as `entries`).
pub(crate) fn set(args: &mut ModelArgs, flag: &str, value: Scalar) {
    let mut found = false;
    for (k, v) in &mut args.entries {
        if k == flag {
            *v = value.clone();
            found = true;
        }
    }
    if !found {
        args.entries.push((flag.to_owned(), value));
        args.key_spans.push(None);
    }
}

/// `TRAIN_ITERS` of `run_ci_test.sh`: `--exit-interval` of the edited MODEL_ARGS (100 when
/// absent) for pretraining; `None` for NeMo, inference and RL cases (the script sets none).
pub(super) fn train_iters(case: &TestCase, edits: &CiEdits, nemo: bool) -> Option<u64> {
    if case.mode != Mode::Pretraining {
        return None;
    }
    let args = edits.model_args.iter().find(|m| m.key == "MODEL_ARGS")?;
    let key = if nemo {
        "trainer.max_steps"
    } else {
        "--exit-interval"
    };
    Some(
        get(args, key)
            .and_then(|v| v.text.parse().ok())
            .unwrap_or(DEFAULT_TRAIN_ITERS),
    )
}

/// One run of a job as `run_ci_test.sh` lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RunLayout {
    /// `RUN_NUMBER`.
    pub number: u32,
    /// The MODEL_ARGS key it reads (`MODEL_ARGS_<n>` when the file has it, else `MODEL_ARGS`).
    pub key: String,
    pub save: PathBuf,
    pub load: PathBuf,
    pub tensorboard: PathBuf,
    /// Ranks per node when the run sets its own (`MODEL_ENV_VARS.<key>.GPUS_PER_NODE`).
    pub gpus_per_node: Option<u32>,
}

/// Where a job's runs read and write: the job's own checkpoint folder, an empty folder that
/// stands for Megatron's `/tmp/checkpoints/`, the frozen checkpoints (Megatron's
/// `/mnt/artifacts`), and the TensorBoard folder.
pub(super) struct LayoutDirs<'a> {
    pub checkpoints: &'a Path,
    pub scratch: &'a Path,
    pub frozen: &'a Path,
    pub tensorboard: &'a Path,
}

/// The runs of one repeat of `case`, with Megatron's load and save folders per test type:
/// the first run never loads (except frozen-start, release and checkpoint-consistency, which
/// start from the frozen checkpoints); ckpt-resume's second run loads the first's checkpoint;
/// frozen-resume's second run loads the frozen checkpoint and saves to scratch;
/// checkpoint-consistency runs every MODEL_ARGS map, each saving to its own folder.
pub(super) fn run_layouts(case: &TestCase, repeat: u32, dirs: &LayoutDirs<'_>) -> Vec<RunLayout> {
    let key_for = |n: u32| {
        let numbered = format!("MODEL_ARGS_{n}");
        if n > 1 && case.model_args.iter().any(|m| m.key == numbered) {
            numbered
        } else {
            "MODEL_ARGS".to_owned()
        }
    };
    let resume = matches!(
        case.test_type,
        TestType::CkptResume | TestType::FrozenResume
    );
    let tensorboard = |n: u32| match resume {
        true => dirs.tensorboard.join(format!("run_{n}")),
        false => dirs.tensorboard.to_path_buf(),
    };
    let base = |n: u32, load: &Path, save: &Path| RunLayout {
        number: n,
        key: key_for(n),
        save: save.to_path_buf(),
        load: load.to_path_buf(),
        tensorboard: tensorboard(n),
        gpus_per_node: None,
    };
    match case.test_type {
        TestType::Regular => vec![base(1, dirs.scratch, dirs.checkpoints)],
        TestType::FrozenStart | TestType::Release => vec![base(1, dirs.frozen, dirs.checkpoints)],
        TestType::CkptResume => vec![
            base(1, dirs.scratch, dirs.checkpoints),
            base(2, dirs.checkpoints, dirs.checkpoints),
        ],
        TestType::FrozenResume => vec![
            base(1, dirs.scratch, dirs.checkpoints),
            base(2, dirs.frozen, dirs.scratch),
        ],
        TestType::CheckpointConsistency => case
            .model_args
            .iter()
            .map(|m| {
                let n = m
                    .key
                    .strip_prefix("MODEL_ARGS_")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                let save = dirs
                    .checkpoints
                    .join(format!("repeat_{repeat}_key_{}", m.key));
                RunLayout {
                    key: m.key.clone(),
                    gpus_per_node: gpus_of(case, &m.key),
                    ..base(n, dirs.frozen, &save)
                }
            })
            .collect(),
    }
}

/// `MODEL_ENV_VARS.<key>.GPUS_PER_NODE`.
fn gpus_of(case: &TestCase, key: &str) -> Option<u32> {
    case.model_env_vars
        .iter()
        .find(|(k, _)| k == key)?
        .1
        .iter()
        .rev()
        .find(|(k, _)| k == "GPUS_PER_NODE")?
        .1
        .text
        .parse()
        .ok()
}

/// `N_REPEAT`: the case's `ENV_VARS.N_REPEAT` wins over the launcher's (lightweight: 1).
pub(super) fn n_repeat(case: &TestCase, lightweight: bool, launcher_repeat: u32) -> u32 {
    if lightweight {
        return 1;
    }
    case.env_vars
        .iter()
        .rev()
        .find(|(k, _)| k == "N_REPEAT")
        .and_then(|(_, v)| v.text.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(launcher_repeat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::case::case_from_yaml as case;

    fn flags(edits: &CiEdits) -> Vec<String> {
        edits.model_args[0]
            .entries
            .iter()
            .map(|(k, v)| format!("{k}={}", v.text))
            .collect()
    }

    #[test]
    fn exit_interval_follows_train_iters_and_lightweight_mode() {
        let yaml = "TEST_TYPE: ckpt-resume\nMODEL_ARGS:\n  --train-iters: 100\n  --save-interval: 50\nMODEL_ARGS_2:\n  --train-iters: 100\n";
        let (_d, c) = case(yaml);
        let full = ci_edits(&c, false, false);
        assert_eq!(
            flags(&full),
            [
                "--train-iters=100",
                "--save-interval=50",
                "--exit-interval=100"
            ]
        );
        assert_eq!(
            full.model_args[1].entries.len(),
            1,
            "only MODEL_ARGS is edited"
        );
        assert_eq!(train_iters(&c, &full, false), Some(100));
        let light = ci_edits(&c, false, true);
        assert_eq!(
            flags(&light),
            [
                "--train-iters=100",
                "--save-interval=2",
                "--exit-interval=4"
            ]
        );
        assert_eq!(light.env_vars.last().unwrap().0, "SKIP_PYTEST");
        assert_eq!(train_iters(&c, &light, false), Some(4));
        let release = "TEST_TYPE: release\nMODEL_ARGS:\n  --train-iters: 10\n";
        let (_d, c) = case(release);
        assert_eq!(flags(&ci_edits(&c, false, false)), ["--train-iters=10"]);
        assert_eq!(
            train_iters(&c, &ci_edits(&c, false, false), false),
            Some(100)
        );
        let inference = "TEST_TYPE: frozen-start\nMODE: inference\nMODEL_ARGS:\n  --x: 1\n";
        let (_d, c) = case(inference);
        assert_eq!(flags(&ci_edits(&c, false, false)), ["--x=1"]);
        assert_eq!(train_iters(&c, &ci_edits(&c, false, false), false), None);
    }

    #[test]
    fn folders_per_test_type() {
        let dirs = LayoutDirs {
            checkpoints: Path::new("/j/ckpt"),
            scratch: Path::new("/j/tmp"),
            frozen: Path::new("/art"),
            tensorboard: Path::new("/j/tb"),
        };
        let show = |yaml: &str| -> Vec<String> {
            let (_d, c) = case(yaml);
            run_layouts(&c, 1, &dirs)
                .iter()
                .map(|r| {
                    format!(
                        "{}:{} load {} save {} tb {}",
                        r.number,
                        r.key,
                        r.load.display(),
                        r.save.display(),
                        r.tensorboard.display()
                    )
                })
                .collect()
        };
        assert_eq!(
            show("TEST_TYPE: ckpt-resume\nMODEL_ARGS: {}\n"),
            [
                "1:MODEL_ARGS load /j/tmp save /j/ckpt tb /j/tb/run_1",
                "2:MODEL_ARGS load /j/ckpt save /j/ckpt tb /j/tb/run_2"
            ]
        );
        assert_eq!(
            show("TEST_TYPE: frozen-resume\nMODEL_ARGS: {}\nMODEL_ARGS_2: {}\n"),
            [
                "1:MODEL_ARGS load /j/tmp save /j/ckpt tb /j/tb/run_1",
                "2:MODEL_ARGS_2 load /art save /j/tmp tb /j/tb/run_2"
            ]
        );
        assert_eq!(
            show("TEST_TYPE: frozen-start\nMODEL_ARGS: {}\n"),
            ["1:MODEL_ARGS load /art save /j/ckpt tb /j/tb"]
        );
        let consistency = "TEST_TYPE: checkpoint-consistency\nMODEL_ENV_VARS:\n  MODEL_ARGS_2: {GPUS_PER_NODE: 2}\nMODEL_ARGS: {}\nMODEL_ARGS_2: {}\n";
        assert_eq!(
            show(consistency),
            [
                "1:MODEL_ARGS load /art save /j/ckpt/repeat_1_key_MODEL_ARGS tb /j/tb",
                "2:MODEL_ARGS_2 load /art save /j/ckpt/repeat_1_key_MODEL_ARGS_2 tb /j/tb"
            ]
        );
        let (_d, c) = case(consistency);
        assert_eq!(run_layouts(&c, 1, &dirs)[1].gpus_per_node, Some(2));
    }

    #[test]
    fn n_repeat_and_nemo() {
        let (_d, c) = case("TEST_TYPE: regular\nENV_VARS:\n  N_REPEAT: 3\nMODEL_ARGS: {}\n");
        assert_eq!(n_repeat(&c, false, 5), 3);
        assert_eq!(n_repeat(&c, true, 5), 1);
        assert!(is_nemo("nemo llm pretrain -y --factory llama3_8b"));
        assert!(!is_nemo("pretrain_gpt.py"));
    }
}
