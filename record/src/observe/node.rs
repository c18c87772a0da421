//! Stage "observe": the node's I/O state around one job — what moves checkpoint save times
//! besides the code under test: dirty and writeback pages in the page cache at the
//! start and their peaks, the checkpoint folder's filesystem, the node's block I/O and I/O
//! pressure while the job ran. The figures go into the job's fingerprint, so a slow job can be
//! told from a slow node, and `goldgate power` can relate the noise between jobs to them.
//!
//! A thread reads `/proc/meminfo` every [`EVERY`]: 15 µs of CPU a read from Python on the
//! development VM, plus a wakeup (26-30 µs there), so about 0.05 % of a core; at the memory
//! sampler's 10 ms it would cost ten times more for a figure that moves at writeback speed.
//! `/proc/diskstats` and `/proc/pressure/io` are read at the start and the end only. Where a
//! file is missing (no PSI in the kernel, a container without `/proc/diskstats`), its fields are
//! `null`, never zero.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the page-cache figures are read while a job runs.
pub(crate) const EVERY: Duration = Duration::from_millis(100);

/// The node's I/O state around one job: the schema crate's type (`results.json` keeps it in
/// the fingerprint).
use goldgate_schema::NodeIo;

/// Counters read at the start and the end of a job.
#[derive(Clone, Debug, Default, PartialEq)]
struct Counters {
    disks: Option<Vec<Disk>>,
    pressure: Option<(u64, Option<u64>)>,
}

/// One whole disk's cumulative counters.
#[derive(Clone, Debug, PartialEq)]
struct Disk {
    name: String,
    read_sectors: u64,
    write_sectors: u64,
    discard_sectors: u64,
    busy_ms: u64,
}

/// The watch over one job; [`NodeWatch::finish`] stops it and gives the figures.
pub(crate) struct NodeWatch {
    stop: Sender<()>,
    thread: Option<JoinHandle<(Option<u64>, Option<u64>)>>,
    start: Counters,
    io: NodeIo,
}

/// Starts watching; call just before the job is spawned. `checkpoints` is the folder the job
/// saves to (created already). `settle` and `settle_seconds` say what was done before.
pub(crate) fn watch(checkpoints: &Path, settle: &str, settle_seconds: Option<f64>) -> NodeWatch {
    let cache = read_file("/proc/meminfo").map(|t| page_cache(&t));
    let (dirty, writeback) = cache.unwrap_or((None, None));
    let io = NodeIo {
        boot_id: read_file("/proc/sys/kernel/random/boot_id").map(|t| t.trim().to_owned()),
        settle: settle.to_owned(),
        settle_seconds,
        checkpoint_fs: filesystem(checkpoints),
        dirty_start_bytes: dirty,
        dirty_peak_bytes: dirty,
        writeback_start_bytes: writeback,
        writeback_peak_bytes: writeback,
        ..NodeIo::default()
    };
    let (stop, stopped) = mpsc::channel::<()>();
    // Without a thread the start values stand as the peaks.
    let thread = std::thread::Builder::new()
        .name("goldgate-node-io".into())
        .spawn(move || peaks(&stopped, dirty, writeback))
        .ok();
    NodeWatch {
        stop,
        thread,
        start: counters(),
        io,
    }
}

impl NodeWatch {
    /// Stops the thread and returns the job's figures.
    pub(crate) fn finish(mut self) -> NodeIo {
        let _ = self.stop.send(());
        if let Some((dirty, writeback)) = self.thread.take().and_then(|t| t.join().ok()) {
            self.io.dirty_peak_bytes = max(self.io.dirty_peak_bytes, dirty);
            self.io.writeback_peak_bytes = max(self.io.writeback_peak_bytes, writeback);
        }
        deltas(&mut self.io, &self.start, &counters());
        self.io
    }
}

fn max(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.max(b)
}

/// The sampling loop: the highest `Dirty` and `Writeback` until told to stop.
fn peaks(
    stopped: &mpsc::Receiver<()>,
    mut dirty: Option<u64>,
    mut writeback: Option<u64>,
) -> (Option<u64>, Option<u64>) {
    loop {
        match stopped.recv_timeout(EVERY) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return (dirty, writeback),
        }
        if let Some((d, w)) = read_file("/proc/meminfo").map(|t| page_cache(&t)) {
            dirty = max(dirty, d);
            writeback = max(writeback, w);
        }
    }
}

fn read_file(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn counters() -> Counters {
    Counters {
        disks: read_file("/proc/diskstats").map(|t| disks(&t, is_whole_disk)),
        pressure: read_file("/proc/pressure/io").and_then(|t| pressure(&t)),
    }
}

/// Fills the disk and pressure fields from counters read at the start and the end.
fn deltas(io: &mut NodeIo, start: &Counters, end: &Counters) {
    if let (Some(a), Some(b)) = (&start.disks, &end.disks) {
        let pairs: Vec<(&Disk, &Disk)> = b
            .iter()
            .filter_map(|e| Some((a.iter().find(|s| s.name == e.name)?, e)))
            .collect();
        let sum = |f: fn(&Disk) -> u64| {
            pairs
                .iter()
                .map(|(s, e)| f(e).saturating_sub(f(s)))
                .sum::<u64>()
        };
        io.disk_read_bytes = Some(sum(|d| d.read_sectors) * 512);
        io.disk_write_bytes = Some(sum(|d| d.write_sectors) * 512);
        io.disk_discard_bytes = Some(sum(|d| d.discard_sectors) * 512);
        io.disk_busy_ms = pairs
            .iter()
            .map(|(s, e)| e.busy_ms.saturating_sub(s.busy_ms))
            .max();
    }
    if let (Some((some0, full0)), Some((some1, full1))) = (start.pressure, end.pressure) {
        io.io_pressure_some_us = Some(some1.saturating_sub(some0));
        io.io_pressure_full_us = full0.zip(full1).map(|(a, b)| b.saturating_sub(a));
    }
}

/// `Dirty` and `Writeback` of `/proc/meminfo`, in bytes.
fn page_cache(meminfo: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        meminfo.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib * 1024)
        })
    };
    (field("Dirty"), field("Writeback"))
}

/// The disks of `/proc/diskstats` that `keep` accepts (fields: major minor name, then reads,
/// merged, sectors read, ms, writes, merged, sectors written, ms, in flight, busy ms, weighted
/// ms, and since Linux 4.18 discards, merged, sectors discarded, ms).
fn disks(text: &str, keep: fn(&str) -> bool) -> Vec<Disk> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let name = *f.get(2)?;
            if !keep(name) {
                return None;
            }
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            Some(Disk {
                name: name.to_owned(),
                read_sectors: n(5)?,
                write_sectors: n(9)?,
                busy_ms: n(12)?,
                discard_sectors: n(16).unwrap_or(0),
            })
        })
        .collect()
}

/// Whole physical (or virtual-machine) disks: listed in `/sys/block`, which holds no
/// partitions; loop, RAM and device-mapper/RAID devices are left out, as their I/O is counted
/// again on the disks below them.
fn is_whole_disk(name: &str) -> bool {
    const STACKED: [&str; 5] = ["loop", "ram", "zram", "dm-", "md"];
    !STACKED.iter().any(|p| name.starts_with(p)) && Path::new("/sys/block").join(name).exists()
}

/// `some` and `full` totals (µs) of `/proc/pressure/io`.
fn pressure(text: &str) -> Option<(u64, Option<u64>)> {
    let total = |kind: &str| {
        text.lines()
            .find(|l| l.starts_with(kind))?
            .split_whitespace()
            .find_map(|w| w.strip_prefix("total="))?
            .parse::<u64>()
            .ok()
    };
    Some((total("some")?, total("full")))
}

/// The filesystem holding `dir`, by `statfs` magic number.
fn filesystem(dir: &Path) -> Option<String> {
    let st = rustix::fs::statfs(dir).ok()?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    Some(fs_name(st.f_type as u64))
}

/// A filesystem's name from its magic number (`linux/magic.h` and the filesystems' sources).
fn fs_name(magic: u64) -> String {
    let name = match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0x0BD0_0BD0 => "lustre",
        0x4750_4653 => "gpfs",
        0x2FC1_2FC1 => "zfs",
        0x00C3_6400 => "ceph",
        0xFE53_4D42 => "smb2",
        0xFF53_4D42 => "cifs",
        0x1983_0326 => "beegfs",
        0x7371_7368 => "squashfs",
        0x0102_1997 => "9p",
        _ => return format!("0x{magic:x}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISKSTATS: &str = "\
 253       0 vda 13000 10 2000000 5000 40000 900 8000000 60000 0 30000 70000 100 0 4096 20
 253       1 vda1 12000 10 1900000 4000 39000 900 7900000 59000 0 29000 69000 100 0 4096 20
   7       0 loop0 10 0 80 1 0 0 0 0 0 1 1 0 0 0 0
";

    #[test]
    fn meminfo_fields_are_read_in_bytes() {
        let text = "MemTotal:       131000000 kB\nDirty:              12 kB\nWriteback:           4 kB\nWritebackTmp:        0 kB\n";
        assert_eq!(page_cache(text), (Some(12 * 1024), Some(4 * 1024)));
        assert_eq!(page_cache("MemTotal: 1 kB\n"), (None, None));
    }

    #[test]
    fn diskstats_keep_whole_disks_and_count_deltas() {
        let whole = |n: &str| n == "vda";
        let start = Counters {
            disks: Some(disks(DISKSTATS, whole)),
            pressure: pressure(
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=400\n",
            ),
        };
        let later = DISKSTATS.replace("8000000 60000 0 30000", "8002048 60000 0 30250");
        let end = Counters {
            disks: Some(disks(&later, whole)),
            pressure: pressure(
                "some avg10=1.00 avg60=0.00 avg300=0.00 total=6000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=900\n",
            ),
        };
        let mut io = NodeIo::default();
        deltas(&mut io, &start, &end);
        assert_eq!(io.disk_write_bytes, Some(2048 * 512));
        assert_eq!(
            (io.disk_read_bytes, io.disk_discard_bytes),
            (Some(0), Some(0))
        );
        assert_eq!(io.disk_busy_ms, Some(250));
        assert_eq!(
            (io.io_pressure_some_us, io.io_pressure_full_us),
            (Some(5000), Some(500))
        );
        assert_eq!(start.disks.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn missing_files_leave_null_not_zero() {
        let mut io = NodeIo::default();
        deltas(&mut io, &Counters::default(), &Counters::default());
        assert_eq!(io, NodeIo::default());
        assert_eq!(pressure("garbage"), None);
    }

    #[test]
    fn filesystems_are_named() {
        assert_eq!(fs_name(0xEF53), "ext4");
        assert_eq!(fs_name(0x0102_1994), "tmpfs");
        assert_eq!(fs_name(0x1234), "0x1234");
        // The folder the tests run in has some filesystem.
        assert!(filesystem(Path::new(".")).is_some());
    }

    #[test]
    fn a_watch_over_this_node_reads_its_page_cache() {
        let w = watch(Path::new("."), "none", None);
        let io = w.finish();
        assert_eq!(io.settle, "none");
        if Path::new("/proc/meminfo").exists() {
            assert!(io.dirty_peak_bytes >= io.dirty_start_bytes && io.dirty_start_bytes.is_some());
        }
    }
}
