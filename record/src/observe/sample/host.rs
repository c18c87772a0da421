//! Stage "observe": the host side of a job — resident memory summed over its process tree
//! (RSS every tick; PSS, the gated figure, through [`super::pss`]), `/dev/shm` usage and the
//! system's `MemAvailable`, driven by the sampler thread's loop.
//!
//! A tick reads one open `statm` per member (`pread` at offset 0) and one `fstatvfs`; finding
//! new members costs more and runs less often. On the 2-core VM where the benchmark ran, a
//! system call made right after a wakeup cost ~7–15 µs of CPU (cold caches) against under
//! 1 µs in a tight loop, so the per-tick work is kept to those calls.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::procfs::{kb_field, read_whole};
use super::pss::{AttachRead, PssReader, PssSchedule};
use super::timeline::{Point, Series, SeriesSummary};

/// How often the members' `children` files are read for new processes. A process is
/// counted from its first refresh on: one that starts and exits between two refreshes
/// is missed, which a training job's workers (dataloaders, checkpoint writers) do not do.
const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// How often `/proc` is listed for new members of the job's process group. Only pids not
/// seen before are read, but the listing is the costliest step (~25 µs of CPU warm, more
/// cold), so it runs once a second, and at the next tick after a member exits (its
/// children, re-parented outside the tree, are found only this way). It catches processes
/// started from threads other than a member's main thread, and ones whose parent left.
const SCAN_EVERY: Duration = Duration::from_secs(1);

/// The host side of one job.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostSummary {
    /// PSS summed over the job's process tree (a shared page counts once in all): the host
    /// figure goldgate gates.
    pub pss: Option<SeriesSummary>,
    /// Walks of the tree that read PSS, and the CPU time they took (s).
    pub pss_reads: u64,
    pub pss_read_cpu_seconds: f64,
    /// RSS summed over the job's process tree (shared pages count once per process).
    pub rss: Option<SeriesSummary>,
    /// The system-wide `MemAvailable` of `/proc/meminfo` around the job: an independent
    /// reading of what the job cost the host (other processes move it too).
    pub mem_available: Option<MemAvailableSummary>,
    /// Used bytes of `/dev/shm`; the baseline is the value before the job.
    pub shm: Option<SeriesSummary>,
    /// Most processes seen in the job's tree at once.
    pub max_processes: usize,
}

/// `MemAvailable` before the job and its lowest value while the job ran.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemAvailableSummary {
    pub baseline_bytes: u64,
    pub min_bytes: u64,
    /// When the minimum was first reached (ms since the sampler started).
    pub min_at_ms: u64,
    /// `baseline_bytes - min_bytes`, never negative.
    pub drop_bytes: u64,
}

/// `/proc/meminfo`, kept open; read every tick (~5 µs of CPU).
struct MemAvailable {
    file: File,
    baseline: u64,
    min: (u64, u64),
}

impl MemAvailable {
    fn open(buf: &mut Vec<u8>) -> Option<MemAvailable> {
        let file = File::open("/proc/meminfo").ok()?;
        let baseline = read_mem_available(&file, buf)?;
        Some(MemAvailable {
            file,
            baseline,
            min: (baseline, 0),
        })
    }

    fn sample(&mut self, t_ms: u64, buf: &mut Vec<u8>) {
        if let Some(now) = read_mem_available(&self.file, buf)
            && now < self.min.0
        {
            self.min = (now, t_ms);
        }
    }

    fn summary(&self) -> MemAvailableSummary {
        MemAvailableSummary {
            baseline_bytes: self.baseline,
            min_bytes: self.min.0,
            min_at_ms: self.min.1,
            drop_bytes: self.baseline.saturating_sub(self.min.0),
        }
    }
}

fn read_mem_available(file: &File, buf: &mut Vec<u8>) -> Option<u64> {
    let n = read_whole(file, buf).ok()?;
    mem_available_bytes(&buf[..n])
}

/// The `MemAvailable:` line of `/proc/meminfo`, in bytes.
fn mem_available_bytes(meminfo: &[u8]) -> Option<u64> {
    kb_field(meminfo, "MemAvailable:")
}

/// The host sampler's state for one job.
pub(crate) struct Host {
    read_rss: bool,
    rss: Series,
    pss: Option<PssReader>,
    schedule: PssSchedule,
    mem: Option<MemAvailable>,
    buf: Vec<u8>,
    tree: Option<ProcTree>,
    max_processes: usize,
    /// The shared-memory filesystem: an open handle spares `statvfs` its path lookup.
    shm: Option<(File, Series)>,
    warnings: Vec<String>,
}

impl Host {
    /// Takes the `/dev/shm` and `MemAvailable` baselines. With `read_rss` off (no RSS, no
    /// PSS) the tree is still followed (at the refresh rate), for the GPU sampler's
    /// per-process figures.
    pub(crate) fn start(shm_path: Option<&Path>, read_rss: bool) -> Host {
        let mut warnings = Vec::new();
        let mut buf = vec![0; 4096];
        let mem = MemAvailable::open(&mut buf);
        let pss = match read_rss.then(PssReader::start) {
            Some(Ok(reader)) => Some(reader),
            Some(Err(e)) => {
                warnings.push(format!(
                    "host PSS not sampled: cannot start its thread: {e}"
                ));
                None
            }
            None => None,
        };
        let shm = shm_path.and_then(|p| match open_fs(p) {
            Ok((dir, used)) => Some((dir, Series::new(used))),
            Err(e) => {
                warnings.push(format!("{} not sampled: {e}", p.display()));
                None
            }
        });
        Host {
            read_rss,
            rss: Series::new(0),
            pss,
            schedule: PssSchedule::default(),
            mem,
            buf,
            tree: None,
            max_processes: 0,
            shm,
            warnings,
        }
    }

    /// What reads the leader's PSS at attach; `None` when PSS is not read.
    pub(crate) fn attach_read(&self) -> Option<AttachRead> {
        self.pss.as_ref().map(PssReader::attach_read)
    }

    /// One tick. `pgid` is 0 until the job is spawned.
    pub(crate) fn sample(&mut self, now: Instant, t_ms: u64, pgid: u32) {
        if self.tree.is_none() && pgid != 0 {
            self.tree = Some(ProcTree::with_leader(pgid));
        }
        if let Some(tree) = &mut self.tree {
            let refreshed = tree.refresh_if_due(now);
            if self.read_rss || refreshed {
                let bytes = tree.read_rss();
                if self.read_rss && tree.len() > 0 {
                    self.rss.push(Point { t_ms, bytes });
                }
            }
            if let Some(pss) = &self.pss
                && tree.len() > 0
                && self
                    .schedule
                    .due(now, tree.pss_changed, tree.moved_since_mark())
            {
                tree.mark();
                pss.request(t_ms, tree.pids());
            }
            self.max_processes = self.max_processes.max(tree.len());
        }
        if let Some(mem) = &mut self.mem {
            mem.sample(t_ms, &mut self.buf);
        }
        if let Some((dir, series)) = &mut self.shm
            && let Ok(bytes) = fd_used_bytes(dir)
        {
            series.push(Point { t_ms, bytes });
        }
    }

    /// The current members' pids when membership changed since the last call.
    pub(crate) fn changed_pids(&mut self) -> Option<Vec<u32>> {
        let tree = self.tree.as_mut()?;
        tree.take_changed().then(|| tree.pids())
    }

    pub(crate) fn finish(self) -> (HostSummary, Vec<String>) {
        let mut warnings = self.warnings;
        let pss = self.pss.map(|p| {
            p.finish().unwrap_or_else(|| {
                warnings.push("the PSS thread panicked; host PSS not recorded".to_owned());
                super::pss::PssReport::default()
            })
        });
        let summary = HostSummary {
            pss_reads: pss.as_ref().map_or(0, |p| p.reads),
            pss_read_cpu_seconds: pss.as_ref().map_or(0.0, |p| p.cpu_seconds),
            pss: pss.and_then(|p| p.series),
            rss: self.rss.summary(),
            mem_available: self.mem.as_ref().map(MemAvailable::summary),
            shm: self.shm.and_then(|(_, s)| s.summary()),
            max_processes: self.max_processes,
        };
        (summary, warnings)
    }
}

struct Member {
    pid: u32,
    /// `/proc/<pid>/statm`, kept open: re-reading an open procfs file returns fresh values,
    /// and a read fails once the process is gone, even if its pid is reused.
    statm: File,
    /// `/proc/<pid>/task/<pid>/children` (absent without `CONFIG_PROC_CHILDREN`).
    children: Option<File>,
    /// RSS at the last tick, and at the last [`ProcTree::mark`] (bytes).
    rss: u64,
    rss_at_mark: u64,
}

/// The job's processes: everything in its process group, plus their descendants.
pub(crate) struct ProcTree {
    pgid: u32,
    members: Vec<Member>,
    page_size: u64,
    buf: Vec<u8>,
    text: String,
    found: Vec<u32>,
    /// Pids read once and found outside the group (forgotten when they leave `/proc`).
    outsiders: HashSet<u32>,
    present: HashSet<u32>,
    last_refresh: Option<Instant>,
    last_scan: Option<Instant>,
    /// A member exited since the last refresh.
    lost: bool,
    /// Set when membership changed since the last [`ProcTree::take_changed`].
    changed: bool,
    /// Set when membership changed since the last [`ProcTree::mark`].
    pss_changed: bool,
}

impl ProcTree {
    pub(crate) fn new(pgid: u32) -> ProcTree {
        ProcTree {
            pgid,
            members: Vec::new(),
            page_size: rustix::param::page_size() as u64,
            buf: vec![0; 4096],
            text: String::new(),
            found: Vec::new(),
            outsiders: HashSet::new(),
            present: HashSet::new(),
            last_refresh: None,
            last_scan: None,
            lost: false,
            changed: false,
            pss_changed: false,
        }
    }

    /// The tree of a group whose leader (its pid is the group's id) is a member from the
    /// start, not from the first `/proc` listing that finds it.
    pub(crate) fn with_leader(pgid: u32) -> ProcTree {
        let mut tree = ProcTree::new(pgid);
        tree.add(pgid);
        tree
    }

    /// Looks for new members when [`REFRESH_EVERY`] has passed or a member exited (listing
    /// `/proc` when [`SCAN_EVERY`] has passed or a member exited); true when it looked.
    pub(crate) fn refresh_if_due(&mut self, now: Instant) -> bool {
        let due =
            |last: Option<Instant>, every| last.is_none_or(|t| now.duration_since(t) >= every);
        if !(self.lost || due(self.last_refresh, REFRESH_EVERY)) {
            return false;
        }
        if self.lost || due(self.last_scan, SCAN_EVERY) {
            self.last_scan = Some(now);
            self.scan_proc();
        }
        self.last_refresh = Some(now);
        self.lost = false;
        self.collect_children();
        true
    }

    /// The members' summed RSS in bytes; members that are gone are dropped.
    pub(crate) fn read_rss(&mut self) -> u64 {
        let mut total = 0;
        let before = self.members.len();
        let (buf, page) = (&mut self.buf, self.page_size);
        self.members.retain_mut(|m| match m.statm.read_at(buf, 0) {
            Ok(n) if n > 0 => {
                m.rss = resident_pages(&buf[..n]) * page;
                total += m.rss;
                true
            }
            _ => false,
        });
        if self.members.len() != before {
            self.lost = true;
            self.changed = true;
            self.pss_changed = true;
        }
        total
    }

    /// RSS movement since the last [`ProcTree::mark`], summed over members in either
    /// direction (a member that grows while another shrinks still moves PSS).
    pub(crate) fn moved_since_mark(&self) -> u64 {
        self.members
            .iter()
            .map(|m| m.rss.abs_diff(m.rss_at_mark))
            .sum()
    }

    /// Remembers the current RSS and membership as read into PSS.
    pub(crate) fn mark(&mut self) {
        for m in &mut self.members {
            m.rss_at_mark = m.rss;
        }
        self.pss_changed = false;
    }

    /// Pids of the current members.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.pid).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// True once after each membership change.
    pub(crate) fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn collect_children(&mut self) {
        self.found.clear();
        for m in &self.members {
            let Some(children) = &m.children else {
                continue;
            };
            if let Ok(n) = read_whole(children, &mut self.buf) {
                let list = self.buf[..n]
                    .split(|b| b.is_ascii_whitespace())
                    .filter_map(parse_u32);
                self.found.extend(list);
            }
        }
        let found = std::mem::take(&mut self.found);
        for &pid in &found {
            self.add(pid);
        }
        self.found = found;
    }
    /// Adds every new process whose process group is the job's (the leader included).
    fn scan_proc(&mut self) {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        self.present.clear();
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| parse_u32(n.as_bytes()))
            else {
                continue;
            };
            self.present.insert(pid);
            if self.outsiders.contains(&pid) || self.members.iter().any(|m| m.pid == pid) {
                continue;
            }
            self.text.clear();
            let read = File::open(entry.path().join("stat"))
                .and_then(|mut f| f.read_to_string(&mut self.text));
            if read.is_ok() && stat_pgrp(&self.text) == Some(self.pgid) {
                self.add(pid);
            } else {
                self.outsiders.insert(pid);
            }
        }
        let present = &self.present;
        self.outsiders.retain(|pid| present.contains(pid));
    }

    fn add(&mut self, pid: u32) {
        if self.members.iter().any(|m| m.pid == pid) {
            return;
        }
        let dir = Path::new("/proc").join(pid.to_string());
        let Ok(statm) = File::open(dir.join("statm")) else {
            return;
        };
        let children = File::open(dir.join("task").join(pid.to_string()).join("children")).ok();
        self.members.push(Member {
            pid,
            statm,
            children,
            rss: 0,
            rss_at_mark: 0,
        });
        self.changed = true;
        self.pss_changed = true;
    }
}

/// Opens the filesystem at `path` (`/dev/shm`) and reads its used bytes.
fn open_fs(path: &Path) -> std::io::Result<(File, u64)> {
    let dir = File::open(path)?;
    let used = fd_used_bytes(&dir)?;
    Ok((dir, used))
}

/// Used bytes of the filesystem an open directory handle is on (`fstatvfs`).
fn fd_used_bytes(dir: &File) -> std::io::Result<u64> {
    let st = rustix::fs::fstatvfs(dir)?;
    Ok(st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize)
}

/// Second field of `statm`: resident pages.
fn resident_pages(statm: &[u8]) -> u64 {
    statm
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(parse_u32)
        .map_or(0, u64::from)
}

/// The process group from `/proc/<pid>/stat` (fields after the last `)`: state ppid pgrp).
fn stat_pgrp(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(2)?.parse().ok()
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 {
        return None;
    }
    s.iter().try_fold(0u32, |acc, b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        acc.checked_mul(10)?.checked_add(u32::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_fields() {
        assert_eq!(resident_pages(b"5120 1234 300 10 0 400 0\n"), 1234);
        assert_eq!(resident_pages(b""), 0);
        assert_eq!(
            stat_pgrp("42 (a (weird) name) S 1 4242 4242 0 -1"),
            Some(4242)
        );
        assert_eq!(stat_pgrp("garbage"), None);
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(
            (parse_u32(b"4294967296"), parse_u32(b"12a"), parse_u32(b"")),
            (None, None, None)
        );
    }

    #[test]
    fn finds_own_group_and_its_rss() {
        let me = std::process::id();
        let pgid = rustix::process::getpgid(None)
            .unwrap()
            .as_raw_nonzero()
            .get() as u32;
        let mut tree = ProcTree::new(pgid);
        assert!(tree.refresh_if_due(Instant::now()));
        let rss = tree.read_rss();
        assert!(tree.pids().contains(&me));
        assert!(rss > 0, "{} members, {rss} bytes", tree.len());
        assert!(tree.take_changed() && !tree.take_changed());
    }

    fn sleeper(group: i32) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(group)
            .spawn()
            .unwrap()
    }

    #[test]
    fn refreshes_on_schedule_and_after_a_member_exits() {
        let mut leader = sleeper(0);
        let mut tree = ProcTree::new(leader.id());
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(tree.refresh_if_due(t0), "the first tick refreshes");
        assert!(tree.read_rss() > 0);
        assert_eq!(tree.pids(), [leader.id()]);
        assert!(!tree.refresh_if_due(at(50)), "not due within REFRESH_EVERY");
        // Our child, not the leader's: only the /proc listing (once a second) finds it.
        let mut other = sleeper(leader.id() as i32);
        assert!(tree.refresh_if_due(at(150)));
        assert_eq!(tree.len(), 1, "listing /proc is not due yet");
        assert!(tree.refresh_if_due(at(1000)));
        assert_eq!(tree.len(), 2);
        leader.kill().unwrap();
        leader.wait().unwrap();
        tree.read_rss();
        assert_eq!(tree.pids(), [other.id()]);
        assert!(
            tree.refresh_if_due(at(1010)),
            "an exit refreshes at the next tick"
        );
        assert!(!tree.refresh_if_due(at(1020)));
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn the_leader_is_a_member_before_any_listing() {
        let mut leader = sleeper(0);
        let tree = ProcTree::with_leader(leader.id());
        assert_eq!(tree.pids(), [leader.id()]);
        leader.kill().unwrap();
        leader.wait().unwrap();
    }

    #[test]
    fn reads_whole_files_past_the_buffer() {
        let mut buf = vec![0; 4];
        let file = File::open("/proc/self/status").unwrap();
        let n = read_whole(&file, &mut buf).unwrap();
        assert!(n > 100 && n < buf.len(), "{n} of {}", buf.len());
        assert!(buf[..n].ends_with(b"\n"));
    }

    #[test]
    fn shm_usage_is_readable() {
        assert!(open_fs(Path::new("/dev/shm")).is_ok());
        assert!(open_fs(Path::new("/no/such/dir")).is_err());
    }

    #[test]
    fn host_records_rss_only_when_asked() {
        let pgid = rustix::process::getpgid(None)
            .unwrap()
            .as_raw_nonzero()
            .get() as u32;
        for read_rss in [true, false] {
            let mut host = Host::start(Some(Path::new("/dev/shm")), read_rss);
            let t0 = Instant::now();
            host.sample(t0, 0, 0);
            host.sample(t0 + Duration::from_millis(10), 10, pgid);
            host.sample(t0 + Duration::from_millis(20), 20, pgid);
            assert!(
                host.changed_pids()
                    .is_some_and(|p| p.contains(&std::process::id()))
            );
            let (summary, warnings) = host.finish();
            assert_eq!(summary.rss.map(|r| r.samples), read_rss.then_some(2));
            assert_eq!(summary.shm.map(|s| s.samples), Some(3));
            assert!(summary.max_processes >= 1 && warnings.is_empty());
        }
    }
}
