"""goldgate's in-process allocator probe (written into each job folder by `goldgate run`).

Python imports ``sitecustomize`` at start-up from the first folder on ``sys.path`` that has
one; goldgate puts this file's folder first on ``PYTHONPATH`` for every rank. The probe:

* chains to the ``sitecustomize`` that would otherwise have run, so nothing is lost;
* does nothing until the workload itself imports ``torch`` (an import hook, so processes
  that never touch torch pay nothing and torch is never imported on the workload's behalf);
* never changes what the workload computes: wrappers call the original and re-raise;
* records, per process that initialised CUDA, to ``$GOLDGATE_PROBE_DIR/probe-rank<R>-pid<P>.json``:
  - every ``torch.cuda.empty_cache()`` call (count, total and longest wall time), and how many
    of them fell inside a checkpoint save (Megatron's ``save_checkpoint``, ``torch.save``,
    ``torch.distributed.checkpoint.save`` / ``async_save``);
  - checkpoint save windows (function, start, wall time, iteration when known) and, for
    Megatron's and torch.distributed.checkpoint's saves, what happened inside each one
    (``counters``): ``empty_cache`` calls and their time, the allocator's
    ``num_alloc_retries``, ``num_device_alloc``, ``num_device_free`` and
    ``num_sync_all_streams``, and ``wchar`` / ``write_bytes`` of the saving thread's own
    ``/proc`` io counters (another thread's writes in the meantime, an earlier save's
    background writer or the probe's poller, are not this save's), plus what the save's
    async parts wrote (below);
  - where each Megatron save's time went (``counters`` too): the process's CPU time, minor and
    major page faults and voluntary/involuntary context switches (``getrusage``), the calls and
    time of ``os.fsync``/``os.fdatasync``, and the calls, wall and CPU time of
    ``megatron.core.dist_checkpointing.save`` inside the window;
  - calls of ``torch.multiprocessing.reductions.rebuild_cuda_tensor`` (a CUDA tensor received
    from another process: an async checkpoint worker's handoff);
  - ``/proc/self/io`` at every write (bytes this process, and the children it reaped, wrote);
  - ``torch.cuda.memory_stats()`` at an interval and at exit: peaks, alloc retries, OOMs,
    device allocs/frees, segments, inactive split bytes; the allocator settings in force;
  - on an out-of-memory error, with ``GOLDGATE_PROBE_HISTORY=1``, a memory snapshot pickle
    that PyTorch's memory visualiser (pytorch.org/memory_viz) opens;
  - where the process's start-up went (``started_unix``: when Python loaded this file, on the
    epoch clock; ``startup``: seconds from then until the workload had imported ``torch`` and
    ``megatron.training.training``, and until Megatron's ``pretrain`` was entered), so a job's
    start can be laid beside goldgate's own clock and the log's timestamps.
In-job A/B (``goldgate ab --within-job``): ``GOLDGATE_INJOB_SCHEDULE`` holds one letter per
outer save window in order (``-`` outside the design, ``a`` or ``b``), ``GOLDGATE_INJOB_A`` and
``GOLDGATE_INJOB_B`` each arm's switches (``save-delay=0.04,empty-cache=remove``). Before a
window's clock starts the probe puts that save's arm in force; it stays until the next save, so
one unit is a save plus the steps after it. Each window records the arm it ran under
(``arm``) and, if a switch could not be applied, why (``switch_error``). The switches:

* ``save-delay=S``: sleeps S seconds inside the window, at the start of Megatron's inner
  ``save_checkpoint`` (after the training loop's interval timer stopped), or at the window's
  start where there is no inner call (a planted regression);
* ``empty-cache=remove``: skips the ``torch.cuda.empty_cache()`` calls that
  ``save_checkpoint_and_time`` makes outside ``save_checkpoint`` (Megatron-LM PR #5678's change);
  ``empty-cache=add``: one more call, where ``save-delay`` sleeps;
* ``gc-threshold=T``: ``torch.cuda.memory._set_allocator_settings("garbage_collection_threshold:T")``
  (the allocator reads it at every allocation; both arms name a value, as it cannot be unset).

A save's async parts are the work it hands to another thread or process: the ``async_fn`` and
``finalize_fns`` of a request scheduled on Megatron's or nvidia-resiliency-ext's
``AsyncCallsQueue`` inside the save, jobs submitted to a ``ThreadPoolExecutor`` inside it
(``torch.distributed.checkpoint.async_save``'s writer), the request DCP's process-based async
executor sends its persistent background process, and threads of the checkpoint libraries
started inside it (``FileSystemWriter``'s). Each runs wrapped (``_ForSave``, picklable, so a
spawned worker receives it by name: this module is that worker's sitecustomize too; DCP's
request carries its save's tag instead) and counts what it writes where it runs: in the saving
process its thread's io counters, in another process (a forked writer, the persistent worker)
that process's (its threads and the writers it reaped). The count is taken when the part
completes and credited to its save (``parts`` in the rank's file, or a
``probe-part-rank<R>-pid<P>-w<W>-<N>.json`` file from another process), whenever that is; a part
that runs on a thread inside a later save's window is left out of that window.

Files are written atomically (temp file + rename) at every interval, after every save and at
exit, so a rank that dies still leaves a valid, possibly partial, file.
"""

import atexit
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import time

try:
    import resource
except ImportError:  # not on Linux: no page-fault or context-switch counts
    resource = None

_DIR = os.environ.get("GOLDGATE_PROBE_DIR", "")
_HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_VERSION = 1


def _chain_next_sitecustomize():
    """Runs the sitecustomize that this one shadows, if there is one."""
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _HERE:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_goldgate_chained_sitecustomize", candidate)
            if spec is None or spec.loader is None:
                return
            module = importlib.util.module_from_spec(spec)
            sys.modules["_goldgate_chained_sitecustomize"] = module
            spec.loader.exec_module(module)
            return


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.time()
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0") or 0)
        self.empty_cache = {"calls": 0, "seconds": 0.0, "max_seconds": 0.0,
                            "calls_in_checkpoint": 0, "seconds_in_checkpoint": 0.0}
        self.saves = []
        self.save_depth = 0
        self.save_start = None
        self.rebuild_cuda_tensor_calls = 0
        # Held while the probe writes its file (one write at a time) and while a save window
        # reads its thread's io counters, so that a write counts wholly inside or outside it.
        self.io_lock = threading.Lock()
        self.samples = []
        self.last = None
        self.oom_snapshot = None
        self.history = os.environ.get("GOLDGATE_PROBE_HISTORY") == "1"
        self.history_on = False
        self.last_write = 0.0
        self.interval = float(os.environ.get("GOLDGATE_PROBE_INTERVAL_S", "5") or 5)
        self.overhead_seconds = 0.0
        self.poller_cpu_seconds = 0.0
        self.finalized = False
        # Inside save windows: os.fsync/fdatasync and dist_checkpointing.save (calls, seconds).
        self.fsync = {"calls": 0, "seconds": 0.0}
        self.dist_save = {"calls": 0, "seconds": 0.0, "cpu_seconds": 0.0, "depth": 0}
        # Depth of Megatron's inner save_checkpoint inside save_checkpoint_and_time.
        self.inner_save_depth = 0
        self.injob = _injob_from_env()
        self.outer_index = 0  # outer save windows so far (the schedule's position)
        self.arm = None  # the arm in force
        self.skip_empty_cache = False
        self.pending = None  # the arm's save-delay / added empty_cache, done once per save
        self.window_tag = None  # the open outer counted window: what its async parts carry
        self.parts = {}  # (pid, window index) -> bytes the save's parts in this process wrote
        self.process_parts = 0  # parts running in this process that count the whole process
        self.own_total = 0  # bytes the probe wrote to its files from any thread of this process
        self.part_files = 0
        self.startup = {}  # start-up marks: seconds after ``started``


def _mark(name):
    """Records the first time a start-up mark is reached (seconds after the process started)."""
    _S.startup.setdefault(name, round(time.time() - _S.started, 3))


def _parse_switches(text):
    """``save-delay=0.04,empty-cache=remove`` as a dict; a bad entry raises ValueError."""
    out = {}
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError("switch `%s` is not NAME=VALUE" % item)
        if key == "save-delay":
            out[key] = float(value)
        elif key == "empty-cache":
            if value not in ("remove", "add"):
                raise ValueError("empty-cache takes remove or add, not `%s`" % value)
            out[key] = value
        elif key == "gc-threshold":
            t = float(value)
            if not 0.0 < t < 1.0:
                raise ValueError("gc-threshold takes a share between 0 and 1, not `%s`" % value)
            out[key] = t
        else:
            raise ValueError("unknown switch `%s`" % key)
    return out


def _injob_from_env():
    schedule = os.environ.get("GOLDGATE_INJOB_SCHEDULE", "")
    if not schedule:
        return None
    arms = {}
    for arm in ("a", "b"):
        try:
            arms[arm] = _parse_switches(os.environ.get("GOLDGATE_INJOB_" + arm.upper(), ""))
        except ValueError as e:
            arms[arm] = {"error": "GOLDGATE_INJOB_%s: %s" % (arm.upper(), e)}
    return {"schedule": schedule, "arms": arms}


_S = _State()


def _now():
    return time.perf_counter()


def _memory_stats(torch):
    if not torch.cuda.is_initialized():
        return None
    s = torch.cuda.memory_stats()
    keys = {
        "allocated_bytes.all.current": "allocated_bytes",
        "allocated_bytes.all.peak": "peak_allocated_bytes",
        "reserved_bytes.all.current": "reserved_bytes",
        "reserved_bytes.all.peak": "peak_reserved_bytes",
        "inactive_split_bytes.all.current": "inactive_split_bytes",
        "inactive_split_bytes.all.peak": "peak_inactive_split_bytes",
        "segment.all.current": "segments",
        "segment.all.peak": "peak_segments",
        "num_alloc_retries": "num_alloc_retries",
        "num_ooms": "num_ooms",
        "num_device_alloc": "num_device_alloc",
        "num_device_free": "num_device_free",
        "num_sync_all_streams": "num_sync_all_streams",
    }
    out = {v: s.get(k) for k, v in keys.items()}
    out["t"] = round(time.time() - _S.started, 3)
    return out


def _ours(fn):
    """Whether ``fn`` is the probe's own wrapper (installed already). ``__wrapped__`` cannot tell:
    torch's own decorators set it (``torch.distributed.checkpoint.save`` and ``async_save``)."""
    return getattr(fn, "_goldgate_probe", False) is True


def _own(wrapper, original, like=False):
    """Marks ``wrapper`` as the probe's wrapper of ``original``; ``like``: it also takes the
    original's name, module and docstring (a pickle that names the function still finds it)."""
    if like:
        functools.update_wrapper(wrapper, original)
    wrapper.__wrapped__ = original
    wrapper._goldgate_probe = True
    return wrapper


# Bytes written from this thread that are not the open window's own: the probe's own files
# and the async parts of saves that ran here (credited to their own save). A window subtracts
# what these grew by while it was open.
_OWN = threading.local()
# The save the running async part belongs to (threads it starts inherit it).
_TAG = threading.local()


def _thread_io():
    """The calling thread's own io counters."""
    return _proc_io("/proc/self/task/%d/io" % threading.get_native_id())


def _proc_io(path="/proc/self/io"):
    """``wchar`` and ``write_bytes`` of a ``/proc`` io file (None where unreadable)."""
    try:
        with open(path) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return {"wchar": int(fields["wchar"]), "write_bytes": int(fields["write_bytes"])}
    except (OSError, KeyError, ValueError):
        return None


# The allocator counters a save window records, as memory_stats() names them.
_SAVE_STATS = ("num_alloc_retries", "num_device_alloc", "num_device_free", "num_sync_all_streams")


_RUSAGE = (("ru_minflt", "minor_faults"), ("ru_majflt", "major_faults"),
           ("ru_nvcsw", "voluntary_switches"), ("ru_nivcsw", "involuntary_switches"))


def _counters_now(torch):
    """What a save window subtracts: empty_cache so far, allocator counters, /proc/self/io,
    the process's CPU time and rusage counts, fsync and dist_checkpointing.save so far."""
    with _S.lock:
        counters = {"empty_cache_calls": _S.empty_cache["calls"],
                    "empty_cache_seconds": _S.empty_cache["seconds"],
                    "fsync_calls": _S.fsync["calls"],
                    "fsync_seconds": _S.fsync["seconds"],
                    "dist_save_calls": _S.dist_save["calls"],
                    "dist_save_seconds": _S.dist_save["seconds"],
                    "dist_save_cpu_seconds": _S.dist_save["cpu_seconds"]}
    counters["cpu_seconds"] = time.process_time()
    usage = resource.getrusage(resource.RUSAGE_SELF) if resource is not None else None
    for field, key in _RUSAGE:
        counters[key] = getattr(usage, field) if usage is not None else None
    try:
        stats = torch.cuda.memory_stats() if torch.cuda.is_initialized() else {}
    except Exception:
        stats = {}
    for key in _SAVE_STATS:
        counters[key] = stats.get(key)
    with _S.io_lock:
        counters["own_written"] = getattr(_OWN, "written", 0)
        counters["own_write_bytes"] = getattr(_OWN, "write_bytes", 0)
        io = _thread_io() or {}
    counters["wchar"] = io.get("wchar")
    counters["write_bytes"] = io.get("write_bytes")
    return counters


def _counter_delta(before, after):
    out = {}
    for key, value in after.items():
        start = before.get(key)
        out[key] = None if value is None or start is None else value - start
    for key in ("empty_cache_seconds", "fsync_seconds", "dist_save_seconds",
                "dist_save_cpu_seconds", "cpu_seconds"):
        if out.get(key) is not None:
            out[key] = round(out[key], 6)
    # The saving thread may rewrite the probe's file inside a save: those bytes are the probe's.
    own = out.pop("own_written") or 0
    own_disk = out.pop("own_write_bytes") or 0
    if out["wchar"] is not None:
        out["wchar"] = max(out["wchar"] - own, 0)
    if out["write_bytes"] is not None:
        out["write_bytes"] = max(out["write_bytes"] - own_disk, 0)
    return out


def _allocator_settings(torch):
    settings = {
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "PYTORCH_ALLOC_CONF": os.environ.get("PYTORCH_ALLOC_CONF"),
    }
    try:
        settings["backend"] = torch.cuda.get_allocator_backend()
    except Exception:  # older torch, or no CUDA
        settings["backend"] = None
    return settings


def _write(torch, final=False, force=False):
    """Writes this process's record atomically: at the polling interval, after each Megatron
    save, on an out-of-memory error and at exit. Other calls within the interval are dropped,
    so a checkpoint writer that calls ``torch.save`` thousands of times pays nothing. One write
    at a time (``io_lock``): a poll that began before the final write cannot replace it."""
    if not _DIR:
        return
    with _S.io_lock:
        _write_locked(torch, final, force)


def _write_locked(torch, final, force):
    if _S.finalized or (not (final or force) and time.time() - _S.last_write < _S.interval):
        return  # after the final record, a late poll must not replace it
    start = _now()
    try:
        stats = _memory_stats(torch)
    except Exception:
        stats = None
    with _S.lock:
        if stats is not None:
            _S.last = stats
            _S.samples.append(stats)
            if len(_S.samples) > 400:  # keep the file small: thin to every other sample
                _S.samples = _S.samples[::2]
        if (_S.last is None and not _S.saves and _S.empty_cache["calls"] == 0
                and _S.rebuild_cuda_tensor_calls == 0):
            return  # never used CUDA (e.g. torchrun's agent): leave no file
        if final:
            _S.finalized = True
        record = {
            "schema_version": SCHEMA_VERSION,
            "rank": _S.rank,
            "local_rank": _S.local_rank,
            "pid": os.getpid(),
            "final": final,
            "wall_seconds": round(time.time() - _S.started, 3),
            "started_unix": round(_S.started, 3),
            "startup": dict(_S.startup),
            "empty_cache": dict(_S.empty_cache),
            "fsync": dict(_S.fsync),
            "rebuild_cuda_tensor_calls": _S.rebuild_cuda_tensor_calls,
            "io": _proc_io(),
            "saves": list(_S.saves),
            "parts": [dict(v, pid=k[0], index=k[1]) for k, v in sorted(_S.parts.items())],
            "memory": _S.last,
            "samples": list(_S.samples),
            "allocator": _allocator_settings(torch),
            "oom_snapshot": _S.oom_snapshot,
            "overhead_seconds": round(_S.overhead_seconds, 6),
            "poller_cpu_seconds": round(_S.poller_cpu_seconds, 6),
        }
    path = os.path.join(_DIR, "probe-rank%d-pid%d.json" % (_S.rank, os.getpid()))
    tmp = "%s.%d.tmp" % (path, threading.get_ident())  # one temp file per writing thread
    try:
        data = json.dumps(record)  # ASCII: its length is the bytes written
        _OWN.written = getattr(_OWN, "written", 0) + len(data)
        _S.own_total += len(data)
        with open(tmp, "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        sys.stderr.write("goldgate probe: cannot write %s: %s\n" % (path, e))
    _S.last_write = time.time()
    _S.overhead_seconds += _now() - start


def _wrap_empty_cache(torch):
    original = torch.cuda.empty_cache

    def empty_cache():
        if _S.skip_empty_cache and _S.save_depth == 1 and _S.inner_save_depth == 0:
            with _S.lock:
                _S.empty_cache["skipped_by_switch"] = _S.empty_cache.get("skipped_by_switch", 0) + 1
            return None  # the arm removed save_checkpoint_and_time's own call
        t0 = _now()
        try:
            return original()
        finally:
            dt = _now() - t0
            with _S.lock:
                ec = _S.empty_cache
                ec["calls"] += 1
                ec["seconds"] += dt
                ec["max_seconds"] = max(ec["max_seconds"], dt)
                if _S.save_depth > 0:
                    ec["calls_in_checkpoint"] += 1
                    ec["seconds_in_checkpoint"] += dt

    _own(empty_cache, original)
    empty_cache.__doc__ = original.__doc__
    torch.cuda.empty_cache = empty_cache
    if hasattr(torch.cuda, "memory") and getattr(torch.cuda.memory, "empty_cache", None) is original:
        torch.cuda.memory.empty_cache = empty_cache


def _iteration_of(args, kwargs):
    value = kwargs.get("iteration", args[0] if args and isinstance(args[0], int) else None)
    return value if isinstance(value, int) else None


def _apply_arm(torch, arm):
    """Puts ``arm``'s switches in force (before a window's clock starts); returns an error
    message if one could not be applied. Arms stay in force until the next save."""
    switches = _S.injob["arms"].get(arm, {})
    if "error" in switches:
        return switches["error"]
    _S.skip_empty_cache = switches.get("empty-cache") == "remove"
    threshold = switches.get("gc-threshold")
    if threshold is not None:
        setter = getattr(getattr(torch.cuda, "memory", None), "_set_allocator_settings", None)
        if setter is None:
            return "gc-threshold: this torch has no torch.cuda.memory._set_allocator_settings"
        try:
            setter("garbage_collection_threshold:%s" % threshold)
        except Exception as e:  # a torch that refuses it mid-run
            return "gc-threshold: %s: %s" % (type(e).__name__, e)
    return None


def _enter_arm(torch):
    """The arm of the next outer save window by the schedule, put in force: (arm, error)."""
    index = _S.outer_index
    _S.outer_index += 1
    if _S.injob is None:
        return None, None
    schedule = _S.injob["schedule"]
    letter = schedule[index] if index < len(schedule) else "-"
    arm = letter if letter in ("a", "b") else None
    error = _apply_arm(torch, arm or "a")
    _S.arm = arm
    return arm, error


def _save_wrapper(torch, name, original, write_after=False, counted=False):
    """Wraps a save function. An outer ``counted`` window (Megatron's and DCP's saves, not
    each ``torch.save`` a writer makes) also records its counters: the delta of
    :func:`_counters_now` from its start to its end. Under in-job A/B the outer counted window
    first puts its save's arm in force (outside the clock); a ``save-delay`` sleeps inside it."""
    def wrapper(*args, **kwargs):
        outer = _S.save_depth == 0
        arm = error = None
        index = _S.outer_index
        if outer and counted:
            try:
                arm, error = _enter_arm(torch)
            except Exception as e:  # never break the save
                error = "%s: %s" % (type(e).__name__, e)
        switches = _S.injob["arms"].get(arm or "a", {}) if _S.injob and outer and counted else {}
        t0 = _now()
        started = round(time.time() - _S.started, 3)
        with _S.lock:
            _S.save_depth += 1
            if not outer and name == "megatron.save_checkpoint":
                _S.inner_save_depth += 1
        before = _counters_now(torch) if outer and counted else None
        if before is not None:
            _S.window_tag = {"rank": _S.rank, "pid": os.getpid(), "index": index,
                             "iteration": _iteration_of(args, kwargs)}
        if outer and switches:
            _S.pending = switches
        try:
            # Inside Megatron's save_checkpoint: save_checkpoint_and_time has stopped the
            # training loop's interval timer by then, so a planted delay is not counted in the
            # next step's iteration time (a delay at the window's start was: issue 31's first
            # H200 plant read +8 % on the steps after each planted save).
            if _S.pending and (not outer or getattr(original, "__name__", "") != "save_checkpoint_and_time"):
                pending, _S.pending = _S.pending, None
                if pending.get("empty-cache") == "add":
                    torch.cuda.empty_cache()
                if pending.get("save-delay", 0.0) > 0:
                    time.sleep(pending["save-delay"])
            return original(*args, **kwargs)
        finally:
            dt = _now() - t0
            after = _counters_now(torch) if before is not None else None
            if before is not None:
                _S.window_tag = None
            if outer:
                _S.pending = None
            with _S.lock:
                _S.save_depth -= 1
                if not outer and name == "megatron.save_checkpoint":
                    _S.inner_save_depth -= 1
                if outer and len(_S.saves) < 10000:
                    window = {"function": name, "start": started, "seconds": round(dt, 6),
                              "iteration": _iteration_of(args, kwargs)}
                    if before is not None:
                        window["index"] = index
                        window["counters"] = _counter_delta(before, after)
                    if _S.injob is not None and counted:
                        window["arm"] = arm
                        if error:
                            window["switch_error"] = error
                    _S.saves.append(window)
            if outer and write_after:
                _write(torch, force=True)

    _own(wrapper, original)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    return wrapper


class _ForSave:
    """One async part of a save: calls ``fn`` wherever it runs and credits what it wrote to the
    save ``tag`` names (see the module's docstring). Picklable: a spawned worker imports this
    module as its own sitecustomize and finds the class by name."""

    def __init__(self, fn, tag):
        self.fn = fn
        self.tag = tag

    def __call__(self, *args, **kwargs):
        return _run_for_save(self.fn, self.tag, args, kwargs)

    def __getattr__(self, name):  # a caller that inspects the function still sees it
        if name in ("fn", "tag") or name.startswith("__"):
            raise AttributeError(name)  # unpickling looks these up before they exist
        return getattr(self.fn, name)


def _save_tag():
    """The save that work started now belongs to: the running part's, else the open window's."""
    tag = getattr(_TAG, "tag", None)
    return tag if tag is not None else _S.window_tag


def _run_for_save(fn, tag, args, kwargs):
    """Runs one part. In the saving process it counts its thread (the window open on that thread,
    if any, leaves these bytes out); in another process the whole process, less the probe's own
    files, unless an enclosing part there counts it already."""
    elsewhere = tag.get("pid") != os.getpid()
    if elsewhere and _S.process_parts > 0:
        return fn(*args, **kwargs)  # inside a part that counts this whole process
    previous = getattr(_TAG, "tag", None)
    _TAG.tag = tag
    if elsewhere:
        with _S.lock:
            _S.process_parts += 1
    before = _part_io(elsewhere)
    try:
        return fn(*args, **kwargs)
    finally:
        after = _part_io(elsewhere)
        _TAG.tag = previous
        if elsewhere:
            with _S.lock:
                _S.process_parts -= 1
        try:
            _credit(tag, before, after, elsewhere)
        except Exception as e:  # never break the save
            sys.stderr.write("goldgate probe: a save's async part not counted: %s\n" % e)


def _part_io(elsewhere):
    """(wchar, write_bytes, the probe's own bytes so far) of the thread, or of the process."""
    with _S.io_lock:
        if elsewhere:
            io, own = _proc_io(), (_S.own_total, 0)
        else:
            io = _thread_io()
            own = (getattr(_OWN, "written", 0), getattr(_OWN, "write_bytes", 0))
    if io is None:
        return None
    return io["wchar"], io["write_bytes"], own


def _credit(tag, before, after, elsewhere):
    if before is None or after is None:
        return
    wchar = max(after[0] - before[0] - (after[2][0] - before[2][0]), 0)
    disk = max(after[1] - before[1] - (after[2][1] - before[2][1]), 0)
    if not elsewhere:
        # Not the bytes of a window that may be open on this thread (a finalize run by the
        # next save): that window leaves them out, they are this part's save's.
        _OWN.written = getattr(_OWN, "written", 0) + wchar
        _OWN.write_bytes = getattr(_OWN, "write_bytes", 0) + disk
        with _S.lock:
            slot = _S.parts.setdefault((tag["pid"], tag["index"]), {
                "rank": tag["rank"], "iteration": tag["iteration"],
                "wchar": 0, "write_bytes": 0, "parts": 0})
            slot["wchar"] += wchar
            slot["write_bytes"] += disk
            slot["parts"] += 1
        return
    if not _DIR:
        return
    record = {"schema_version": SCHEMA_VERSION, "rank": tag["rank"], "pid": tag["pid"],
              "index": tag["index"], "iteration": tag["iteration"], "writer_pid": os.getpid(),
              "wchar": wchar, "write_bytes": disk, "parts": 1}
    with _S.lock:
        _S.part_files += 1
        n = _S.part_files
    path = os.path.join(_DIR, "probe-part-rank%d-pid%d-w%d-%d.json"
                        % (tag["rank"], tag["pid"], os.getpid(), n))
    data = json.dumps(record)
    with _S.io_lock:
        _S.own_total += len(data)
        with open(path + ".tmp", "w") as f:
            f.write(data)
        os.replace(path + ".tmp", path)


def _tag_request(request, tag):
    """An ``AsyncRequest`` (a NamedTuple) whose async function and finalizers are parts of
    ``tag``'s save."""
    fields = {}
    fn = getattr(request, "async_fn", None)
    if fn is not None and not isinstance(fn, _ForSave):
        fields["async_fn"] = _ForSave(fn, tag)
    finalize = getattr(request, "finalize_fns", None)
    if finalize:
        fields["finalize_fns"] = [f if isinstance(f, _ForSave) else _ForSave(f, tag)
                                  for f in finalize]
    if not fields or not hasattr(request, "_replace"):
        return request
    return request._replace(**fields)


def _on_async_queue(module):
    """Megatron's and nvidia-resiliency-ext's ``AsyncCallsQueue``: a request scheduled inside a
    save carries that save's tag into the worker that runs it and the finalizers."""
    queue = getattr(module, "AsyncCallsQueue", None)
    original = getattr(queue, "schedule_async_request", None)
    if original is None or _ours(original):
        return

    def schedule_async_request(self, async_request, *args, **kwargs):
        tag = _save_tag()
        if tag is not None:
            try:
                async_request = _tag_request(async_request, tag)
            except Exception as e:  # never break the save
                sys.stderr.write("goldgate probe: async save not followed: %s\n" % e)
        return original(self, async_request, *args, **kwargs)

    _own(schedule_async_request, original, like=True)
    queue.schedule_async_request = schedule_async_request


def _on_dcp_process_executor(module):
    """DCP's process-based async executor (``async_save`` with ``AsyncCheckpointerType.PROCESS``):
    a persistent background process, spawned at the first save, receives each save's staged
    state dict as a request on a pipe and writes it. A request sent inside a save (from the
    executor's pool thread, itself a part of the save) carries the save's tag on its identifier,
    which the request pickles with it; in the background process (this module is its
    sitecustomize too) the save of a tagged request runs as a part of that save."""
    process = getattr(module, "_AsyncCheckpointProcess", None)
    request_type = getattr(module, "_AsyncCheckpointRequest", None)
    send = getattr(process, "_send", None)
    execute = getattr(process, "_execute_save", None)
    if request_type is None or send is None or execute is None or _ours(send):
        return

    def _send(self, data, *args, **kwargs):
        tag = _save_tag()
        if tag is not None and isinstance(data, request_type):
            try:
                data.checkpoint_request_id._goldgate_tag = dict(tag)
            except Exception as e:  # never break the save
                sys.stderr.write("goldgate probe: async save not followed: %s\n" % e)
        return send(self, data, *args, **kwargs)

    def _execute_save(*args, **kwargs):
        tag = getattr(kwargs.get("checkpoint_request_id"), "_goldgate_tag", None)
        if tag is None:
            return execute(*args, **kwargs)
        return _run_for_save(execute, tag, args, kwargs)

    process._send = _own(_send, send, like=True)
    process._execute_save = staticmethod(_own(_execute_save, execute, like=True))


# Threads of these packages started inside a save are parts of it (a pool's or a queue's
# long-lived thread is not: it serves later saves too; a pool's jobs are wrapped instead).
_CHECKPOINT_PACKAGES = ("torch.distributed.checkpoint", "megatron", "nvidia_resiliency_ext")


def _of_checkpoint_package(target):
    target = getattr(target, "func", target)  # a functools.partial names its function
    module = getattr(target, "__module__", "") or ""
    return module.startswith(_CHECKPOINT_PACKAGES)


def _forks(process):
    """Whether a ``multiprocessing`` process will be forked (its target then runs with this
    module's state; a spawned one is a new interpreter whose work reaches it by a queue)."""
    method = getattr(process, "_start_method", None)
    if method is None:
        import multiprocessing
        method = multiprocessing.get_start_method(allow_none=True)
    if method is None:
        method = "fork" if sys.platform.startswith("linux") and sys.version_info < (3, 14) else ""
    return method == "fork"


def _wrap_threads():
    """``Thread.start`` and a forked ``Process.start`` inside a save (for the checkpoint
    libraries' writers), and ``ThreadPoolExecutor.submit`` inside a save (each job a part)."""
    import concurrent.futures
    import multiprocessing.process

    def wrap_start(cls, wanted):
        start = getattr(cls, "start", None)
        if start is None or _ours(start):
            return

        def started(self):
            tag = _save_tag()
            if (tag is not None and not getattr(_TAG, "in_submit", False)
                    and _of_checkpoint_package(getattr(self, "_target", None)) and wanted(self)):
                run = self.run
                self.run = lambda: _run_for_save(run, tag, (), {})
            return start(self)

        _own(started, start)
        cls.start = started

    wrap_start(threading.Thread, lambda thread: True)
    wrap_start(multiprocessing.process.BaseProcess, _forks)
    pool = concurrent.futures.ThreadPoolExecutor
    submit = pool.submit
    if not _ours(submit):
        def pool_submit(self, fn, *args, **kwargs):
            tag = _save_tag()
            if tag is None:
                return submit(self, fn, *args, **kwargs)
            _TAG.in_submit = True
            try:
                return submit(self, _ForSave(fn, tag), *args, **kwargs)
            finally:
                _TAG.in_submit = False

        _own(pool_submit, submit)
        pool.submit = pool_submit


def _patch_attr(module, attr, torch, label, write_after=False, counted=False):
    original = getattr(module, attr, None)
    if original is None or _ours(original):
        return
    setattr(module, attr, _save_wrapper(torch, label, original, write_after, counted))


def _on_megatron_training(module):
    # The training loop calls save_checkpoint_and_time(), which calls torch.cuda.empty_cache()
    # before its timer starts and then save_checkpoint(): the outer function is the window.
    _mark("megatron_training_imported")
    _mark_entry(module, "pretrain", "pretrain_entered")
    torch = sys.modules.get("torch")
    if torch is not None:
        _patch_attr(module, "save_checkpoint_and_time", torch, "megatron.save_checkpoint",
                    True, True)
        _patch_attr(module, "save_checkpoint", torch, "megatron.save_checkpoint", True, True)


def _mark_entry(module, attr, name):
    """Wraps ``module.attr`` so that its first call records the start-up mark ``name``."""
    original = getattr(module, attr, None)
    if original is None or _ours(original):
        return

    def entered(*args, **kwargs):
        _mark(name)
        return original(*args, **kwargs)

    _own(entered, original, like=True)
    setattr(module, attr, entered)


def _on_megatron_checkpointing(module):
    torch = sys.modules.get("torch")
    if torch is not None:
        _patch_attr(module, "save_checkpoint", torch, "megatron.save_checkpoint", True, True)


def _on_dcp(module):
    torch = sys.modules.get("torch")
    if torch is not None:
        _patch_attr(module, "save", torch, "torch.distributed.checkpoint.save", counted=True)
        _patch_attr(module, "async_save", torch, "torch.distributed.checkpoint.async_save",
                    counted=True)


def _wrap_fsync():
    """Counts ``os.fsync`` / ``os.fdatasync`` calls and time inside save windows (any thread:
    torch.distributed.checkpoint's writer threads call them)."""
    for attr in ("fsync", "fdatasync"):
        original = getattr(os, attr, None)
        if original is None or _ours(original):
            continue

        def timed(fd, _original=original):
            if _S.save_depth == 0:
                return _original(fd)
            t0 = _now()
            try:
                return _original(fd)
            finally:
                dt = _now() - t0
                with _S.lock:
                    _S.fsync["calls"] += 1
                    _S.fsync["seconds"] += dt

        _own(timed, original)
        setattr(os, attr, timed)


def _on_dist_checkpointing(module):
    """Times ``megatron.core.dist_checkpointing.save`` (wall and process CPU) inside save
    windows: the part of a save that serialises and writes the checkpoint."""
    original = getattr(module, "save", None)
    if original is None or _ours(original):
        return

    def save(*args, **kwargs):
        d = _S.dist_save
        if d["depth"] > 0:
            return original(*args, **kwargs)
        d["depth"] += 1
        t0, c0 = _now(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            wall, cpu = _now() - t0, time.process_time() - c0
            d["depth"] -= 1
            with _S.lock:
                d["calls"] += 1
                d["seconds"] += wall
                d["cpu_seconds"] += cpu

    _own(save, original, like=True)
    module.save = save


def _on_reductions(module):
    """Counts ``rebuild_cuda_tensor``: each call is a CUDA tensor received from another process
    (an async checkpoint worker's handoff). The wrapper keeps the original's module and name,
    so a pickle that names the function still finds it."""
    original = getattr(module, "rebuild_cuda_tensor", None)
    if original is None or _ours(original):
        return

    def rebuild_cuda_tensor(*args, **kwargs):
        with _S.lock:
            _S.rebuild_cuda_tensor_calls += 1
        return original(*args, **kwargs)

    _own(rebuild_cuda_tensor, original, like=True)
    module.rebuild_cuda_tensor = rebuild_cuda_tensor


def _excepthook_for(torch, previous):
    def hook(exc_type, exc, tb):
        _on_exception(torch, exc)
        previous(exc_type, exc, tb)
    return hook


def _on_exception(torch, exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    if "out of memory" not in text.lower():
        return
    if _S.history_on and _DIR:
        path = os.path.join(_DIR, "oom-snapshot-rank%d-pid%d.pickle" % (_S.rank, os.getpid()))
        try:
            torch.cuda.memory._dump_snapshot(path)
            _S.oom_snapshot = os.path.basename(path)
        except Exception as e:
            sys.stderr.write("goldgate probe: no memory snapshot: %s\n" % e)
    _write(torch, force=True)


def _maybe_start_history(torch):
    if _S.history and not _S.history_on and torch.cuda.is_initialized():
        try:
            torch.cuda.memory._record_memory_history(max_entries=100000)
            _S.history_on = True
        except Exception as e:
            sys.stderr.write("goldgate probe: memory history unavailable: %s\n" % e)


def _wrap_set_device(torch):
    original = torch.cuda.set_device

    def set_device(device):
        result = original(device)
        _maybe_start_history(torch)
        return result

    _own(set_device, original)
    torch.cuda.set_device = set_device


def _poller(torch, interval):
    while True:
        time.sleep(interval)
        t0 = time.thread_time()
        _maybe_start_history(torch)
        _write(torch, force=True)
        _S.poller_cpu_seconds += time.thread_time() - t0


def _on_torch(torch):
    """Installs the probe once torch has been imported by the workload."""
    _mark("torch_imported")
    _wrap_empty_cache(torch)
    _wrap_set_device(torch)
    _wrap_fsync()
    _wrap_threads()
    _patch_attr(torch, "save", torch, "torch.save")
    sys.excepthook = _excepthook_for(torch, sys.excepthook)
    previous_thread_hook = threading.excepthook

    def thread_hook(args):
        _on_exception(torch, args.exc_value)
        previous_thread_hook(args)

    threading.excepthook = thread_hook
    atexit.register(lambda: _write(torch, final=True))
    threading.Thread(target=_poller, args=(torch, max(_S.interval, 0.05)),
                     name="goldgate-probe", daemon=True).start()


_HOOKS = {
    "torch": _on_torch,
    "megatron.training.training": _on_megatron_training,
    "megatron.training.checkpointing": _on_megatron_checkpointing,
    "torch.distributed.checkpoint": _on_dcp,
    "torch.multiprocessing.reductions": _on_reductions,
    "megatron.core.dist_checkpointing": _on_dist_checkpointing,
    "megatron.core.dist_checkpointing.strategies.async_utils": _on_async_queue,
    "nvidia_resiliency_ext.checkpointing.async_ckpt.core": _on_async_queue,
    "torch.distributed.checkpoint._async_process_executor": _on_dcp_process_executor,
}


class _Finder(importlib.abc.MetaPathFinder):
    """Runs a hook right after a watched module finishes executing."""

    def find_spec(self, fullname, path, target=None):
        hook = _HOOKS.get(fullname)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, hook)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, hook):
        self.inner = inner
        self.hook = hook

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            self.hook(module)
        except Exception as e:  # the probe must never break the workload
            sys.stderr.write("goldgate probe: disabled for %s: %s\n" % (module.__name__, e))

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _after_fork_in_child():
    """A forked child may copy a lock another thread held: it starts with fresh ones."""
    _S.lock = threading.Lock()
    _S.io_lock = threading.Lock()


def _install():
    if not _DIR:
        return
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    already = [name for name in _HOOKS if name in sys.modules]
    for name in already:
        _HOOKS[name](sys.modules[name])
    sys.meta_path.insert(0, _Finder())


try:
    _chain_next_sitecustomize()
finally:
    try:
        _install()
    except Exception as e:  # never break start-up
        sys.stderr.write("goldgate probe: not installed: %s\n" % e)
