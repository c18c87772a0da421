"""Does PyTorch apply the allocator's garbage_collection_threshold when it is set while the
process runs (torch.cuda.memory._set_allocator_settings), and when does it act? Four phases on
one GPU, each: empty the cache, fill it with 28 freed 200 MiB blocks, then allocate 8 blocks of
300 MiB (which the cached 200 MiB blocks cannot serve), and read the allocator's counters.
  1 memory fraction 0.05, no threshold      (the baseline: the limit is hit, alloc retries)
  2 memory fraction 0.05, threshold 0.5 set now (gc frees cached blocks before the limit)
  3 fraction 1.0 (as a training job without set_per_process_memory_fraction), threshold 0.5
  4 fraction 1.0, threshold 0.99
Prints one JSON line per phase; the verdict is read from num_device_free / num_alloc_retries."""
import json
import torch

KEYS = ("num_device_alloc", "num_device_free", "num_alloc_retries")
MiB = 1 << 20


def stats():
    s = torch.cuda.memory_stats()
    return {k: s.get(k, 0) for k in KEYS}


def phase(label, fraction, threshold):
    torch.cuda.set_per_process_memory_fraction(fraction)
    out = {"phase": label, "fraction": fraction, "threshold": threshold}
    if threshold is not None:
        try:
            torch.cuda.memory._set_allocator_settings("garbage_collection_threshold:%s" % threshold)
            out["set"] = "ok"
        except Exception as e:  # noqa: BLE001 - what PyTorch says is the result
            out["set"] = "%s: %s" % (type(e).__name__, e)
    torch.cuda.empty_cache()
    before = stats()
    xs = [torch.empty(200 * MiB, dtype=torch.uint8, device="cuda") for _ in range(28)]
    del xs
    ys = []
    try:
        for _ in range(8):
            ys.append(torch.empty(300 * MiB, dtype=torch.uint8, device="cuda"))
        out["oom"] = False
    except torch.cuda.OutOfMemoryError:
        out["oom"] = True
    reserved = torch.cuda.memory_reserved()
    del ys
    after = stats()
    out.update({k: after[k] - before[k] for k in KEYS})
    out["reserved_gib"] = round(reserved / (1 << 30), 2)
    print(json.dumps(out), flush=True)


print(json.dumps({"torch": torch.__version__,
                  "has_set_allocator_settings": hasattr(torch.cuda.memory, "_set_allocator_settings"),
                  "total_gib": round(torch.cuda.get_device_properties(0).total_memory / (1 << 30), 1)}))
phase("1-fraction-no-threshold", 0.05, None)
phase("2-fraction-threshold-0.5", 0.05, 0.5)
phase("3-no-fraction-threshold-0.5", 1.0, 0.5)
phase("4-no-fraction-threshold-0.99", 1.0, 0.99)
