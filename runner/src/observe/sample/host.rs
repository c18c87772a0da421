//! Stage "observe": the host side of a job — resident memory summed over its process tree
//! (read from `/proc` with files kept open and buffers reused) and `/dev/shm` usage.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often `/proc` is listed for new members of the job's process group. Only pids not
/// seen before are read, but listing `/proc` is still the costliest part of sampling (it
/// was ~1 % of a core at 100 ms), so it runs once a second. Between scans, children of
/// members' main threads are found every tick through their `children` files; the scan
/// catches processes started from other threads (and ones that changed parent).
const SCAN_EVERY: Duration = Duration::from_secs(1);

struct Member {
    pid: u32,
    /// `/proc/<pid>/statm`, kept open: re-reading an open procfs file returns fresh values,
    /// and a read fails once the process is gone, even if its pid is reused.
    statm: File,
    /// `/proc/<pid>/task/<pid>/children` (absent without `CONFIG_PROC_CHILDREN`).
    children: Option<File>,
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
    last_scan: Option<Instant>,
    /// Set when membership changed since the last [`ProcTree::take_changed`].
    changed: bool,
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
            last_scan: None,
            changed: false,
        }
    }

    /// Finds new members, drops dead ones and returns the summed RSS in bytes.
    pub(crate) fn sample(&mut self, now: Instant) -> u64 {
        if self
            .last_scan
            .is_none_or(|t| now.duration_since(t) >= SCAN_EVERY)
        {
            self.last_scan = Some(now);
            self.scan_proc();
        }
        self.collect_children();
        let mut total = 0;
        let before = self.members.len();
        let (buf, page) = (&mut self.buf, self.page_size);
        self.members.retain(|m| match m.statm.read_at(buf, 0) {
            Ok(n) if n > 0 => {
                total += resident_pages(&buf[..n]) * page;
                true
            }
            _ => false,
        });
        self.changed |= self.members.len() != before;
        total
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
            if let Ok(n) = children.read_at(&mut self.buf, 0) {
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
        });
        self.changed = true;
    }
}

/// Used bytes of the filesystem at `path` (`/dev/shm`), from `statvfs`.
pub(crate) fn fs_used_bytes(path: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(path)?;
    Ok(st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize)
}

/// Used bytes of the filesystem an open directory handle is on (`fstatvfs`).
pub(crate) fn fd_used_bytes(dir: &File) -> std::io::Result<u64> {
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
        let rss = tree.sample(Instant::now());
        assert!(tree.pids().contains(&me));
        assert!(rss > 0, "{} members, {rss} bytes", tree.len());
        assert!(tree.take_changed() && !tree.take_changed());
    }

    #[test]
    fn shm_usage_is_readable() {
        let used = fs_used_bytes(Path::new("/dev/shm"));
        assert!(used.is_ok(), "{used:?}");
        assert!(fs_used_bytes(Path::new("/no/such/dir")).is_err());
        let dir = File::open("/dev/shm").unwrap();
        assert!(fd_used_bytes(&dir).is_ok());
    }
}
