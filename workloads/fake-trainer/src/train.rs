//! The training loop: per-step activation buffers, the simulated compute, the interval log lines with
//! really measured iteration times, checkpoint saves on schedule, planted failures.

use std::fmt;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::args::{Config, SaveMode};
use crate::checkpoint::{self, CkptError, Saver};
use crate::curve::Curve;
use crate::emit;
use crate::format::{self, IterationStats, Stamp};
use crate::injob::InJob;
use crate::memory::{self, Accounting, AllocError, Buffer, Pool};
use crate::probe::Probe;
use crate::process;
use crate::tensorboard::EventWriter;

#[derive(Debug)]
pub(crate) enum TrainError {
    Alloc {
        what: &'static str,
        source: AllocError,
    },
    Save(CkptError),
    Load(CkptError),
    Child(std::io::Error),
    Fork(std::io::Error),
    Tensorboard(std::io::Error),
    /// A planted failure already printed its traceback; exit with this code.
    Planted(i32),
}

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::Alloc { what, source } => {
                write!(
                    f,
                    "cannot allocate the {what} ({} bytes): not enough host memory",
                    source.bytes
                )
            }
            TrainError::Save(e) => write!(f, "checkpoint save failed: {e}"),
            TrainError::Load(e) => write!(f, "checkpoint load failed: {e}"),
            TrainError::Child(e) => write!(f, "cannot start the --fork-child process: {e}"),
            TrainError::Fork(e) => write!(f, "cannot fork the --fork-workers workers: {e}"),
            TrainError::Tensorboard(e) => write!(f, "cannot write the TensorBoard event file: {e}"),
            TrainError::Planted(code) => write!(f, "planted failure (exit {code})"),
        }
    }
}

impl From<CkptError> for TrainError {
    fn from(e: CkptError) -> Self {
        TrainError::Save(e)
    }
}

/// Accumulates one log interval: loss average and the compute time, excluding saves as Megatron
/// stops its `interval-time` timer around `save_checkpoint`.
struct Interval {
    start: Instant,
    excluded: Duration,
    loss_sum: f64,
    steps: u64,
}

impl Interval {
    fn new() -> Interval {
        Interval {
            start: Instant::now(),
            excluded: Duration::ZERO,
            loss_sum: 0.0,
            steps: 0,
        }
    }
}

fn startup(cfg: &Config) {
    let alloc_conf = std::env::var("PYTORCH_CUDA_ALLOC_CONF").unwrap_or_else(|_| "(unset)".into());
    emit::out(&format!(
        "fake-trainer: PYTORCH_CUDA_ALLOC_CONF={alloc_conf}"
    ));
    let mode = match cfg.save_mode {
        SaveMode::Sync => "sync".to_string(),
        SaveMode::Async { shm } => {
            format!("async (strategy {}, cpu shm {shm})", cfg.async_strategy)
        }
    };
    emit::out(&format!(
        "fake-trainer: train_iters={} log_interval={} seed={} model={}MB activations={}MB ckpt={}MB \
         save={} save_interval={} checkpoint={mode} empty_unused_memory_level={} step_ms={}",
        cfg.train_iters,
        cfg.log_interval,
        cfg.seed,
        cfg.model_mb,
        cfg.activation_mb,
        cfg.ckpt_mb,
        cfg.save
            .as_deref()
            .map_or("(none)".into(), |p| p.display().to_string()),
        cfg.save_interval.map_or("(none)".into(), |n| n.to_string()),
        cfg.empty_unused_memory_level,
        cfg.step_ms,
    ));
    if !cfg.unknown.is_empty() {
        emit::err(&format!(
            "fake-trainer: warning: ignoring unknown flags: {}",
            cfg.unknown.join(" ")
        ));
    }
    if cfg.async_ignored {
        emit::err(
            "fake-trainer: warning: --async-save needs --use-persistent-ckpt-worker (as in Megatron); saving synchronously",
        );
    }
}

/// `--fork-child`: the child's handle must live for the run (dropping a `Child` neither waits
/// for nor kills it, which is the point).
fn fork_child(cfg: &Config) -> Result<Option<Child>, TrainError> {
    if !cfg.fork_child {
        return Ok(None);
    }
    let child = process::spawn_child(&cfg.reexec_prefix).map_err(TrainError::Child)?;
    emit::err(&format!(
        "fake-trainer: forked child pid {} (ignores SIGTERM, sleeps forever)",
        child.id()
    ));
    Ok(Some(child))
}

/// `--fork-workers`: the buffer they share and the workers, alive for the run. Forked before
/// any thread of ours starts (the async checkpoint worker is a thread).
fn fork_workers(cfg: &Config) -> Result<Option<(Vec<u8>, process::Workers)>, TrainError> {
    if cfg.fork_workers == 0 {
        return Ok(None);
    }
    let bytes = (cfg.shared_mb as usize) << 20;
    let mut shared = Vec::new();
    shared
        .try_reserve_exact(bytes)
        .map_err(|_| TrainError::Alloc {
            what: "shared buffer",
            source: AllocError { bytes },
        })?;
    shared.resize(bytes, 1u8);
    let workers = process::fork_workers(cfg.fork_workers, &shared).map_err(TrainError::Fork)?;
    emit::err(&format!(
        "fake-trainer: forked {} workers sharing {} MB: pids {:?}",
        cfg.fork_workers,
        cfg.shared_mb,
        workers.pids()
    ));
    Ok(Some((shared, workers)))
}

/// Runs the whole job; `Ok` means training finished and every checkpoint is durable.
pub(crate) fn run(cfg: &Config) -> Result<(), TrainError> {
    startup(cfg);
    let _child = fork_child(cfg)?;
    let _workers = fork_workers(cfg)?;
    let acct = Arc::new(Accounting::default());
    let mut model = Buffer::fresh(&acct, (cfg.model_mb as usize) << 20).map_err(|source| {
        TrainError::Alloc {
            what: "model buffer",
            source,
        }
    })?;
    let start = match &cfg.load {
        Some(dir) => checkpoint::load(dir, &cfg.ckpt_format, !cfg.old_format, model.bytes_mut())
            .map_err(TrainError::Load)?,
        None => 0,
    };
    let mut pool = Pool::new(&acct);
    let mut saver = cfg.save.as_deref().map(|dir| Saver::new(cfg, dir, &acct));
    let mut saving = Saving {
        probe: Probe::from_env(&acct),
        plant_empty_cache: cfg.plant_empty_cache,
        injob: cfg.injob.clone(),
        saves: 0,
    };
    let curve = Curve::new(cfg.seed, cfg.train_iters);
    let mut tb = match &cfg.tensorboard_dir {
        Some(dir) => Some(
            EventWriter::create(dir, cfg.log_memory_to_tensorboard)
                .map_err(TrainError::Tensorboard)?,
        ),
        None => None,
    };
    let mut interval = Interval::new();
    let (mut last_saved, mut end) = (start, start.max(cfg.train_iters));
    let drift = if start > 0 {
        1.0 + cfg.resume_drift
    } else {
        1.0
    };
    for iteration in start + 1..=cfg.train_iters {
        if let Some(&(_, kind)) = cfg.planted.iter().find(|(at, _)| *at == iteration) {
            return Err(TrainError::Planted(process::planted(kind, iteration)));
        }
        if let Some((_, file)) = cfg.hold.as_ref().filter(|(at, _)| *at == iteration) {
            process::hold_while_exists(file);
        }
        step(cfg, &mut pool, &mut model, iteration)?;
        interval.loss_sum += curve.step(iteration).loss * drift;
        interval.steps += 1;
        if let Some(s) = saver.as_mut() {
            s.poll()?;
        }
        if iteration.is_multiple_of(cfg.log_interval) {
            log_interval(cfg, &curve, &acct, &interval, iteration, tb.as_mut())?;
            interval = Interval::new();
        }
        let due = |every: Option<u64>| every.is_some_and(|n| iteration.is_multiple_of(n));
        if let (Some(s), true) = (saver.as_mut(), due(cfg.save_interval)) {
            interval.excluded += save(s, &mut pool, &mut saving, iteration, model.bytes())?;
            last_saved = iteration;
        }
        if due(cfg.exit_interval) {
            end = iteration;
            break;
        }
        if cfg.exit_signal_handler && process::sigterm_received() {
            // Megatron: save (when saving at all), then `exiting program after receiving
            // SIGTERM.`; the final save below is that save.
            emit::out("exiting program after receiving SIGTERM.");
            end = iteration;
            break;
        }
    }
    finish(saver, &mut pool, saving, model.bytes(), (last_saved, end))
}

/// What every save shares: the probe file (when goldgate asked for one) and the planted
/// `empty_cache` calls.
struct Saving {
    probe: Option<Probe>,
    plant_empty_cache: u64,
    /// In-job A/B (`crate::injob`): each save's arm, and the saves so far.
    injob: Option<InJob>,
    saves: usize,
}

/// One save, as Megatron's `save_checkpoint_and_time` makes it: the probe's window around it,
/// the planted `empty_cache` calls (`GOLDGATE_PLANT_EMPTY_CACHE`) inside. Returns the time
/// the training loop waited.
fn save(
    s: &mut Saver,
    pool: &mut Pool,
    saving: &mut Saving,
    iteration: u64,
    model: &[u8],
) -> Result<Duration, TrainError> {
    let (arm, switches) = match &saving.injob {
        Some(j) => {
            let (arm, sw) = j.arm(saving.saves);
            (arm, Some(sw.clone()))
        }
        None => (None, None),
    };
    saving.saves += 1;
    let calls = match switches.as_ref().and_then(|s| s.empty_cache_add) {
        Some(true) => saving.plant_empty_cache + 1,
        Some(false) => 0,
        None => saving.plant_empty_cache,
    };
    let mark = saving.probe.as_ref().map(Probe::mark);
    let start = Instant::now();
    for _ in 0..calls {
        pool.empty_cache();
    }
    if let Some(sw) = &switches {
        std::thread::sleep(sw.save_delay);
    }
    let planted = start.elapsed();
    let blocking = s.save(iteration, model)?;
    let written = s.take_written();
    if let (Some(p), Some(mark)) = (saving.probe.as_mut(), mark) {
        for (it, io) in written {
            p.background(it, io);
        }
        p.saved(iteration, mark, switches.is_some().then_some(arm));
    }
    Ok(planted + blocking)
}

/// Megatron saves once more at the end unless the last iteration was just saved, then waits for
/// async saves before it reports the end of training.
fn finish(
    saver: Option<Saver>,
    pool: &mut Pool,
    mut saving: Saving,
    model: &[u8],
    (last_saved, end): (u64, u64),
) -> Result<(), TrainError> {
    if let Some(mut s) = saver {
        if last_saved != end {
            save(&mut s, pool, &mut saving, end, model)?;
        }
        let written = s.finish()?;
        if let Some(p) = saving.probe.as_mut() {
            for (it, io) in written {
                p.background(it, io);
            }
        }
    }
    if let Some(p) = &saving.probe {
        p.write(true);
    }
    if let Some(rss) = memory::rss_bytes() {
        emit::out(&format!(
            "fake-trainer: resident set size at the end: {:.2} MB",
            rss as f64 / 1048576.0
        ));
    }
    emit::out(&format::done_line(&Stamp::now()));
    emit::out(&format::exiting_line(end));
    Ok(())
}

/// One training step: the forward pass writes fresh activations, the optimizer touches the model,
/// then the simulated compute. Under `--empty-unused-memory-level` ≥ 1 the cached activation block
/// is released after the step, so the next step faults its pages in again (the real cost of
/// `empty_cache`).
fn step(
    cfg: &Config,
    pool: &mut Pool,
    model: &mut Buffer,
    iteration: u64,
) -> Result<(), TrainError> {
    let salt = (iteration % 251) as u8;
    let mut act = pool
        .alloc((cfg.activation_mb as usize) << 20)
        .map_err(|source| TrainError::Alloc {
            what: "activation buffer",
            source,
        })?;
    std::hint::black_box(memory::fill(act.bytes_mut(), salt));
    memory::touch(model.bytes_mut(), salt);
    pool.free(act);
    // Megatron's train_step: level 1 empties the cache after the forward-backward pass,
    // level 2 also after the optimizer step.
    if cfg.empty_unused_memory_level >= 1 {
        pool.empty_cache();
    }
    if cfg.empty_unused_memory_level >= 2 {
        pool.empty_cache();
    }
    compute(cfg.step_ms, cfg.busy);
    Ok(())
}

fn compute(ms: u64, busy: bool) {
    let d = Duration::from_millis(ms);
    if busy {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
    } else {
        std::thread::sleep(d);
    }
}

fn log_interval(
    cfg: &Config,
    curve: &Curve,
    acct: &Accounting,
    iv: &Interval,
    iteration: u64,
    tb: Option<&mut EventWriter>,
) -> Result<(), TrainError> {
    let now = curve.step(iteration);
    let elapsed = iv.start.elapsed().saturating_sub(iv.excluded);
    let stats = IterationStats {
        iteration,
        train_iters: cfg.train_iters,
        consumed_samples: iteration * cfg.global_batch_size,
        elapsed_ms: elapsed.as_secs_f64() * 1000.0 / iv.steps.max(1) as f64,
        learning_rate: cfg.schedule.at(iteration),
        global_batch_size: cfg.global_batch_size,
        lm_loss: iv.loss_sum / iv.steps.max(1) as f64,
        loss_scale: 1.0,
        grad_norm: now.grad_norm,
        num_zeros: now.num_zeros,
        params_norm: now.params_norm,
        skipped: 0,
        nan: 0,
    };
    let stamp = (!cfg.old_format).then(Stamp::now);
    emit::out(&format::iteration_line(stamp.as_ref(), &stats));
    // Megatron reports memory once, at the first log, unless --log-memory-interval asks for more.
    let memory_due = match cfg.log_memory_interval {
        Some(n) => iteration.is_multiple_of(n),
        None => iteration == cfg.log_interval,
    };
    if memory_due {
        let name = format!("(after {iteration} iterations)");
        emit::out(&format::memory_line(&name, &acct.snapshot()));
    }
    match tb {
        Some(w) => w
            .interval(&stats, &acct.snapshot())
            .map_err(TrainError::Tensorboard),
        None => Ok(()),
    }
}
