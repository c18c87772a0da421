"""A GPU memory workload with a known shape, for checking goldgate's NVML sampler.

It holds ``--hold-gib`` GiB, then ``--spikes`` times allocates ``--spike-gib`` GiB more for
``--spike-ms`` milliseconds, with ``--gap-ms`` between spikes, and prints what PyTorch's
caching allocator saw (``max_memory_reserved``) and the CUDA context's own footprint
(device memory in use right after the context is created, before any tensor, from
``cudaMemGetInfo`` on an otherwise idle GPU), so goldgate's NVML peak can be checked against
``max_memory_reserved + context``.
"""

import argparse
import time

import torch

GIB = 1024**3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--hold-gib", type=float, default=8.0)
    p.add_argument("--spike-gib", type=float, default=20.0)
    p.add_argument("--spike-ms", type=float, default=50.0)
    p.add_argument("--spikes", type=int, default=3)
    p.add_argument("--gap-ms", type=float, default=1000.0)
    a = p.parse_args()

    # `mem_get_info` is itself a CUDA call: it creates the context, so on an otherwise idle GPU
    # what is in use right after it is the context. (An earlier version took this first
    # reading as "before the context" and reported only the first kernel's modules, ~94 MiB,
    # as the context.)
    free0, total = torch.cuda.mem_get_info()
    context = total - free0
    torch.zeros(1, device="cuda")  # the first kernel loads its modules
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info()
    print(f"spike: context_bytes={context} first_kernel_bytes={free0 - free1}", flush=True)

    hold = torch.empty(int(a.hold_gib * GIB), dtype=torch.uint8, device="cuda")
    hold.fill_(1)
    torch.cuda.synchronize()
    time.sleep(a.gap_ms / 1000)
    for i in range(a.spikes):
        t0 = time.perf_counter()
        spike = torch.empty(int(a.spike_gib * GIB), dtype=torch.uint8, device="cuda")
        spike.fill_(2)
        torch.cuda.synchronize()
        remaining = a.spike_ms / 1000 - (time.perf_counter() - t0)
        if remaining > 0:
            time.sleep(remaining)
        held = time.perf_counter() - t0
        del spike
        torch.cuda.empty_cache()  # hand the spike back to the driver so NVML sees it go
        torch.cuda.synchronize()
        print(f"spike: {i + 1} held_ms={held * 1000:.1f}", flush=True)
        time.sleep(a.gap_ms / 1000)
    peak_reserved = torch.cuda.max_memory_reserved()
    print(
        f"spike: max_memory_reserved={peak_reserved} "
        f"expected_nvml_peak={peak_reserved + context} hold={hold.numel()}",
        flush=True,
    )


if __name__ == "__main__":
    main()
