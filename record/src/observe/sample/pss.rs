//! Stage "observe": the proportional set size (PSS) of the job's process tree, the host figure
//! goldgate gates. A shared page counts `1/n` in each of the `n` processes that map it, so the
//! sum over the tree is what the job costs the host, where summed RSS counts a page shared by
//! a parent and its forked workers once per process.
//!
//! The kernel computes PSS by walking the page tables (`/proc/PID/smaps_rollup`): ~10 ms of CPU
//! per GiB resident on the 2-core development VM, 7.2 ms for a Megatron rank on the H200 (RSS
//! through `statm`: 1–5 µs). So the reads run on a thread of their own, away from the 10 ms
//! GPU/host ticks, and only when [`PssSchedule`] says so: when the tree's membership changed,
//! when the members' RSS moved by [`MOVE_THRESHOLD`] since the last read (at most every
//! [`MIN_GAP`]), and every [`EVERY`] otherwise. Each read sums every member, so a point is one
//! consistent walk of the tree. The reads and the thread's CPU time are counted and recorded.

use std::collections::HashMap;
use std::fs::File;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};

use super::timeline::{Point, Series, SeriesSummary};

/// Summed RSS movement (any member, either direction) that asks for a new read.
pub(crate) const MOVE_THRESHOLD: u64 = 64 << 20;
/// Shortest time between two reads the RSS movement asks for.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(100);
/// Longest time between two reads.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// When to read: the decision, apart from the reading, so it can be tested.
#[derive(Debug, Default)]
pub(crate) struct PssSchedule {
    last: Option<Instant>,
}

impl PssSchedule {
    /// Whether to read now: `changed` (a member appeared or left since the last read), `moved`
    /// (bytes of RSS movement summed over members since the last read).
    pub(crate) fn due(&mut self, now: Instant, changed: bool, moved: u64) -> bool {
        let since = self.last.map(|t| now.saturating_duration_since(t));
        let due = match since {
            None => true,
            Some(since) => {
                changed || since >= EVERY || (moved >= MOVE_THRESHOLD && since >= MIN_GAP)
            }
        };
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// What the PSS thread recorded.
#[derive(Debug, Default)]
pub(crate) struct PssReport {
    pub(crate) series: Option<SeriesSummary>,
    /// Walks of the tree (each reads every member's `smaps_rollup`).
    pub(crate) reads: u64,
    /// CPU time the thread spent reading and parsing (s).
    pub(crate) cpu_seconds: f64,
}

/// What the PSS thread is sent.
pub(crate) enum Request {
    /// A read of the tree: its members when the read was asked for.
    Read { t_ms: u64, pids: Vec<u32> },
    /// A read made elsewhere (the leader's, at attach), with the CPU time it took; `None`
    /// when nothing was readable.
    Made {
        t_ms: u64,
        bytes: Option<u64>,
        cpu: Duration,
    },
}

/// Reads the job's leader at once, in the calling thread, and hands the reading to the PSS
/// thread: a job that ends before the sampler's first tick still has its PSS sampled. It is
/// sent before the sampler learns the group, so it comes before every tick's read.
#[derive(Clone)]
pub(crate) struct AttachRead(Sender<Request>);

impl AttachRead {
    pub(crate) fn read(&self, t_ms: u64, pid: u32) {
        let start = thread_cpu();
        let mut files = HashMap::new();
        let bytes = read_member(&mut files, pid, &mut vec![0u8; 4096]);
        let cpu = thread_cpu().saturating_sub(start);
        let _ = self.0.send(Request::Made { t_ms, bytes, cpu });
    }
}

/// The running PSS thread.
pub(crate) struct PssReader {
    tx: Sender<Request>,
    thread: JoinHandle<PssReport>,
}

impl PssReader {
    pub(crate) fn start() -> std::io::Result<PssReader> {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("goldgate-pss".to_owned())
            .spawn(move || serve(&rx))?;
        Ok(PssReader { tx, thread })
    }

    /// Asks for a read of `pids` (returns at once; requests that pile up are merged).
    pub(crate) fn request(&self, t_ms: u64, pids: Vec<u32>) {
        let _ = self.tx.send(Request::Read { t_ms, pids });
    }

    /// What [`Sampler::attach`](super::Sampler::attach) reads the leader through.
    pub(crate) fn attach_read(&self) -> AttachRead {
        AttachRead(self.tx.clone())
    }

    /// Waits for the pending read and returns what was recorded; `None` if the thread panicked.
    pub(crate) fn finish(self) -> Option<PssReport> {
        drop(self.tx);
        self.thread.join().ok()
    }
}

fn serve(rx: &Receiver<Request>) -> PssReport {
    let mut files: HashMap<u32, File> = HashMap::new();
    let mut series = Series::new(0);
    let mut buf = vec![0u8; 4096];
    let mut report = PssReport::default();
    let cpu_start = thread_cpu();
    let mut elsewhere = Duration::ZERO;
    while let Ok(first) = rx.recv() {
        // Only the newest read matters: it has the current members. A reading made elsewhere
        // is older than any read after it, so it is kept in its place.
        let mut read = None;
        for request in std::iter::once(first).chain(rx.try_iter()) {
            match request {
                Request::Read { t_ms, pids } => read = Some((t_ms, pids)),
                Request::Made { t_ms, bytes, cpu } => {
                    report.reads += 1;
                    elsewhere += cpu;
                    if let Some(bytes) = bytes {
                        series.push(Point { t_ms, bytes });
                    }
                }
            }
        }
        let Some((t_ms, pids)) = read else {
            continue;
        };
        files.retain(|pid, _| pids.contains(pid));
        let readable: Vec<u64> = pids
            .iter()
            .filter_map(|&pid| read_member(&mut files, pid, &mut buf))
            .collect();
        report.reads += 1;
        // Nothing readable (every member gone): no point, never a 0-byte one.
        if !readable.is_empty() {
            series.push(Point {
                t_ms,
                bytes: readable.iter().sum(),
            });
        }
    }
    report.cpu_seconds = (thread_cpu() - cpu_start + elsewhere).as_secs_f64();
    report.series = series.summary();
    report
}

/// One member's PSS in bytes. The file stays open: a read fails once the process is gone, even
/// if its pid is reused. A process that cannot be read (gone, or not ours) counts 0.
fn read_member(files: &mut HashMap<u32, File>, pid: u32, buf: &mut Vec<u8>) -> Option<u64> {
    let file = match files.entry(pid) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(File::open(format!("/proc/{pid}/smaps_rollup")).ok()?)
        }
    };
    match super::procfs::read_whole(file, buf) {
        Ok(n) if n > 0 => pss_bytes(&buf[..n]),
        _ => {
            files.remove(&pid);
            None
        }
    }
}

/// The `Pss:` line of `smaps_rollup`, in bytes (the kernel prints kB).
pub(crate) fn pss_bytes(rollup: &[u8]) -> Option<u64> {
    super::procfs::kb_field(rollup, "Pss:")
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_pss_line() {
        let rollup = b"5557a46c0000-7fffe692b000 ---p 00000000 00:00 0  [rollup]\n\
            Rss:             1062108 kB\nPss:             1060044 kB\nPss_Dirty: 1 kB\n";
        assert_eq!(pss_bytes(rollup), Some(1_060_044 * 1024));
        assert_eq!(pss_bytes(b"Rss: 4 kB\n"), None);
        assert_eq!(pss_bytes(b"Pss: x kB\n"), None);
    }

    #[test]
    fn schedule_reads_on_change_on_movement_and_once_a_second() {
        let mut s = PssSchedule::default();
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(s.due(t0, false, 0), "the first tick reads");
        assert!(!s.due(at(50), false, 0));
        assert!(s.due(at(60), true, 0), "a new member reads at once");
        assert!(
            !s.due(at(100), false, MOVE_THRESHOLD),
            "movement waits for MIN_GAP"
        );
        assert!(s.due(at(160), false, MOVE_THRESHOLD));
        assert!(!s.due(at(300), false, MOVE_THRESHOLD - 1));
        assert!(!s.due(at(1159), false, 0));
        assert!(s.due(at(1160), false, 0), "EVERY after the last read");
    }

    #[test]
    fn a_read_that_finds_no_member_leaves_no_point() {
        let reader = PssReader::start().unwrap();
        reader.request(5, vec![u32::MAX]);
        let report = reader.finish().unwrap();
        assert_eq!(report.reads, 1);
        assert_eq!(report.series, None, "a 0-byte point was recorded");
    }

    #[test]
    fn the_reading_at_attach_is_a_point_before_the_first_read() {
        let reader = PssReader::start().unwrap();
        reader.attach_read().read(1, std::process::id());
        reader.attach_read().read(2, u32::MAX);
        reader.request(7, vec![u32::MAX]);
        let report = reader.finish().unwrap();
        let series = report.series.unwrap();
        assert_eq!(report.reads, 3);
        assert_eq!(series.samples, 1, "{series:?}");
        assert_eq!(series.timeline[0].t_ms, 1);
        assert!(series.peak_bytes > 1 << 20, "{series:?}");
    }

    #[test]
    fn reads_our_own_pss_and_counts_the_reads() {
        let reader = PssReader::start().unwrap();
        reader.request(5, vec![std::process::id()]);
        reader.request(6, vec![std::process::id(), u32::MAX]);
        let report = reader.finish().unwrap();
        let series = report.series.clone().unwrap();
        assert!(report.reads >= 1 && report.reads <= 2, "{report:?}");
        assert!(series.peak_bytes > 1 << 20, "{series:?}");
        assert!(report.cpu_seconds > 0.0);
    }
}
