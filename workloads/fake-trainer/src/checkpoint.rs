//! Checkpointing: real files, fsynced, written in line (sync) or by a persistent background worker
//! (async), optionally staged through `/dev/shm`. Prints Megatron's checkpoint lines, the before/after
//! memory reports and the `save-checkpoint` timer with the measured blocking time.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::args::{Config, SaveMode};
use crate::emit;
use crate::format::{self, Stamp, TimingOption};
use crate::memory::{Accounting, AllocError, Buffer};
use crate::probe;

/// Megatron's tracker file: the last complete iteration, read by `--load`.
pub(crate) const TRACKER: &str = "latest_checkpointed_iteration.txt";

#[derive(Debug)]
pub(crate) enum CkptError {
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    Alloc(AllocError),
    WorkerGone,
    BadTracker {
        path: PathBuf,
        content: String,
    },
}

impl fmt::Display for CkptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CkptError::Io { op, path, source } => {
                write!(f, "cannot {op} {}: {source}", path.display())
            }
            CkptError::Alloc(e) => write!(
                f,
                "cannot allocate a {} byte checkpoint staging buffer",
                e.bytes
            ),
            CkptError::BadTracker { path, content } => write!(
                f,
                "invalid tracker file {}: '{content}' is not an iteration number",
                path.display()
            ),
            CkptError::WorkerGone => {
                f.write_str("the async checkpoint worker stopped unexpectedly")
            }
        }
    }
}

fn io_err(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CkptError {
    let path = path.to_path_buf();
    move |source| CkptError::Io { op, path, source }
}

/// A staged checkpoint. Under async saves the persistent worker keeps its staging buffer (host
/// memory, or a file in `/dev/shm`) between saves, which is why Megatron's later async saves block
/// far less than the first: only the first pays for allocating (faulting in) the staging pages.
enum Staging {
    Memory(Buffer),
    Shm(File),
}

/// A finished async save: its result, the staging buffer handed back for the next save, and
/// what the worker wrote for it (`wchar`, `write_bytes` of the worker's thread).
struct Done {
    iteration: u64,
    result: Result<(), CkptError>,
    staging: Staging,
    written: Option<(u64, u64)>,
}

/// What the worker wrote for one async save, for the probe to add to that save.
pub(crate) type Written = (u64, Option<(u64, u64)>);

struct Job {
    iteration: u64,
    staging: Staging,
    done: Sender<Done>,
}

/// What every save needs to know, shared with the worker thread.
#[derive(Clone)]
struct Target {
    dir: PathBuf,
    format: String,
    new_format: bool,
    /// Simulated slow storage, added to every shard write.
    slow_write: Duration,
    /// Checkpoint size.
    bytes: u64,
    /// The `/dev/shm` staging file of async saves with `--async-ckpt-use-cpu-shm`.
    shm_path: PathBuf,
}

pub(crate) struct Saver {
    target: Target,
    mode: SaveMode,
    timing: TimingOption,
    slow_save: Duration,
    ckpt_bytes: usize,
    acct: Arc<Accounting>,
    worker: Option<(Sender<Job>, JoinHandle<()>)>,
    pending: Option<Receiver<Done>>,
    /// The async staging buffer while no save holds it.
    cache: Option<Staging>,
    /// Async saves finished since the caller last asked ([`Saver::take_written`]).
    written: Vec<Written>,
}

impl Saver {
    pub(crate) fn new(cfg: &Config, dir: &Path, acct: &Arc<Accounting>) -> Saver {
        Saver {
            target: Target {
                dir: dir.to_path_buf(),
                format: cfg.ckpt_format.clone(),
                new_format: !cfg.old_format,
                slow_write: Duration::from_millis(cfg.slow_write_ms),
                bytes: cfg.ckpt_mb << 20,
                shm_path: PathBuf::from(format!(
                    "/dev/shm/fake-trainer-{}-staging",
                    std::process::id()
                )),
            },
            mode: cfg.save_mode,
            timing: cfg.timing,
            slow_save: Duration::from_millis(cfg.slow_save_ms),
            ckpt_bytes: (cfg.ckpt_mb as usize) << 20,
            acct: Arc::clone(acct),
            worker: None,
            pending: None,
            cache: None,
            written: Vec::new(),
        }
    }

    fn stamp(&self) -> Option<Stamp> {
        self.target.new_format.then(Stamp::now)
    }

    /// Megatron's `save_checkpoint_and_time`: returns the blocking time, which the caller excludes
    /// from the iteration-time interval as Megatron does.
    pub(crate) fn save(&mut self, iteration: u64, model: &[u8]) -> Result<Duration, CkptError> {
        let mem = |acct: &Accounting, when: &str| {
            let name = format!("({when} save_checkpoint for iteration {iteration})");
            emit::out(&format::memory_line(&name, &acct.snapshot()));
        };
        mem(&self.acct, "before");
        let start = Instant::now();
        self.save_blocking(iteration, model)?;
        let blocking = start.elapsed();
        mem(&self.acct, "after");
        let ms = blocking.as_secs_f64() * 1000.0;
        let new = self.target.new_format;
        emit::out(&format::timer_block(
            self.timing,
            new,
            "save-checkpoint",
            ms,
        ));
        Ok(blocking)
    }

    /// The part of `save_checkpoint` the training loop waits for.
    fn save_blocking(&mut self, iteration: u64, model: &[u8]) -> Result<(), CkptError> {
        self.wait_previous(true)?;
        let dir = self.target.dir.display().to_string();
        let fmt = &self.target.format;
        emit::out(&format::saving_line(
            self.stamp().as_ref(),
            iteration,
            &dir,
            fmt,
        ));
        // The planted regression sits in the blocking path, like the `empty_cache()` call Megatron
        // once had in its save path.
        thread::sleep(self.slow_save);
        match self.mode {
            SaveMode::Sync => {
                // torch_dist's synchronous save copies into fresh CPU tensors and frees them.
                let mut staging =
                    Buffer::fresh(&self.acct, self.ckpt_bytes).map_err(CkptError::Alloc)?;
                copy_cyclic_from(model, 0, staging.bytes_mut());
                write_checkpoint(&self.target, iteration, &mut staging.bytes())?;
                drop(staging);
                emit::out(&format::saved_line(self.stamp().as_ref(), iteration, &dir));
            }
            SaveMode::Async { shm } => {
                let staging = self.stage(shm, model)?;
                self.schedule(iteration, staging)?;
                emit::out(&format::scheduled_line(
                    self.stamp().as_ref(),
                    iteration,
                    &dir,
                ));
            }
        }
        Ok(())
    }

    /// Waits for the previous async save (with Megatron's warning when a new save must wait) and
    /// takes its staging buffer back.
    fn wait_previous(&mut self, warn: bool) -> Result<(), CkptError> {
        let Some(rx) = self.pending.take() else {
            return Ok(());
        };
        let done = match rx.try_recv() {
            Ok(done) => done,
            Err(TryRecvError::Disconnected) => return Err(CkptError::WorkerGone),
            Err(TryRecvError::Empty) => {
                if warn {
                    emit::out(format::PREVIOUS_SAVE_WARNING);
                }
                rx.recv().map_err(|_| CkptError::WorkerGone)?
            }
        };
        self.finished(done)
    }

    /// Takes a finished async save's staging buffer back and keeps what it wrote.
    fn finished(&mut self, done: Done) -> Result<(), CkptError> {
        self.cache = Some(done.staging);
        self.written.push((done.iteration, done.written));
        done.result
    }

    /// What the worker wrote for each async save finished since the last call, by iteration.
    pub(crate) fn take_written(&mut self) -> Vec<Written> {
        std::mem::take(&mut self.written)
    }

    /// Surfaces a finished async save's error without blocking (Megatron's `maybe_finalize_async_save`).
    pub(crate) fn poll(&mut self) -> Result<(), CkptError> {
        let Some(rx) = &self.pending else {
            return Ok(());
        };
        match rx.try_recv() {
            Err(TryRecvError::Empty) => Ok(()),
            Err(TryRecvError::Disconnected) => Err(CkptError::WorkerGone),
            Ok(done) => {
                self.pending = None;
                self.finished(done)
            }
        }
    }

    /// Waits for the last async save and stops the worker; returns what the worker wrote for
    /// the saves not yet taken.
    pub(crate) fn finish(mut self) -> Result<Vec<Written>, CkptError> {
        let result = self.wait_previous(false);
        if let Some((jobs, handle)) = self.worker.take() {
            drop(jobs);
            handle.join().map_err(|_| CkptError::WorkerGone)?;
        }
        result.map(|()| self.take_written())
    }

    /// Copies the model into the cached staging buffer, creating it on the first save.
    fn stage(&mut self, shm: bool, model: &[u8]) -> Result<Staging, CkptError> {
        match (self.cache.take(), shm) {
            (Some(Staging::Memory(mut buf)), false) => {
                copy_cyclic_from(model, 0, buf.bytes_mut());
                Ok(Staging::Memory(buf))
            }
            (_, false) => {
                let mut buf =
                    Buffer::fresh(&self.acct, self.ckpt_bytes).map_err(CkptError::Alloc)?;
                copy_cyclic_from(model, 0, buf.bytes_mut());
                Ok(Staging::Memory(buf))
            }
            (Some(Staging::Shm(file)), true) => self.fill_shm(file, model),
            (_, true) => {
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&self.target.shm_path)
                    .map_err(io_err("create", &self.target.shm_path))?;
                self.fill_shm(file, model)
            }
        }
    }

    /// Writes the checkpoint bytes into the `/dev/shm` file in 1 MiB chunks, from offset 0.
    fn fill_shm(&self, file: File, model: &[u8]) -> Result<Staging, CkptError> {
        let mut chunk = vec![0u8; (1 << 20).min(self.ckpt_bytes.max(1))];
        let mut offset = 0;
        while offset < self.ckpt_bytes {
            let n = (self.ckpt_bytes - offset).min(chunk.len());
            copy_cyclic_from(model, offset, &mut chunk[..n]);
            file.write_all_at(&chunk[..n], offset as u64)
                .map_err(io_err("write", &self.target.shm_path))?;
            offset += n;
        }
        Ok(Staging::Shm(file))
    }

    fn schedule(&mut self, iteration: u64, staging: Staging) -> Result<(), CkptError> {
        if self.worker.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            let target = self.target.clone();
            let handle = thread::Builder::new()
                .name("ckpt-worker".into())
                .spawn(move || worker(&target, &rx))
                .map_err(io_err("start the checkpoint worker for", &self.target.dir))?;
            self.worker = Some((tx, handle));
        }
        let (done, rx) = mpsc::channel();
        let jobs = self
            .worker
            .as_ref()
            .map(|(jobs, _)| jobs)
            .ok_or(CkptError::WorkerGone)?;
        jobs.send(Job {
            iteration,
            staging,
            done,
        })
        .map_err(|_| CkptError::WorkerGone)?;
        self.pending = Some(rx);
        Ok(())
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        // The file is removed when the saver goes, on the error paths too.
        if matches!(self.mode, SaveMode::Async { shm: true }) {
            // Unlinking is safe while the worker still reads it: its open handle stays valid.
            let _ = fs::remove_file(&self.target.shm_path);
        }
    }
}

/// The persistent worker: writes each staged checkpoint, prints `successfully saved` when durable.
/// It counts its own writes for each save on its own thread, so they go to that save whenever
/// the worker runs.
fn worker(target: &Target, jobs: &Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        let mark = probe::thread_io();
        let result = match &job.staging {
            Staging::Memory(buf) => write_checkpoint(target, job.iteration, &mut buf.bytes()),
            Staging::Shm(file) => write_from_shm(target, job.iteration, file),
        };
        if result.is_ok() {
            let stamp = target.new_format.then(Stamp::now);
            let dir = target.dir.display().to_string();
            emit::out(&format::saved_line(stamp.as_ref(), job.iteration, &dir));
        }
        let done = Done {
            iteration: job.iteration,
            result,
            staging: job.staging,
            written: probe::io_since(mark),
        };
        // The loop may have exited on a planted failure; nobody left to tell is fine.
        let _ = job.done.send(done);
    }
}

fn write_from_shm(target: &Target, iteration: u64, mut file: &File) -> Result<(), CkptError> {
    file.seek(SeekFrom::Start(0))
        .map_err(io_err("read", &target.shm_path))?;
    write_checkpoint(target, iteration, &mut file.take(target.bytes))
}

/// Fills `dst` with `src` repeated, starting at `offset` into the repetition (zeros for no model).
fn copy_cyclic_from(src: &[u8], offset: usize, dst: &mut [u8]) {
    if src.is_empty() {
        dst.fill(0);
        return;
    }
    let mut pos = offset % src.len();
    let mut done = 0;
    while done < dst.len() {
        let n = (src.len() - pos).min(dst.len() - done);
        dst[done..done + n].copy_from_slice(&src[pos..pos + n]);
        done += n;
        pos = 0;
    }
}

/// `--load DIR`: reads the tracker file and the shard it names back into the model buffer, as
/// Megatron's `load_checkpoint` does, and returns the iteration to resume after (0: no checkpoint).
pub(crate) fn load(
    dir: &Path,
    format: &str,
    new_format: bool,
    model: &mut [u8],
) -> Result<u64, CkptError> {
    let tracker = dir.join(TRACKER);
    let text = match fs::read_to_string(&tracker) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            emit::out(&format!(
                "WARNING: could not find the metadata file {}",
                tracker.display()
            ));
            emit::out("    will not load any checkpoints and will start from random");
            return Ok(0);
        }
        Err(source) => {
            return Err(CkptError::Io {
                op: "read",
                path: tracker,
                source,
            });
        }
    };
    let Ok(iteration) = text.trim().parse::<u64>() else {
        let content = text.trim().chars().take(40).collect();
        return Err(CkptError::BadTracker {
            path: tracker,
            content,
        });
    };
    let shown = dir.display().to_string();
    emit::out(&format::loading_line(
        new_format.then(Stamp::now).as_ref(),
        iteration,
        &shown,
    ));
    let shard = dir
        .join(format!("iter_{iteration:07}"))
        .join(shard_name(format));
    let mut file = File::open(&shard).map_err(io_err("open", &shard))?;
    // The shard holds the model repeated or cut to --ckpt-mb: restore what fits, read the rest.
    let mut filled = 0;
    while filled < model.len() {
        match file
            .read(&mut model[filled..])
            .map_err(io_err("read", &shard))?
        {
            0 => break,
            n => filled += n,
        }
    }
    io::copy(&mut file, &mut io::sink()).map_err(io_err("read", &shard))?;
    emit::out(&format::loaded_line(
        new_format.then(Stamp::now).as_ref(),
        iteration,
        &shown,
    ));
    Ok(iteration)
}

/// The shard file of a checkpoint, by format, relative to the iteration folder.
pub(crate) fn shard_name(format: &str) -> &'static str {
    if format == "torch" {
        "mp_rank_00/model_optim_rng.pt"
    } else {
        "__0_0.distcp"
    }
}

/// Writes `DIR/iter_NNNNNNN/<shard>` (+ `metadata.json`), fsyncs files and folders, then updates
/// the tracker file atomically, so a crash never leaves the tracker naming a partial checkpoint.
fn write_checkpoint(target: &Target, iteration: u64, data: &mut dyn Read) -> Result<(), CkptError> {
    let iter_dir = target.dir.join(format!("iter_{iteration:07}"));
    let shard = iter_dir.join(shard_name(&target.format));
    let shard_dir = shard.parent().unwrap_or(&iter_dir).to_path_buf();
    fs::create_dir_all(&shard_dir).map_err(io_err("create", &shard_dir))?;
    let mut file = File::create(&shard).map_err(io_err("create", &shard))?;
    io::copy(data, &mut file).map_err(io_err("write", &shard))?;
    thread::sleep(target.slow_write);
    file.sync_all().map_err(io_err("fsync", &shard))?;
    if target.format != "torch" {
        let meta = iter_dir.join("metadata.json");
        let text = format!(
            "{{\"sharded_backend\": \"{}\", \"sharded_backend_version\": 1}}",
            target.format
        );
        write_synced(&meta, text.as_bytes())?;
    }
    sync_dir(&shard_dir)?;
    sync_dir(&iter_dir)?;
    let tmp = target.dir.join(format!(".{TRACKER}.tmp"));
    write_synced(&tmp, iteration.to_string().as_bytes())?;
    let tracker = target.dir.join(TRACKER);
    fs::rename(&tmp, &tracker).map_err(io_err("rename", &tracker))?;
    sync_dir(&target.dir)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CkptError> {
    let mut f = File::create(path).map_err(io_err("create", path))?;
    f.write_all(bytes).map_err(io_err("write", path))?;
    f.sync_all().map_err(io_err("fsync", path))
}

fn sync_dir(dir: &Path) -> Result<(), CkptError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_copy_repeats_the_model() {
        let mut dst = [0u8; 7];
        copy_cyclic_from(&[1, 2, 3], 0, &mut dst);
        assert_eq!(dst, [1, 2, 3, 1, 2, 3, 1]);
        copy_cyclic_from(&[1, 2, 3], 4, &mut dst[..4]);
        assert_eq!(dst[..4], [2, 3, 1, 2]);
        copy_cyclic_from(&[], 0, &mut dst);
        assert_eq!(dst, [0; 7]);
    }

    #[test]
    fn checkpoint_files_and_tracker() {
        let dir =
            std::env::temp_dir().join(format!("fake-trainer-ckpt-test-{}", std::process::id()));
        let target = Target {
            dir: dir.clone(),
            format: "torch_dist".into(),
            new_format: true,
            slow_write: Duration::ZERO,
            bytes: 0,
            shm_path: PathBuf::new(),
        };
        write_checkpoint(&target, 20, &mut &[7u8; 5000][..]).unwrap();
        assert_eq!(
            fs::metadata(dir.join("iter_0000020/__0_0.distcp"))
                .unwrap()
                .len(),
            5000
        );
        assert_eq!(fs::read_to_string(dir.join(TRACKER)).unwrap(), "20");
        let torch = Target {
            format: "torch".into(),
            ..target
        };
        write_checkpoint(&torch, 30, &mut &[1u8; 10][..]).unwrap();
        assert_eq!(
            fs::read(dir.join("iter_0000030/mp_rank_00/model_optim_rng.pt")).unwrap(),
            [1u8; 10]
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_reads_the_tracker_and_restores_the_model() {
        let dir =
            std::env::temp_dir().join(format!("fake-trainer-load-test-{}", std::process::id()));
        let target = Target {
            dir: dir.clone(),
            format: "torch_dist".into(),
            new_format: false,
            slow_write: Duration::ZERO,
            bytes: 0,
            shm_path: PathBuf::new(),
        };
        let mut model = [0u8; 4];
        assert_eq!(
            load(&dir, "torch_dist", false, &mut model).unwrap(),
            0,
            "no tracker: start fresh"
        );
        write_checkpoint(&target, 20, &mut &[5u8, 6, 7][..]).unwrap();
        assert_eq!(load(&dir, "torch_dist", false, &mut model).unwrap(), 20);
        assert_eq!(model, [5, 6, 7, 0]);
        fs::write(dir.join(TRACKER), "twenty\n").unwrap();
        let err = load(&dir, "torch_dist", false, &mut model)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("latest_checkpointed_iteration.txt: 'twenty' is not an iteration number"),
            "{err}"
        );
        fs::write(dir.join(TRACKER), "30").unwrap();
        let err = load(&dir, "torch_dist", false, &mut model)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot open ") && err.contains("iter_0000030/__0_0.distcp"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unwritable_dir_names_the_path() {
        let target = Target {
            dir: "/proc/fake-trainer-nope".into(),
            format: "torch_dist".into(),
            new_format: true,
            slow_write: Duration::ZERO,
            bytes: 0,
            shm_path: PathBuf::new(),
        };
        let err = write_checkpoint(&target, 1, &mut &[][..])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot create /proc/fake-trainer-nope/iter_0000001:"),
            "{err}"
        );
    }
}
