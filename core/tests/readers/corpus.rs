//! The real Megatron corpus loads; argv, goldens and golden round-trips agree with what the
//! files say. The corpus is found by `goldgate_core::fixtures::corpus` (skipped when there is none,
//! failing under `CI=true`). The repository's own cases and goldens load too.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use goldgate_core::case::{self, LauncherKind, Mode, ScalarKind, Span, TestCase, TestType};
use goldgate_core::golden;

use goldgate_core::fixtures::corpus;

fn load(root: &Path, name: &str) -> TestCase {
    case::load_case(root, &root.join(name).join("model_config.yaml")).unwrap()
}

fn argv(case: &TestCase, key: &str) -> Vec<String> {
    case.model_args
        .iter()
        .find(|m| m.key == key)
        .unwrap()
        .argv_strings()
        .unwrap()
}

fn env<'a>(case: &'a TestCase, key: &str) -> &'a str {
    &case.env_vars.iter().find(|(k, _)| k == key).unwrap().1.text
}

#[test]
fn all_333_configs_load_and_the_folders_without_one_are_goldens_or_scripts() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let found = case::discover_all(&root).unwrap();
    assert_eq!(found.cases.len(), 333);
    // Four folders hold golden files only (git keeps no empty folders); a full checkout also
    // has the two that hold a recipe's Python (the filtered copy lacks them). Both are folders
    // "without config", as for Megatron, whose recipes run the latter by their own commands.
    let bare: Vec<_> = found
        .without_config
        .iter()
        .map(|d| d.strip_prefix(&root).unwrap())
        .collect();
    let scripts = corpus::script_folders_in(&root);
    let mut expected: Vec<&Path> = [
        "gpt/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed",
        "nemotron/nemotron3_super_release_g200",
        "t5/t5_weekly_mcore_te_tp2_pp1_vp1",
        "t5/t5_weekly_mcore_te_tp2_pp1_vp1_sequence_parallel",
    ]
    .into_iter()
    .chain(scripts.iter().copied())
    .map(Path::new)
    .collect();
    expected.sort();
    assert_eq!(bare, expected);
    for d in &found.without_config {
        let rel = d.strip_prefix(&root).unwrap().to_str().unwrap();
        assert_eq!(case::holds_scripts(d), scripts.contains(&rel), "{rel}");
    }
    for c in &found.cases {
        let (case, _warnings) = case::load_case_checked(&root, &c.config_path)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(case.name, c.name);
        assert!(!case.model_args.is_empty(), "{}", c.name);
    }
    let names: Vec<_> = found.cases.iter().map(|c| c.name.clone()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

#[test]
fn null_model_args_give_no_words_and_env_text_is_kept() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "common/ckpt_converter");
    assert_eq!(argv(&case, "MODEL_ARGS"), Vec::<String>::new());
    assert_eq!(env(&case, "CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
    assert_eq!(env(&case, "NCCL_ALGO"), "Tree");
    assert_eq!(case.launcher, LauncherKind::FtLauncher);
    assert_eq!(case.test_type, TestType::Regular);
    assert_eq!(case.metrics, ["lm loss", "num-zeros"]);
}

#[test]
fn floats_reach_argv_exactly_as_written() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "multimodal-llava/multimodal_llava_mcore_te_tp1_pp1");
    let expected = [
        "--num-layers",
        "12",
        "--hidden-size",
        "624",
        "--attention-dropout",
        "0.0",
        "--hidden-dropout",
        "0.0",
        "--num-attention-heads",
        "12",
        "--log-params-norm",
        "--log-num-zeros-in-grad",
        "--log-validation-ppl-to-tensorboard",
        "--log-timers-to-tensorboard",
        "--tensorboard-dir",
        "${TENSORBOARD_PATH}",
        "--micro-batch-size",
        "4",
        "--global-batch-size",
        "32",
        "--seq-length",
        "1024",
        "--max-position-embeddings",
        "1024",
        "--train-iters",
        "50",
        "--timing-log-level",
        "0",
        "--lr-decay-iters",
        "320000",
        "--save",
        "${CHECKPOINT_SAVE_PATH}",
        "--load",
        "${CHECKPOINT_LOAD_PATH}",
        "--split",
        "949,50,1",
        "--tokenizer-type",
        "NullTokenizer",
        "--vocab-size",
        "8193",
        "--distributed-backend",
        "nccl",
        "--lr",
        "0.00015",
        "--lr-decay-style",
        "cosine",
        "--min-lr",
        "1.0e-5",
        "--weight-decay",
        "1e-2",
        "--clip-grad",
        "1.0",
        "--lr-warmup-fraction",
        ".01",
        "--log-interval",
        "1",
        "--save-interval",
        "10000",
        "--eval-interval",
        "1000",
        "--eval-iters",
        "10",
        "--transformer-impl",
        "transformer_engine",
        "--tensor-model-parallel-size",
        "1",
        "--pipeline-model-parallel-size",
        "1",
        "--deterministic-mode",
        "--attention-softmax-in-fp32",
        "--ckpt-format",
        "torch",
        "--no-gradient-accumulation-fusion",
        "--bf16",
        "--img-h",
        "336",
        "--img-w",
        "336",
        "--patch-dim",
        "14",
        "--mock-data",
        "--log-memory-to-tensorboard",
    ];
    assert_eq!(argv(&case, "MODEL_ARGS"), expected);
    let lr = case.model_args[0]
        .entries
        .iter()
        .find(|(k, _)| k == "--min-lr")
        .unwrap();
    assert_eq!(lr.1.kind, ScalarKind::Float);
}

#[test]
fn merge_keys_expand_base_args_then_own_args() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "gpt/gpt3_mcore_reruns_resume_check_grads");
    assert_eq!(case.test_type, TestType::CheckpointConsistency);
    assert_eq!(case.mode, Mode::Pretraining);
    let keys: Vec<_> = case.model_args.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "MODEL_ARGS",
            "MODEL_ARGS_2",
            "MODEL_ARGS_3",
            "MODEL_ARGS_4",
            "MODEL_ARGS_5"
        ]
    );
    let expected = [
        "--rotary-base",
        "500",
        "--finetune",
        "--seed",
        "${REPEAT}",
        "--override-opt_param-scheduler",
        "--no-load-optim",
        "--recompute-num-layers",
        "1",
        "--deterministic-mode",
        "--bf16",
        "--train-iters",
        "1",
        "--eval-iters",
        "0",
        "--manual-gc",
        "--use-mcore-models",
        "--distributed-backend",
        "nccl",
        "--sequence-parallel",
        "--untie-embeddings-and-output-weights",
        "--position-embedding-type",
        "rope",
        "--rotary-percent",
        "1.0",
        "--max-position-embeddings",
        "4096",
        "--num-layers",
        "32",
        "--hidden-size",
        "3072",
        "--ffn-hidden-size",
        "8192",
        "--num-attention-heads",
        "32",
        "--num-query-groups",
        "8",
        "--seq-length",
        "512",
        "--kv-channels",
        "128",
        "--group-query-attention",
        "--normalization",
        "RMSNorm",
        "--swiglu",
        "--attention-dropout",
        "0.0",
        "--hidden-dropout",
        "0.0",
        "--no-create-attention-mask-in-dataloader",
        "--transformer-impl",
        "transformer_engine",
        "--disable-bias-linear",
        "--clip-grad",
        "1.0",
        "--overlap-grad-reduce",
        "--overlap-param-gather",
        "--lr",
        "3e-4",
        "--lr-warmup-samples",
        "0",
        "--adam-beta1",
        "0.0",
        "--adam-beta2",
        "0.0",
        "--adam-eps",
        "1e-8",
        "--use-distributed-optimizer",
        "--split",
        "949,50,1",
        "--no-gradient-accumulation-fusion",
        "--save-interval",
        "1",
        "--eval-interval",
        "1000",
        "--ckpt-format",
        "torch_dist",
        "--dist-ckpt-strictness",
        "log_all",
        "--dist-ckpt-optim-fully-reshardable",
        "--save",
        "${CHECKPOINT_SAVE_PATH}",
        "--load",
        "${CHECKPOINT_LOAD_PATH}/model/mcore_gpt/gpt3_4b_pyt/25.03.05_bf16_rerun-enabled_v2",
        "--async-save",
        "--use-persistent-ckpt-worker",
        "--data-cache-path",
        "${DATA_CACHE_PATH}",
        "--data-path",
        "${DATA_PATH}/text/common_pile/v01_filtered_data/my-gpt3_00_text_document",
        "--vocab-file",
        "${DATA_PATH}/text/common_pile/v01_filtered_data/bpe/vocab.json",
        "--merge-file",
        "${DATA_PATH}/text/common_pile/v01_filtered_data/bpe/merges.txt",
        "--tensorboard-dir",
        "${TENSORBOARD_PATH}",
        "--timing-log-level",
        "0",
        "--log-interval",
        "1",
        "--log-params-norm",
        "--log-num-zeros-in-grad",
        "--log-validation-ppl-to-tensorboard",
        "--log-timers-to-tensorboard",
        "--log-memory-to-tensorboard",
        "--rerun-mode",
        "validate_results",
        "--micro-batch-size",
        "2",
        "--global-batch-size",
        "2",
        "--tensor-model-parallel-size",
        "1",
        "--context-parallel-size",
        "1",
        "--pipeline-model-parallel-size",
        "1",
    ];
    assert_eq!(argv(&case, "MODEL_ARGS"), expected);
    let five = argv(&case, "MODEL_ARGS_5");
    assert_eq!(five.len(), 117);
    assert_eq!(five[..107], expected[..107]);
    assert_eq!(
        five[107..],
        [
            "--micro-batch-size",
            "2",
            "--global-batch-size",
            "2",
            "--tensor-model-parallel-size",
            "1",
            "--context-parallel-size",
            "1",
            "--pipeline-model-parallel-size",
            "2"
        ]
    );
    // A merged word points at the base map it came from.
    let words = case.model_args[0].argv().unwrap();
    assert_eq!(
        words[0].span,
        Some(Span {
            line: 33,
            column: 3
        })
    );
    assert_eq!(case.model_args_for_run(2).unwrap().key, "MODEL_ARGS_2");
    assert_eq!(case.model_env_vars.len(), 6);
    assert_eq!(case.model_env_vars[1].0, "MODEL_ARGS_10");
    assert_eq!(env(&case, "CUBLAS_WORKSPACE_CONFIG"), ":4096:8");
}

#[test]
fn a_repeated_key_is_passed_each_time_as_yq_prints_it() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "hybrid/hybrid_dynamic_inference_tp1_pp1_dp8_583m");
    let words = case.model_args[0].argv().unwrap();
    let at: Vec<_> = words
        .iter()
        .enumerate()
        .filter(|(_, w)| w.text == "--init-method-std")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        2,
        "both entries, in file order (argparse keeps the last)"
    );
    assert_eq!(words[at[0] + 1].text, "0.0198");
    assert_eq!(
        words[at[0] + 2].text,
        "--untie-embeddings-and-output-weights"
    );
    assert_eq!(words[at[1] + 1].text, "0.014");
    assert_eq!(words[at[1] + 1].span.map(|s| s.line), Some(31));
    // `--spec` holds a space: one word.
    let spec = words.iter().position(|w| w.text == "--spec").unwrap();
    assert_eq!(
        words[spec + 1].text,
        "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec"
    );
}

#[test]
fn nemo_keys_become_key_value_words() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "gpt-nemo/t5-nemo_220m_mr_mbs4_gbs64_te_tp1_pp1_1N8G");
    assert_eq!(
        argv(&case, "MODEL_ARGS"),
        [
            "trainer.num_nodes=1",
            "trainer.devices=8",
            "trainer.max_steps=50",
            "trainer.val_check_interval=50",
            "trainer.limit_val_batches=50",
            "trainer.strategy.tensor_model_parallel_size=1",
            "trainer.strategy.pipeline_model_parallel_size=1",
            "data.micro_batch_size=4",
            "data.global_batch_size=64",
            "data.seq_length=512",
        ]
    );
}

#[test]
fn bracket_lists_split_and_pipes_stay_whole() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(
        &root,
        "moe/gpt3_moe_mcore_te_tp4_ep2_etp2_pp2_scoped_cudagraph",
    );
    let words = argv(&case, "MODEL_ARGS");
    let find = |flag: &str| words.iter().position(|w| w == flag).unwrap();
    let i = find("--recompute-modules");
    assert_eq!(
        words[i..i + 3],
        ["--recompute-modules", "moe_act", "--cuda-graph-impl"]
    );
    let i = find("--cuda-graph-modules");
    assert_eq!(words[i + 1..i + 4], ["attn", "mlp", "moe_router"]);
    let i = find("--pipeline-model-parallel-layout");
    assert_eq!(words[i + 1], "Et|(tt|)*6mL");
}

#[test]
fn parenthesised_value_is_one_word_and_value_on_next_line_is_read() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(
        &root,
        "mixtral/deepseekv3_proxy_flex_tp1pp4emp16etp1cp1_release_sm",
    );
    let words = argv(&case, "MODEL_ARGS");
    let i = words.iter().position(|w| w == "--moe-layer-freq").unwrap();
    assert_eq!(words[i + 1], "([0]*3+[1]*11)");
    let i = words
        .iter()
        .position(|w| w == "--auto-detect-ckpt-format")
        .unwrap();
    assert_eq!(words[i + 1], "--save");
    assert_eq!(case.test_type, TestType::Release);
}

#[test]
fn allocator_setting_text_is_kept() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let case = load(&root, "gpt/gpt3_mcore_te_tp1_pp4_vp1");
    assert_eq!(
        env(&case, "PYTORCH_CUDA_ALLOC_CONF"),
        "expandable_segments:True"
    );
    let value = &case
        .env_vars
        .iter()
        .find(|(k, _)| k == "NVTE_ALLOW_NONDETERMINISTIC_ALGO")
        .unwrap()
        .1;
    assert_eq!((value.text.as_str(), value.kind), ("0", ScalarKind::Int));
}

#[test]
fn empty_or_null_metrics_fall_back_to_the_default() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    for name in [
        "gpt/gpt_grpo_basic_function",
        "hybrid/hybrid_dynamic_inference_tp1_ep8_nanov3_chunked_prefill",
    ] {
        assert_eq!(
            load(&root, name).metrics,
            ["lm loss", "num-zeros"],
            "{name}"
        );
    }
    let case = load(
        &root,
        "gpt/gpt_grpo_tp1tp2_pp1_dp8_583m_throughputtest_github",
    );
    assert!(case.throughput_test_params.is_some());
    assert_eq!(case.mode, Mode::Rl);
}

fn all_goldens(root: &Path) -> Vec<PathBuf> {
    let found = case::discover_all(root).unwrap();
    let dirs = found
        .cases
        .iter()
        .map(|c| c.dir.clone())
        .chain(found.without_config);
    dirs.flat_map(|d| golden::goldens_in(&d))
        .map(|g| g.path)
        .collect()
}

#[test]
fn every_golden_loads_or_gives_its_clear_kind_and_training_goldens_round_trip() {
    let Some(root) = corpus::test_cases() else {
        return;
    };
    let files = all_goldens(&root);
    assert_eq!(files.len(), 915);
    let (mut training, mut inference, mut empty, mut identical) = (0, 0, Vec::new(), 0);
    for path in &files {
        match golden::read_golden(path) {
            Ok(file) => {
                training += 1;
                let bytes = std::fs::read(path).unwrap();
                if golden::render_golden(&file).as_bytes() == bytes.as_slice() {
                    identical += 1;
                } else {
                    panic!("{} does not round-trip", path.display());
                }
            }
            Err(e) if e.is_unsupported() => inference += 1,
            Err(e @ golden::GoldenError::Empty { .. }) => empty.push(e.to_string()),
            Err(e) => panic!("{e}"),
        }
    }
    // Every training golden is rewritten byte for byte (indented and one-line styles, the
    // legacy list form, trailing newlines); inference goldens are refused with their own kind.
    assert_eq!((training, inference, identical), (848, 65, 848));
    let rel = |s: &str| s.replace(&format!("{}/", root.display()), "");
    let mut empty: Vec<_> = empty.iter().map(|e| rel(e)).collect();
    empty.sort();
    assert_eq!(
        empty,
        [
            "gpt/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed/golden_values_dev_dgxh100_dgxc.json: empty golden file (0 bytes)",
            "moe/gpt3_moe_mcore_te_ep8_resume_torch_dist_dist_optimizer/golden_values_lts_dgx_a100.json: empty golden file (0 bytes)",
        ]
    );
}

#[test]
fn golden_shapes_read_as_the_files_say() {
    let Some(r) = corpus::test_cases() else {
        return;
    };
    let dense = golden::read_golden(
        &r.join("t5/t5_weekly_mcore_te_tp2_pp1_vp1/golden_values_lts_dgx_a100.json"),
    )
    .unwrap();
    let lm = dense.metric("lm loss").unwrap();
    assert!(lm.list_form);
    assert_eq!(
        (
            lm.start_step,
            lm.end_step,
            lm.step_interval,
            lm.values.len()
        ),
        (0, 100, 5, 20)
    );
    assert_eq!(lm.values.get(&5), Some(&golden::Value::Float(9.41109)));
    let legacy =
        golden::read_golden(&r.join("gpt/gpt3_mcore_tp1_pp2_fp16/golden_values_dev_dgx_a100.json"))
            .unwrap();
    assert_eq!(legacy.style, golden::GoldenStyle::Compact);
    assert_eq!(legacy.extra[0].0, "iteration_timing_avg");
    assert_eq!(
        legacy.metric("num-zeros").unwrap().values.get(&30),
        Some(&golden::Value::Float(2524.0))
    );
}

#[test]
fn the_repository_cases_and_goldens_load() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cases = case::discover(&repo.join("test_cases")).unwrap();
    assert!(!cases.is_empty());
    for c in &cases {
        case::load_case(&repo.join("test_cases"), &c.config_path).unwrap_or_else(|e| panic!("{e}"));
    }
    let golden_root = repo.join("golden");
    if golden_root.is_dir() {
        let found = case::discover_all(&golden_root).unwrap();
        let dirs = found
            .cases
            .into_iter()
            .map(|c| c.dir)
            .chain(found.without_config);
        for g in dirs.flat_map(|d| golden::goldens_in(&d)) {
            golden::read_golden(&g.path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// Every windowed metric a bundled case gates (iteration-time, through `goldgate.yaml`'s window)
/// is judged on at least five steps of the case's run. A run that ends inside its window is
/// judged on what is left of it: the demo's 30 steps against the window 30-45 of runs longer
/// than 25 steps left one step.
#[test]
fn every_bundled_case_judges_its_windowed_metrics_on_five_steps_or_more() {
    const MIN_STEPS: u64 = 5;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let config = goldgate_core::config::Config::load(&repo.join("goldgate.yaml")).unwrap();
    let root = repo.join("test_cases");
    let (mut judged, mut short) = (Vec::new(), Vec::new());
    for c in case::discover(&root).unwrap() {
        let case = case::load_case(&root, &c.config_path).unwrap();
        for metric in &case.metrics {
            let Some(window) = config.rules.rule_for(metric).window else {
                continue;
            };
            let iters = case.model_args[0]
                .entries
                .iter()
                .find(|(flag, _)| flag == "--train-iters")
                .map(|(_, v)| v.text.parse::<u64>().unwrap())
                .unwrap_or_else(|| {
                    panic!("{}: {metric} is windowed but no --train-iters", case.name)
                });
            let range = window.steps_for(iters);
            let kept = window.steps_in_run(iters);
            judged.push(format!("{} {metric}", case.name));
            if kept < MIN_STEPS {
                short.push(format!(
                    "{}: {metric} judged on {kept} step(s): window {}-{} of a {iters}-step run",
                    case.name, range.first, range.last
                ));
            }
        }
    }
    assert!(
        judged.contains(&"demo/ckpt-demo iteration-time".to_string()),
        "{judged:?}"
    );
    assert!(short.is_empty(), "{short:#?}");
}

#[test]
fn goldgate_block_is_read() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("good/tiny");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("model_config.yaml"),
        "ENV_VARS:\n  CUBLAS_WORKSPACE_CONFIG: :4096:8\nMODEL_ARGS:\n  --lr: 1e-8\n  \
         --split: 949,50,1\n  --save: ${CHECKPOINT_SAVE_PATH}\nTEST_TYPE: regular\nMETRICS:\n  \
         - lm loss\nGOLDGATE:\n  entry: [fake-trainer, --steps, \"5\"]\n  variants:\n    \
         allocator: [default, gc80]\n",
    )
    .unwrap();
    let case = case::load_case(root.path(), &dir.join("model_config.yaml")).unwrap();
    let entry: Vec<_> = case
        .goldgate
        .entry
        .unwrap()
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert_eq!(entry, ["fake-trainer", "--steps", "5"]);
    assert_eq!(case.goldgate.nproc, None);
    assert_eq!(
        case.goldgate.variants.get("allocator").unwrap(),
        &["default".to_string(), "gc80".to_string()]
    );
    assert_eq!(case.metrics, ["lm loss"]);
    assert_eq!(
        case.model_args[0].argv_strings().unwrap(),
        [
            "--lr",
            "1e-8",
            "--split",
            "949,50,1",
            "--save",
            "${CHECKPOINT_SAVE_PATH}"
        ]
    );
}
