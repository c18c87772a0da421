//! Stage "observe", the probe's tests in Python: the embedded `sitecustomize.py` run by a real
//! Python interpreter against a stub `torch` package and a stub `megatron.training` (CI has no
//! CUDA build of PyTorch), read back by [`super::read`]. Skips (and says so) when `python3` is
//! missing; under `CI=true` fails instead (`goldgate_core::fixtures::prereq`).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::{Path, PathBuf};
use std::process::Command;

use super::install::{ProbeMode, install};
use super::read::read;

fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .ok()?
        .success();
    ok.then_some("python3")
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A stub torch whose empty_cache sleeps 20 ms and whose memory_stats report fixed numbers.
fn stub_packages(root: &Path) {
    write(
        root,
        "torch/__init__.py",
        "import os\nfrom . import cuda\nfrom . import multiprocessing\n\
         class OutOfMemoryError(RuntimeError):\n    pass\n\
         def save(obj, f):\n    open(f, 'w').write('x')\n",
    );
    write(
        root,
        "torch/cuda/__init__.py",
        "from .memory import empty_cache, memory_stats\nfrom . import memory\n_init = False\n\
         def is_initialized():\n    return _init\n\
         def set_device(d):\n    global _init\n    _init = True\n\
         def get_allocator_backend():\n    return 'native'\n",
    );
    write(
        root,
        "torch/cuda/memory.py",
        "import time, pickle\n_history = False\n\
         _counts = {'num_device_alloc': 0, 'num_device_free': 0, 'num_sync_all_streams': 0}\n\
         def empty_cache():\n    time.sleep(0.02)\n    _counts['num_sync_all_streams'] += 1\n\
         \x20   _counts['num_device_free'] += 1\n\
         def _alloc():\n    _counts['num_device_alloc'] += 1\n\
         def memory_stats():\n    return dict(_counts, **{'allocated_bytes.all.peak': 1000, 'reserved_bytes.all.peak': 1600,\n\
         'num_alloc_retries': 2, 'num_ooms': 0, 'inactive_split_bytes.all.peak': 300})\n\
         def _record_memory_history(max_entries=0):\n    global _history\n    _history = True\n\
         def _dump_snapshot(path):\n    pickle.dump({'segments': [], 'history': _history}, open(path, 'wb'))\n",
    );
    write(root, "torch/distributed/__init__.py", "");
    write(
        root,
        "torch/multiprocessing/__init__.py",
        "from . import reductions\n",
    );
    write(
        root,
        "torch/multiprocessing/reductions.py",
        "def rebuild_cuda_tensor(handle):\n    return ('tensor', handle)\n",
    );
    // DCP's saves, decorated as torch's are (its decorators set `__wrapped__`, as the probe's
    // wrappers do).
    write(
        root,
        "torch/distributed/checkpoint/__init__.py",
        "import functools\n\
         def _logged(fn):\n\
         \x20   @functools.wraps(fn)\n\
         \x20   def logged(*args, **kwargs):\n\
         \x20       return fn(*args, **kwargs)\n\
         \x20   return logged\n\
         @_logged\n\
         def save(state, checkpoint_id=None):\n    pass\n\
         @_logged\n\
         def async_save(state, checkpoint_id=None, process=False):\n\
         \x20   if process:\n\
         \x20       from . import _async_process_executor as e\n\
         \x20       return e.execute_save(state, checkpoint_id)\n",
    );
    // DCP's process-based async executor, as torch's has it: a pool thread per save hands
    // the state dict, as a request whose identifier names the checkpoint, to one persistent
    // background process (spawned at the first save) that writes it and answers on a pipe.
    write(
        root,
        "torch/distributed/checkpoint/_async_process_executor.py",
        r#"import dataclasses, multiprocessing as mp, os, uuid
from concurrent.futures import ThreadPoolExecutor

@dataclasses.dataclass(init=False, unsafe_hash=True)
class _CheckpointRequestIdentifier:
    checkpoint_id: str
    uuid: str

    def __init__(self, checkpoint_id):
        self.checkpoint_id, self.uuid = checkpoint_id, str(uuid.uuid4())

@dataclasses.dataclass
class _AsyncCheckpointRequest:
    staged_state_dict: dict
    checkpoint_request_id: _CheckpointRequestIdentifier

class _AsyncCheckpointProcess:
    def __init__(self):
        ctx = mp.get_context('spawn')
        self._pipe, child = ctx.Pipe()
        ctx.Process(target=self._serve, args=(child,), daemon=True).start()
        child.close()

    def _send(self, data):
        self._pipe.send(data)

    def save(self, state_dict, checkpoint_id):
        self._send(_AsyncCheckpointRequest(state_dict, _CheckpointRequestIdentifier(checkpoint_id)))
        return self._pipe.recv()

    @staticmethod
    def _execute_save(state_dict, *, checkpoint_request_id):
        d = checkpoint_request_id.checkpoint_id
        os.makedirs(d, exist_ok=True)
        for name, n in state_dict.items():
            with open(os.path.join(d, name), 'wb') as f:
                f.write(b'w' * n)
        return 'metadata'

    @staticmethod
    def _serve(conn):
        while True:
            request = conn.recv()
            conn.send(_AsyncCheckpointProcess._execute_save(
                request.staged_state_dict, checkpoint_request_id=request.checkpoint_request_id))

_PROCESS = None

def execute_save(state_dict, checkpoint_id):
    def run():
        global _PROCESS
        if _PROCESS is None:
            _PROCESS = _AsyncCheckpointProcess()
        return _PROCESS.save(state_dict, checkpoint_id)
    return ThreadPoolExecutor(max_workers=1).submit(run)
"#,
    );
    write(root, "megatron/__init__.py", "");
    write(root, "megatron/training/__init__.py", "");
    write(
        root,
        "megatron/training/training.py",
        "import os, time, torch\n\
         def save_checkpoint(iteration, model):\n    torch.cuda.empty_cache()\n\
         \x20   d = os.path.join(os.environ['GOLDGATE_PROBE_DIR'], '..', 'ckpt', 'iter_%07d' % iteration)\n\
         \x20   os.makedirs(d, exist_ok=True)\n\
         \x20   if os.environ.get('STUB_ASYNC'):\n\
         \x20       from megatron.core.dist_checkpointing.strategies import async_utils as au\n\
         \x20       au.queue().maybe_finalize_async_calls(blocking=True)\n\
         \x20       au.queue().schedule_async_request(au.request(d))\n\
         \x20       return\n\
         \x20   open(os.path.join(d, 'model.pt'), 'wb').write(b'x' * 100000)\n\
         \x20   time.sleep(float(os.environ.get('STUB_SAVE_SLEEP_S', '0')))\n\
         \x20   _in_save()\n\
         def _in_save():\n    pass\n\
         def save_checkpoint_and_time(iteration, model):\n    torch.cuda.empty_cache()\n    save_checkpoint(iteration, model)\n\
         def pretrain(*args, **kwargs):\n    time.sleep(0.05)\n    return 'trained'\n",
    );
    // Megatron's async queue: the save's shards are written by a persistent spawned worker
    // (which forks a second writer, as FileSystemWriterAsync does) or by a process forked per
    // save, and the metadata by a finalizer the next save (or the end) runs in the training
    // process. The worker reports back through a SimpleQueue, which writes in the caller.
    for package in [
        "megatron/core/__init__.py",
        "megatron/core/dist_checkpointing/__init__.py",
        "megatron/core/dist_checkpointing/strategies/__init__.py",
    ] {
        write(root, package, "");
    }
    write(
        root,
        "megatron/core/dist_checkpointing/strategies/async_utils.py",
        r#"import functools, multiprocessing as mp, os
from typing import Callable, List, NamedTuple, Tuple

class AsyncRequest(NamedTuple):
    async_fn: Callable
    async_fn_args: Tuple
    finalize_fns: List[Callable]

def _write(path, n):
    with open(path, 'wb') as f:
        f.write(b'z' * n)

def write_shards(d):
    _write(os.path.join(d, 'shard0.distcp'), 100000)
    writer = mp.get_context('fork').Process(
        target=functools.partial(_write, os.path.join(d, 'shard1.distcp'), 50000))
    writer.start()
    writer.join()

def request(d):
    return AsyncRequest(write_shards, (d,), [functools.partial(_write, os.path.join(d, '.metadata'), 500)])

def _worker(requests, done):
    while True:
        item = requests.get()
        if item is None:
            return
        fn, args = item
        fn(*args)
        done.put(1)

class AsyncCallsQueue:
    def __init__(self, mode):
        self.mode, self.pending, self.worker = mode, [], None

    def schedule_async_request(self, req):
        if self.mode == 'persistent':
            if self.worker is None:
                ctx = mp.get_context('spawn')
                self.requests, self.done = ctx.SimpleQueue(), ctx.SimpleQueue()
                self.worker = ctx.Process(target=_worker, args=(self.requests, self.done))
                self.worker.start()
            self.requests.put((req.async_fn, req.async_fn_args))
            self.pending.append((None, req))
        else:
            p = mp.get_context('fork').Process(target=req.async_fn, args=req.async_fn_args)
            p.start()
            self.pending.append((p, req))

    def maybe_finalize_async_calls(self, blocking=False):
        while self.pending:
            p, req = self.pending.pop(0)
            if p is None:
                self.done.get()
            else:
                p.join()
            for f in req.finalize_fns:
                f()

    def close(self):
        if self.worker is not None:
            self.requests.put(None)
            self.worker.join()

_queue = None

def queue():
    global _queue
    if _queue is None:
        _queue = AsyncCallsQueue(os.environ['STUB_ASYNC'])
    return _queue
"#,
    );
    // A sitecustomize that the probe shadows and must still run.
    write(
        root,
        "other/sitecustomize.py",
        "import os\nos.environ['CHAINED_SITECUSTOMIZE'] = 'ran'\n",
    );
}

/// The probe with torch's hooks in and no allocator history: what most of these tests ask for.
const TORCH: ProbeMode = ProbeMode {
    torch: true,
    history: false,
};

/// `script` under [`TORCH`] with the `extra` variables, which must exit 0 (its stderr says why
/// not).
fn run_ok(job: &Path, stubs: &Path, script: &str, extra: &[(&str, &str)]) -> std::process::Output {
    let out = run_script_env(job, stubs, TORCH, script, extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn run_script(job: &Path, stubs: &Path, mode: ProbeMode, script: &str) -> std::process::Output {
    run_script_env(job, stubs, mode, script, &[])
}

fn run_script_env(
    job: &Path,
    stubs: &Path,
    mode: ProbeMode,
    script: &str,
    extra: &[(&str, &str)],
) -> std::process::Output {
    let existing = format!("{}:{}", stubs.display(), stubs.join("other").display());
    let env = install(job, mode, 0.05, Some(&existing)).unwrap();
    let mut cmd = Command::new(python().unwrap());
    cmd.arg("-c")
        .arg(script)
        .envs(env)
        .env("RANK", "0")
        .envs(extra.iter().copied());
    cmd.output().unwrap()
}

fn setup() -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    if python().is_none() {
        goldgate_core::fixtures::prereq::missing("python3 not found");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let stubs = dir.path().join("stubs");
    stub_packages(&stubs);
    let job = dir.path().join("job");
    Some((dir, stubs, job))
}

#[test]
fn records_empty_cache_in_and_out_of_checkpoints_and_chains() {
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import os, torch\ntorch.cuda.set_device(0)\n\
        import megatron.training.training as t\nt.save_checkpoint_and_time(5, None)\n\
        torch.cuda.empty_cache()\ntorch.save({}, os.path.join(os.environ['GOLDGATE_PROBE_DIR'], 'x.pt'))\n\
        import torch.distributed.checkpoint as dcp\ndcp.save({}, checkpoint_id='c')\n\
        print(os.environ.get('CHAINED_SITECUSTOMIZE'))\n";
    let out = run_ok(&job, &stubs, script, &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran");
    let summary = read(&job).expect("probe file");
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let rank = &summary.ranks[0];
    assert!(rank.final_);
    // Megatron's save_checkpoint_and_time() empties the cache, then calls save_checkpoint(),
    // which empties it again: both calls are inside one save window.
    assert_eq!(rank.empty_cache.calls, 3);
    assert_eq!(rank.empty_cache.calls_in_checkpoint, 2);
    assert!(
        rank.empty_cache.max_seconds >= 0.015,
        "{:?}",
        rank.empty_cache
    );
    let functions: Vec<_> = rank.saves.iter().map(|s| s.function.as_str()).collect();
    assert_eq!(
        functions,
        [
            "megatron.save_checkpoint",
            "torch.save",
            "torch.distributed.checkpoint.save"
        ]
    );
    assert_eq!(rank.saves[0].iteration, Some(5));
    let m = summary.metrics(1);
    assert_eq!(m["reserved-minus-allocated-bytes"], 600.0);
    assert_eq!(m["alloc-retries"], 2.0);
    assert_eq!(
        rank.allocator.get("backend").cloned().flatten().as_deref(),
        Some("native")
    );
}

/// The probe records when the process started (on the epoch clock, as goldgate's `started_at`)
/// and when it had imported torch and Megatron's training module and entered `pretrain`, in
/// that order: where a job's start-up went, beside the log's own timestamps.
#[test]
fn the_probe_marks_where_start_up_went() {
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let script = "import time\ntime.sleep(0.1)\nimport torch\ntorch.cuda.set_device(0)\n\
        time.sleep(0.1)\nfrom megatron.training.training import pretrain\ntime.sleep(0.1)\n\
        print(pretrain())\n";
    let out = run_ok(&job, &stubs, script, &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "trained");
    let summary = read(&job).expect("probe file");
    let rank = &summary.ranks[0];
    let started = rank.started_unix.expect("started_unix");
    assert!(
        started >= before - 1.0 && started <= before + 30.0,
        "{started} vs {before}"
    );
    let mark = |name: &str| {
        *rank
            .startup
            .get(name)
            .unwrap_or_else(|| panic!("{name} in {:?}", rank.startup))
    };
    let (torch, megatron, pretrain) = (
        mark("torch_imported"),
        mark("megatron_training_imported"),
        mark("pretrain_entered"),
    );
    assert!(torch >= 0.1, "{:?}", rank.startup);
    assert!(megatron >= torch + 0.1, "{:?}", rank.startup);
    assert!(pretrain >= megatron + 0.1, "{:?}", rank.startup);
    assert!(
        pretrain <= rank.wall_seconds,
        "{:?} {}",
        rank.startup,
        rank.wall_seconds
    );
}

#[test]
fn without_torch_the_probe_does_nothing() {
    let Some((_dir, _stubs, job)) = setup() else {
        return;
    };
    let empty = tempfile::tempdir().unwrap();
    let out = run_script(&job, empty.path(), TORCH, "import json; print('fine')");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fine");
    assert!(read(&job).is_none());
}

#[test]
fn out_of_memory_with_history_leaves_a_snapshot() {
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import torch\ntorch.cuda.set_device(0)\n\
        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 20.00 GiB')\n";
    let out = run_script(
        &job,
        &stubs,
        ProbeMode {
            torch: true,
            history: true,
        },
        script,
    );
    assert!(!out.status.success());
    let summary = read(&job).expect("probe file");
    let snapshot = summary.ranks[0]
        .oom_snapshot
        .clone()
        .expect("snapshot named");
    assert!(job.join("probe").join(&snapshot).is_file(), "{snapshot}");
}

#[test]
fn a_killed_rank_leaves_a_valid_partial_file() {
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import os, signal, torch\ntorch.cuda.set_device(0)\n\
        import megatron.training.training as t\nt.save_checkpoint(10, None)\n\
        os.kill(os.getpid(), signal.SIGKILL)\n";
    let out = run_script(&job, &stubs, TORCH, script);
    assert!(!out.status.success());
    let summary = read(&job).expect("partial probe file");
    assert!(!summary.ranks[0].final_);
    assert_eq!(summary.ranks[0].saves.len(), 1);
    assert_eq!(summary.ranks[0].empty_cache.calls_in_checkpoint, 1);
}

/// The probe's counters from a real interpreter: what happened inside each save window, the
/// allocator counters' deltas, the CUDA tensors received, and the bytes written, checked
/// against independent readings (the stub's own counts, the checkpoint folders on disk).
#[test]
fn save_windows_count_empty_cache_allocator_and_bytes() {
    use goldgate_schema::metric_names as names;
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import os, pickle, torch\ntorch.cuda.set_device(0)\n\
        import megatron.training.training as t\nt.save_checkpoint_and_time(3, None)\n\
        torch.cuda.memory._alloc()\ntorch.cuda.empty_cache()\n\
        t.save_checkpoint_and_time(6, None)\n\
        from torch.multiprocessing import reductions\n\
        again = pickle.loads(pickle.dumps(reductions.rebuild_cuda_tensor))\n\
        assert again is reductions.rebuild_cuda_tensor\n\
        print(again(7))\n";
    // Each save lasts 0.2 s, long enough for the probe's poller (every 0.05 s here) to
    // rewrite its own file inside the window: those bytes are not the save's.
    let out = run_ok(&job, &stubs, script, &[("STUB_SAVE_SLEEP_S", "0.2")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "('tensor', 7)");
    let summary = read(&job).expect("probe file");
    let per_save = summary.per_save_metrics();
    let series = |name: &str| {
        let s = per_save
            .get(name)
            .unwrap_or_else(|| panic!("{name}: {per_save:?}"));
        s.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
    };
    // Each save: save_checkpoint_and_time's empty_cache and save_checkpoint's, and each one a
    // device-wide sync and a cudaFree in the stub; the allocation between saves is outside.
    for name in [
        names::CKPT_EMPTY_CACHE_CALLS,
        names::CKPT_SYNC_ALL_STREAMS_CALLS,
        names::CKPT_CUDA_FREE_CALLS,
    ] {
        assert_eq!(series(name), [(3, 2.0), (6, 2.0)], "{name}");
    }
    assert_eq!(series(names::CKPT_CUDA_MALLOC_CALLS), [(3, 0.0), (6, 0.0)]);
    assert_eq!(series(names::CKPT_ALLOC_RETRIES), [(3, 0.0), (6, 0.0)]);
    let seconds = series(names::CKPT_EMPTY_CACHE_SECONDS);
    assert!(seconds.iter().all(|(_, s)| *s >= 0.03), "{seconds:?}");
    // Bytes passed to write() in each save against the folder the save left on disk: the
    // stub writes nothing else in a save, so they are equal.
    let folders = crate::observe::ckpt_folders::folder_sizes(&job.join("ckpt"));
    assert_eq!(
        folders,
        std::collections::BTreeMap::from([(3, 100_000), (6, 100_000)])
    );
    for (iteration, written) in series(names::CKPT_WRITTEN_BYTES) {
        assert_eq!(written, folders[&iteration] as f64, "save {iteration}");
    }
    let m = summary.metrics(2);
    assert_eq!(m[names::EMPTY_CACHE_CALLS], 5.0);
    assert_eq!(m[names::SYNC_ALL_STREAMS_CALLS], 5.0);
    assert_eq!(m[names::CUDA_MALLOC_CALLS], 1.0);
    assert_eq!(m[names::CUDA_FREE_CALLS], 5.0);
    assert_eq!(m[names::REBUILD_CUDA_TENSOR_CALLS], 1.0);
    assert!(m[names::JOB_WRITTEN_BYTES] >= 200_000.0, "{m:?}");
}

/// A save counts the writes of the thread that saves, not those another thread makes while
/// the save is open (an earlier save's background writer, a logger): the process's counter
/// took them in, so the count depended on when the other thread ran. Here a thread writes
/// 300,000 bytes while the save waits for it, and the save still counts its 100,000.
#[test]
fn a_save_does_not_count_another_threads_writes_made_during_it() {
    use goldgate_schema::metric_names as names;
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import os, threading, torch\ntorch.cuda.set_device(0)\n\
        import megatron.training.training as t\n\
        go, done = threading.Event(), threading.Event()\n\
        def other():\n    go.wait()\n\
        \x20   open(os.path.join(os.environ['GOLDGATE_PROBE_DIR'], '..', 'other.bin'), 'wb').write(b'y' * 300000)\n\
        \x20   done.set()\n\
        threading.Thread(target=other).start()\n\
        t._in_save = lambda: (go.set(), done.wait())\n\
        t.save_checkpoint_and_time(3, None)\n";
    run_ok(&job, &stubs, script, &[]);
    assert_eq!(
        std::fs::metadata(job.join("other.bin")).unwrap().len(),
        300_000
    );
    let summary = read(&job).expect("probe file");
    let written = &summary.per_save_metrics()[names::CKPT_WRITTEN_BYTES];
    let folders = crate::observe::ckpt_folders::folder_sizes(&job.join("ckpt"));
    assert_eq!(folders[&3], 100_000);
    assert_eq!(written[&3], 100_000.0, "{written:?}");
}

/// An async save's bytes are written by another process (Megatron's persistent worker, spawned,
/// and the writer it forks; or a process forked per save) and by a finalizer that runs in the
/// training process inside the next save: each save counts exactly the bytes of its own folder,
/// whenever and wherever they were written. The saving thread alone wrote none of them.
#[test]
fn an_async_save_counts_what_its_workers_and_finalizers_wrote_for_it() {
    use goldgate_schema::metric_names as names;
    for mode in ["persistent", "temporal"] {
        let Some((_dir, stubs, job)) = setup() else {
            return;
        };
        let script = "import os, time, torch\ntorch.cuda.set_device(0)\n\
            import megatron.training.training as t\n\
            from megatron.core.dist_checkpointing.strategies import async_utils as au\n\
            t.save_checkpoint_and_time(3, None)\ntime.sleep(0.1)\n\
            t.save_checkpoint_and_time(6, None)\n\
            au.queue().maybe_finalize_async_calls(blocking=True)\nau.queue().close()\n";
        let out = run_script_env(&job, &stubs, TORCH, script, &[("STUB_ASYNC", mode)]);
        assert!(
            out.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = read(&job).expect("probe file");
        assert!(
            summary.warnings.is_empty(),
            "{mode}: {:?}",
            summary.warnings
        );
        let folders = crate::observe::ckpt_folders::folder_sizes(&job.join("ckpt"));
        assert_eq!(
            folders,
            std::collections::BTreeMap::from([(3, 150_500), (6, 150_500)]),
            "{mode}"
        );
        // Beyond its folder, a save counts only its saving thread's own writes: in the
        // persistent mode the handoff to the worker (the pickled request on a pipe, and the
        // worker's spawn at the first save), none of the files; nothing when it forks a writer.
        let rank = &summary.ranks[0];
        let written = &summary.per_save_metrics()[names::CKPT_WRITTEN_BYTES];
        for w in &rank.saves {
            let (c, iteration) = (w.counters.as_ref().unwrap(), w.iteration.unwrap());
            assert_eq!(
                c.async_parts,
                Some(2),
                "{mode}: the worker's part and the finalizer"
            );
            let here: u64 = rank
                .parts
                .iter()
                .filter(|p| Some(p.index) == w.index)
                .map(|p| p.wchar)
                .sum();
            assert_eq!(
                here, 500,
                "{mode}: the finalizer ran in the training process"
            );
            let beyond = c.wchar.unwrap() as i64 - folders[&iteration] as i64;
            match mode {
                "temporal" => assert_eq!(beyond, 0, "save {iteration}"),
                _ => assert!((1..4096).contains(&beyond), "save {iteration}: {beyond}"),
            }
            assert_eq!(written[&iteration], c.wchar.unwrap() as f64);
        }
    }
}

/// DCP's process-based async save (`async_checkpointer_type=PROCESS`) is written by a persistent
/// background process, spawned at the first save, after the save's window has closed: each save
/// counts the bytes of its own folder, and not what the training process wrote while it was in
/// flight. The same on a real PyTorch: `torch_tests.rs`.
#[test]
fn a_dcp_process_based_async_save_counts_what_the_background_process_wrote_for_it() {
    let Some((_dir, stubs, job)) = setup() else {
        return;
    };
    let script = "import os, torch\ntorch.cuda.set_device(0)\n\
        import torch.distributed.checkpoint as dcp\n\
        root = os.path.join(os.environ['GOLDGATE_PROBE_DIR'], '..')\n\
        for n in (3, 6):\n\
        \x20   state = {'shard0.distcp': 100000 * n, '.metadata': 500}\n\
        \x20   f = dcp.async_save(state, checkpoint_id=os.path.join(root, 'ckpt', 'iter_%07d' % n), process=True)\n\
        \x20   open(os.path.join(root, 'other-%d.bin' % n), 'wb').write(b'y' * 300000)\n\
        \x20   print(f.result())\n";
    let out = run_ok(&job, &stubs, script, &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "metadata\nmetadata"
    );
    let summary = read(&job).expect("probe file");
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let folders = crate::observe::ckpt_folders::folder_sizes(&job.join("ckpt"));
    assert_eq!(
        folders,
        std::collections::BTreeMap::from([(3, 300_500), (6, 600_500)])
    );
    let windows: Vec<_> = summary.ranks[0]
        .saves
        .iter()
        .filter(|w| w.counters.is_some())
        .collect();
    assert_eq!(windows.len(), 2, "{:?}", summary.ranks[0].saves);
    // Beyond its folder a save counts only what its pool thread wrote: the request on the pipe,
    // and at the first save the background process's spawn.
    for (w, (iteration, folder)) in windows.iter().zip(&folders) {
        let c = w.counters.as_ref().unwrap();
        assert_eq!(w.function, "torch.distributed.checkpoint.async_save");
        assert_eq!(
            c.async_parts,
            Some(2),
            "save {iteration}: pool thread, background"
        );
        let written = c.wchar.unwrap();
        assert!(
            (*folder..folder + 4096).contains(&written),
            "save {iteration}: {written} B counted, its folder has {folder}"
        );
    }
}
