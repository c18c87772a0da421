//! The allocator probe's file, written by fake-trainer itself: what goldgate's in-process
//! probe (`sitecustomize.py`) records for a Python job, from the fake allocator's counters
//! ([`crate::memory::Accounting`]) and `/proc/self/io`, so that goldgate's tests gate on
//! counters without PyTorch. Written to `$GOLDGATE_PROBE_DIR/probe-rank<R>-pid<P>.json`
//! (the probe's schema, version 1) after every save and, with `"final": true`, at the end;
//! atomically (temp file + rename), so a job that dies leaves its last complete file.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::memory::{Accounting, AllocCounters};

/// `wchar` and `write_bytes` of one `/proc` io file (`None` where unreadable).
fn read_io(path: &str) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((field("wchar")?, field("write_bytes")?))
}

/// What the calling thread alone has written (`/proc/thread-self/io`). A save counts the writes
/// of the threads doing its work, each measured by the thread itself: the training thread's
/// inside the save window, the checkpoint worker's for that save whenever it runs. The
/// process's counter would also take in whatever the worker wrote for an earlier save while
/// the window was open, which is what made the count depend on the scheduler.
pub(crate) fn thread_io() -> Option<(u64, u64)> {
    read_io("/proc/thread-self/io")
}

/// What the whole process has written (`/proc/self/io`: every thread, and children it reaped).
fn process_io() -> Option<(u64, u64)> {
    read_io("/proc/self/io")
}

/// What the calling thread has written since `start` (a [`thread_io`] of the same thread).
pub(crate) fn io_since(start: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (start, thread_io()) {
        (Some((w0, b0)), Some((w1, b1))) => Some((w1.saturating_sub(w0), b1.saturating_sub(b0))),
        _ => None,
    }
}

/// This process's CPU time (s), minor and major page faults and voluntary and involuntary
/// context switches (`getrusage(RUSAGE_SELF)`), as the probe's `resource.getrusage` reads them.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    cpu_seconds: f64,
    counts: [i64; 4],
}

fn usage() -> Usage {
    // SAFETY: rusage is plain integers, for which all-zero bytes are a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage struct, which lives on this stack frame.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return Usage::default();
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage {
        cpu_seconds: secs(u.ru_utime) + secs(u.ru_stime),
        counts: [u.ru_minflt, u.ru_majflt, u.ru_nvcsw, u.ru_nivcsw],
    }
}

/// The counters a save window subtracts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    alloc: AllocCounters,
    io: Option<(u64, u64)>,
    usage: Usage,
    at: Instant,
}

/// One recorded save window.
struct Save {
    iteration: u64,
    start_s: f64,
    seconds: f64,
    alloc: AllocCounters,
    io: Option<(u64, u64)>,
    usage: Usage,
    /// In-job A/B: the arm the save ran under (`Some(None)`: outside the design).
    arm: Option<Option<char>>,
}

/// The probe file of this process.
pub(crate) struct Probe {
    path: PathBuf,
    rank: u32,
    local_rank: u32,
    started: Instant,
    acct: Arc<Accounting>,
    saves: Vec<Save>,
}

fn env_u32(name: &str) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

impl Probe {
    /// The probe when goldgate asked for one (`GOLDGATE_PROBE_DIR` set), else `None`.
    pub(crate) fn from_env(acct: &Arc<Accounting>) -> Option<Probe> {
        let dir = std::env::var_os("GOLDGATE_PROBE_DIR").filter(|d| !d.is_empty())?;
        let rank = env_u32("RANK");
        let name = format!("probe-rank{rank}-pid{}.json", std::process::id());
        Some(Probe {
            path: PathBuf::from(dir).join(name),
            rank,
            local_rank: env_u32("LOCAL_RANK"),
            started: Instant::now(),
            acct: Arc::clone(acct),
            saves: Vec::new(),
        })
    }

    /// The counters now, for a save window to start from.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            alloc: self.acct.counters(),
            io: thread_io(),
            usage: usage(),
            at: Instant::now(),
        }
    }

    /// Records the save that started at `mark` (under in-job A/B, with its arm) and rewrites
    /// the file.
    pub(crate) fn saved(&mut self, iteration: u64, mark: Mark, arm: Option<Option<char>>) {
        let end = usage();
        let now = self.acct.counters();
        let io = io_since(mark.io);
        self.saves.push(Save {
            iteration,
            start_s: mark.at.duration_since(self.started).as_secs_f64(),
            seconds: mark.at.elapsed().as_secs_f64(),
            alloc: AllocCounters {
                device_allocs: now.device_allocs - mark.alloc.device_allocs,
                device_frees: now.device_frees - mark.alloc.device_frees,
                empty_cache_calls: now.empty_cache_calls - mark.alloc.empty_cache_calls,
                empty_cache_nanos: now.empty_cache_nanos - mark.alloc.empty_cache_nanos,
                empty_cache_max_nanos: 0,
            },
            io,
            usage: Usage {
                cpu_seconds: end.cpu_seconds - mark.usage.cpu_seconds,
                counts: std::array::from_fn(|i| end.counts[i] - mark.usage.counts[i]),
            },
            arm,
        });
        self.write(false);
    }

    /// Adds what a save's background writer wrote for it (an async save's worker, measured on
    /// the worker's own thread) to the save of `iteration`; the next write of the file has it.
    /// A save whose either part could not be read keeps no byte counts.
    pub(crate) fn background(&mut self, iteration: u64, io: Option<(u64, u64)>) {
        let Some(save) = self
            .saves
            .iter_mut()
            .rev()
            .find(|s| s.iteration == iteration)
        else {
            return;
        };
        save.io = match (save.io, io) {
            (Some((w0, b0)), Some((w1, b1))) => Some((w0 + w1, b0 + b1)),
            _ => None,
        };
    }

    /// Writes the file; `last` marks the clean end of the job.
    pub(crate) fn write(&self, last: bool) {
        let text = self.render(last);
        let tmp = self.path.with_extension("json.tmp");
        let done = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = done {
            crate::emit::err(&format!(
                "fake-trainer: warning: cannot write the probe file {}: {e}",
                self.path.display()
            ));
        }
    }

    fn render(&self, last: bool) -> String {
        let c = self.acct.counters();
        let secs = |nanos: u64| Duration::from_nanos(nanos).as_secs_f64();
        let in_ckpt: u64 = self.saves.iter().map(|s| s.alloc.empty_cache_calls).sum();
        let in_ckpt_s: u64 = self.saves.iter().map(|s| s.alloc.empty_cache_nanos).sum();
        let m = self.acct.snapshot();
        let mut out = format!(
            "{{\"schema_version\":1,\"rank\":{},\"local_rank\":{},\"pid\":{},\"final\":{last},\
             \"wall_seconds\":{},\"empty_cache\":{{\"calls\":{},\"seconds\":{},\"max_seconds\":{},\
             \"calls_in_checkpoint\":{in_ckpt},\"seconds_in_checkpoint\":{}}},\"saves\":[",
            self.rank,
            self.local_rank,
            std::process::id(),
            self.started.elapsed().as_secs_f64(),
            c.empty_cache_calls,
            secs(c.empty_cache_nanos),
            secs(c.empty_cache_max_nanos),
            secs(in_ckpt_s),
        );
        for (i, s) in self.saves.iter().enumerate() {
            let io = s.io.map_or(
                "\"wchar\":null,\"write_bytes\":null".to_owned(),
                |(w, b)| format!("\"wchar\":{w},\"write_bytes\":{b}"),
            );
            let arm = match s.arm {
                Some(Some(a)) => format!(",\"arm\":\"{a}\""),
                Some(None) => ",\"arm\":null".to_owned(),
                None => String::new(),
            };
            let [minflt, majflt, nvcsw, nivcsw] = s.usage.counts;
            let _ = write!(
                out,
                "{}{{\"function\":\"megatron.save_checkpoint\",\"start\":{},\"seconds\":{},\
                 \"iteration\":{}{arm},\"counters\":{{\"empty_cache_calls\":{},\
                 \"empty_cache_seconds\":{},\"num_alloc_retries\":0,\"num_device_alloc\":{},\
                 \"num_device_free\":{},\"num_sync_all_streams\":{},{io},\
                 \"cpu_seconds\":{},\"minor_faults\":{minflt},\"major_faults\":{majflt},\
                 \"voluntary_switches\":{nvcsw},\"involuntary_switches\":{nivcsw}}}}}",
                if i == 0 { "" } else { "," },
                s.start_s,
                s.seconds,
                s.iteration,
                s.alloc.empty_cache_calls,
                secs(s.alloc.empty_cache_nanos),
                s.alloc.device_allocs,
                s.alloc.device_frees,
                s.alloc.empty_cache_calls,
                s.usage.cpu_seconds,
            );
        }
        let io = process_io().map_or("null".to_owned(), |(w, b)| {
            format!("{{\"wchar\":{w},\"write_bytes\":{b}}}")
        });
        let _ = write!(
            out,
            "],\"memory\":{{\"t\":{},\"allocated_bytes\":{},\"peak_allocated_bytes\":{},\
             \"reserved_bytes\":{},\"peak_reserved_bytes\":{},\"num_alloc_retries\":0,\
             \"num_ooms\":0,\"num_device_alloc\":{},\"num_device_free\":{},\
             \"num_sync_all_streams\":{}}},\"allocator\":{{\"backend\":\"fake-trainer\"}},\
             \"oom_snapshot\":null,\"overhead_seconds\":0.0,\"poller_cpu_seconds\":0.0,\
             \"rebuild_cuda_tensor_calls\":0,\"io\":{io}}}",
            self.started.elapsed().as_secs_f64(),
            m.allocated,
            m.max_allocated,
            m.reserved,
            m.max_reserved,
            c.device_allocs,
            c.device_frees,
            c.empty_cache_calls,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Pool;

    #[test]
    fn a_save_window_counts_what_happened_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let acct = Arc::new(Accounting::default());
        let mut probe = Probe {
            path: dir.path().join("probe-rank0-pid1.json"),
            rank: 0,
            local_rank: 0,
            started: Instant::now(),
            acct: Arc::clone(&acct),
            saves: Vec::new(),
        };
        let mut pool = Pool::new(&acct);
        let block = pool.alloc(4096).unwrap();
        pool.free(block);
        let mark = probe.mark();
        pool.empty_cache();
        std::fs::write(dir.path().join("ckpt"), vec![0u8; 10_000]).unwrap();
        probe.saved(7, mark, Some(Some('b')));
        probe.write(true);
        let text = std::fs::read_to_string(&probe.path).unwrap();
        assert!(
            text.contains("\"iteration\":7,\"arm\":\"b\",\"counters\":{\"empty_cache_calls\":1,"),
            "{text}"
        );
        assert!(
            text.contains(
                "\"num_device_alloc\":0,\"num_device_free\":1,\"num_sync_all_streams\":1"
            ),
            "{text}"
        );
        let wchar: u64 = text
            .split("\"wchar\":")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        assert!(wchar >= 10_000, "{text}");
        assert!(text.contains("\"final\":true"), "{text}");
        assert!(text.contains("\"cpu_seconds\":"), "{text}");
    }
}
