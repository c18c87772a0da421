"""goldgate's Megatron reference workload: a small GPT trained on mock data.

It drives ``megatron.training.pretrain`` from the ``megatron-core`` wheel (pinned in
``requirements.txt``; the wheel ships ``megatron.core`` and ``megatron.training`` but not
Megatron-LM's ``pretrain_gpt.py``), so a GPU machine needs no Megatron-LM checkout and no
Transformer Engine or Apex. It accepts Megatron's own flags, read from ``sys.argv`` by
Megatron's argument parser, exactly as ``pretrain_gpt.py`` does.

Two adjustments, both outside the measured path:

* ``megatron.training``'s initialisation calls ``compile_helpers()``, which runs ``make`` in
  the package folder. The wheel has no Makefile but already ships the compiled
  ``helpers_cpp`` extension, so the call is replaced by a no-op.
* ``GOLDGATE_PLANT_SAVE_DELAY_S`` (unset by default) sleeps that many seconds inside every
  ``save_checkpoint`` call: a planted checkpoint regression for testing the gate.
* ``GOLDGATE_PLANT_EMPTY_CACHE`` (unset by default) calls ``torch.cuda.empty_cache()`` that
  many times at the start of every ``save_checkpoint`` call: the seed's regression, which the
  probe's counters (``checkpoint-empty-cache-calls``, ``checkpoint-sync-all-streams-calls``)
  see with one job. The training loop's saves go through ``save_checkpoint_and_time``, the
  probe's save window, which calls ``save_checkpoint``: the planted calls fall inside it.

Torch and Megatron are imported inside the functions, not at the top of this file. Megatron's
first save starts a ``multiprocessing`` Manager with the ``spawn`` method (the write-results
queue of ``megatron.core.dist_checkpointing.strategies.filesystem_async``), and a spawned process
runs this file again as ``__mp_main__`` before it serves: with the imports at the top that child
imported torch and all of Megatron: spawning the Manager took 11.3 s from such an entry against
0.08 s from this one, and the first save of a job went from 10.0 s to 5.2-6.1 s on an H200
(docs/archive/h200-injob/c6). Nothing in what the training computes or saves changes; the saves
after the first are unchanged.

Users with a Megatron-LM checkout point goldgate at its ``pretrain_gpt.py`` instead.
"""

from __future__ import annotations  # the annotations name torch, imported inside the functions

import os
import time
from functools import partial


def _plant_save_delay() -> None:
    delay = float(os.environ.get("GOLDGATE_PLANT_SAVE_DELAY_S", "0") or 0)
    if delay <= 0:
        return
    from megatron.training import training as _training

    original = _training.save_checkpoint

    def slow_save_checkpoint(*args, **kwargs):
        time.sleep(delay)
        return original(*args, **kwargs)

    _training.save_checkpoint = slow_save_checkpoint
    print(f"goldgate: planted regression: +{delay} s in every save_checkpoint", flush=True)


def _plant_empty_cache() -> None:
    text = os.environ.get("GOLDGATE_PLANT_EMPTY_CACHE", "").strip()
    if not text:
        return
    calls = int(text)  # a bad value stops the job at start-up, naming the variable below
    if calls <= 0:
        return
    import torch
    from megatron.training import training as _training

    original = _training.save_checkpoint

    def save_checkpoint_emptying_cache(*args, **kwargs):
        for _ in range(calls):
            torch.cuda.empty_cache()
        return original(*args, **kwargs)

    _training.save_checkpoint = save_checkpoint_emptying_cache
    print(f"goldgate: planted regression: {calls} extra torch.cuda.empty_cache() in every save",
          flush=True)


def _is_dataset_built_on_rank() -> bool:
    return True


def datasets_provider(train_val_test_num_samples, vp_stage=None):
    """Mock GPT datasets of the requested sizes (no data files needed)."""
    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder,
    )
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig, MockGPTDataset
    from megatron.training import get_args, get_tokenizer

    args = get_args()
    config = GPTDatasetConfig(
        random_seed=args.seed,
        sequence_length=args.seq_length,
        blend=None,
        blend_per_split=None,
        split="99,1,0",
        path_to_cache=args.data_cache_path,
        tokenizer=get_tokenizer(),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        create_attention_mask=True,
        mid_level_dataset_surplus=0.005,
    )
    train, valid, test = BlendedMegatronDatasetBuilder(
        MockGPTDataset, train_val_test_num_samples, _is_dataset_built_on_rank, config
    ).build()
    return train, valid, test


datasets_provider.is_distributed = True


def loss_func(loss_mask: torch.Tensor, output_tensor: torch.Tensor):
    """Token-averaged cross entropy, reported as ``lm loss`` like pretrain_gpt.py."""
    import torch

    losses = output_tensor.float().view(-1)
    mask = loss_mask.view(-1).float()
    loss = torch.sum(losses * mask)
    num_tokens = mask.sum().clone().detach().to(torch.int)
    report = torch.cat([loss.clone().detach().view(1), num_tokens.view(1)])
    return loss, num_tokens, {"lm loss": report}


def forward_step(data_iterator, model):
    """One micro-batch: move it to the GPU, run the model, hand back the loss function."""
    batch = next(data_iterator)
    tokens = batch["tokens"].cuda(non_blocking=True)
    labels = batch["labels"].cuda(non_blocking=True)
    loss_mask = batch["loss_mask"].cuda(non_blocking=True)
    attention_mask = batch.get("attention_mask")
    if attention_mask is not None:
        attention_mask = attention_mask.cuda(non_blocking=True)
    position_ids = batch["position_ids"].cuda(non_blocking=True)
    output = model(tokens, position_ids, attention_mask, labels=labels)
    return output, partial(loss_func, loss_mask)


def main() -> None:
    import megatron.core.datasets.utils as _dataset_utils

    _dataset_utils.compile_helpers = lambda: None
    from megatron.core.enums import ModelType
    from megatron.training.argument_utils import (
        gpt_config_from_args,
        pretrain_cfg_container_from_args,
    )
    from megatron.training.arguments import parse_and_validate_args
    from megatron.training.training import pretrain

    _plant_save_delay()
    try:
        _plant_empty_cache()
    except ValueError as e:
        raise SystemExit(f"GOLDGATE_PLANT_EMPTY_CACHE must be a number of calls: {e}") from e
    args = parse_and_validate_args()
    model_cfg = gpt_config_from_args(args)
    cfg = pretrain_cfg_container_from_args(args, model_cfg)
    pretrain(cfg, datasets_provider, ModelType.encoder_or_decoder, forward_step)


if __name__ == "__main__":
    main()
