//! Stage "case": loading Megatron `model_config.yaml` files, discovering cases, MODEL_ARGS → argv.
