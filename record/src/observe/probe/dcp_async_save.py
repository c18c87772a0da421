"""A checkpointing workload on a real PyTorch, for the probe's test (``torch_tests.rs``) and its
device check (``docs/archive/probe-dcp-process/check.sh``): not part of what goldgate installs.

On CPU (gloo, world size 1) it makes three saves of ``torch.distributed.checkpoint`` into
``<root>/ckpt/iter_<N>``: ``async_save`` at 3 and 6, with ``async_checkpointer_type`` from
``MODE`` (``THREAD``: a writer thread; ``PROCESS``: the persistent background process DCP
spawns at the first save), then a blocking ``save`` at 9. While each async save is in flight
the training process writes a file of its own (``other-<N>.bin``, 300,000 bytes): not a save's.
Each async save is waited for before the next save starts.

usage: python3 dcp_async_save.py ROOT
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType


def state(iteration):
    return {"weight": torch.full((250_000,), float(iteration)),
            "bias": torch.arange(10_000, dtype=torch.float64)}


def main(root):
    mode = getattr(AsyncCheckpointerType, os.environ.get("MODE", "PROCESS"))
    # The background process sets up its own group from MASTER_ADDR and a free port.
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    store = dist.FileStore(os.path.join(root, "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    folder = lambda n: os.path.join(root, "ckpt", "iter_%07d" % n)  # noqa: E731
    for n in (3, 6):
        future = dcp.async_save(state(n), checkpoint_id=folder(n), async_checkpointer_type=mode)
        with open(os.path.join(root, "other-%d.bin" % n), "wb") as f:
            f.write(b"y" * 300_000)
        future.result()
    dcp.save(state(9), checkpoint_id=folder(9))
    dist.destroy_process_group()


if __name__ == "__main__":  # a spawned process imports this file again as __mp_main__
    main(sys.argv[1])
