//! Stage "run", Slurm executor: each attempt of a job is one batch job — the script
//! `plan::render_batch` writes, submitted with `sbatch --parsable` — followed until it left the
//! queue: its state from the shared [`Queue`] (one `squeue` per poll interval for all jobs),
//! its log streamed from the job folder through a [`LogWatch`], its pending time kept apart
//! from its running time (only running time counts against the timeout). Ctrl-C, SIGTERM or
//! the timeout cancel it (`scancel`: TERM, the grace period, then KILL) and wait until it
//! left the queue. Once it did, Slurm's raw copy of the output is settled (`raw`) and the
//! per-rank logs are masked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::command::{SlurmError, scancel, unhealthy_nodes};
use super::ended::{EndState, read_end, slurm_ended, slurm_line};
use super::followed::{Followed, cancelled_line, give_up, job_exit, mark_started, see_exit};
use super::node::read_nodes;
use super::queue::{Change, Queue, Seen};
use super::raw::{log_name, raw_path, settle_ended};
use super::state::{Cancelled, Phase, outcome, phase};
use super::tail::Tail;
use crate::metrics::Observed;
use crate::plan::{BatchSpec, Job, Launcher, SamplerStep, batch_time_limit, render_batch};
use crate::run::event::ExecEvent;
use crate::run::executor::{AttemptContext, AttemptOutput, Executor, create_job_dirs};
use crate::run::options::RunOptions;
use crate::run::watch::LogWatch;
use goldgate_core::config::{Config, SlurmConfig};
use goldgate_schema::Outcome;

/// How often a running attempt reads its log and checks its stop flag.
const TICK: Duration = Duration::from_millis(200);

/// How long goldgate waits for the nodes' sample files once the job left the queue (they
/// are written as the samplers stop, on a filesystem that may show them late).
const NODE_FILE_WAIT: Duration = Duration::from_secs(10);

/// How long goldgate waits, after its own cancel, for a job to leave the queue.
const LEAVE_WAIT: Duration = Duration::from_secs(300);

/// Runs each attempt as a Slurm batch job.
pub struct SlurmExecutor {
    /// Each planned platform's `slurm:` block.
    platforms: BTreeMap<String, SlurmConfig>,
    timeout: Option<Duration>,
    grace: Duration,
    /// `--keep-raw-log`: keep Slurm's own copy of the output as `console.raw.log`.
    keep_raw_log: bool,
    /// `--pending-limit` (wins over each platform's `slurm.pending_limit`).
    pending_limit: Option<Duration>,
    sample_interval: Duration,
    /// goldgate's own executable, which every node runs as its sampler (`goldgate sample`).
    goldgate: Option<PathBuf>,
    /// The run's id, every batch job's `--comment` (`goldgate-run=<id>`).
    run_id: String,
    /// The results folder (`--out`): what `goldgate cancel --out` is told.
    out_dir: PathBuf,
    /// Jobs given up after an outage whose cancel could not be sent: they may still run.
    uncancelled: Mutex<Vec<u64>>,
    queue: Queue,
    /// By job id: the nodes its node failures left behind, excluded from its later attempts.
    excluded: Mutex<BTreeMap<String, Vec<String>>>,
    made: Instant,
}

/// The `--comment` of every batch job of run `run_id`: how `goldgate cancel` finds them.
pub(crate) fn run_comment(run_id: &str) -> String {
    format!("goldgate-run={run_id}")
}

impl SlurmExecutor {
    /// An executor for `jobs` (their platforms' `slurm:` blocks from `config`); the poll
    /// interval is the shortest of theirs. Fails when Slurm's commands are not installed.
    pub fn new(
        opts: &RunOptions,
        config: &Config,
        jobs: &[Job],
    ) -> Result<SlurmExecutor, SlurmError> {
        super::command::check_installed()?;
        let platforms: BTreeMap<String, SlurmConfig> = jobs
            .iter()
            .filter_map(|j| {
                let p = config.platform(Some(&j.platform)).ok()?;
                Some((p.name.clone(), p.slurm.clone()))
            })
            .collect();
        let interval = platforms
            .values()
            .map(|s| s.poll_interval)
            .min()
            .unwrap_or(goldgate_core::config::DEFAULT_POLL_INTERVAL);
        Ok(SlurmExecutor {
            platforms,
            timeout: opts.timeout,
            grace: opts.grace,
            keep_raw_log: opts.keep_raw_log,
            pending_limit: opts.pending_limit,
            sample_interval: opts.sample_interval,
            goldgate: std::env::current_exe().ok(),
            run_id: opts.run_id.clone(),
            out_dir: opts.out_dir.clone(),
            uncancelled: Mutex::new(Vec::new()),
            queue: Queue::new(interval),
            excluded: Mutex::new(BTreeMap::new()),
            made: Instant::now(),
        })
    }
}

impl Executor for SlurmExecutor {
    fn name(&self) -> &'static str {
        "slurm"
    }

    /// `squeue` calls so far (one per poll interval at most) and the time since the executor
    /// was made; then the jobs given up after an outage that may still run, and how to
    /// cancel them.
    fn finish_note(&self) -> Option<String> {
        let seconds = self.made.elapsed().as_secs_f64();
        let calls = self.queue.calls();
        let rate = if seconds >= 60.0 {
            format!(" ({:.1} a minute)", calls as f64 * 60.0 / seconds)
        } else {
            String::new()
        };
        let mut note = format!("{calls} squeue call(s) in {seconds:.0} s{rate}");
        let mut left = self
            .uncancelled
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        left.sort_unstable();
        if !left.is_empty() {
            let ids: Vec<String> = left.iter().map(u64::to_string).collect();
            note.push_str(&format!(
                "; Slurm job(s) {} given up and not cancelled may still run: once the controller answers, `goldgate cancel --out {}` (or `scancel {}`) cancels them",
                ids.join(", "),
                self.out_dir.display(),
                ids.join(" ")
            ));
        }
        Some(note)
    }

    fn attempt(
        &self,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> AttemptOutput {
        self.try_attempt(ctx, on_event)
            .unwrap_or_else(|message| AttemptOutput::launch_error(message, String::new()))
    }
}

impl SlurmExecutor {
    fn try_attempt(
        &self,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let job = ctx.job;
        create_job_dirs(job)?;
        let default = SlurmConfig::default();
        let slurm = self.platforms.get(&job.platform).unwrap_or(&default);
        let log = job.dirs.logs.join(log_name(ctx.number));
        // Slurm writes the job's output as it came, secrets and all, outside `logs/` (which
        // CI uploads); goldgate keeps it redacted in `logs/` as it reads it.
        let raw = raw_path(&job.dirs.job, ctx.number);
        let limit = batch_time_limit(job, self.timeout, slurm);
        let script = job
            .dirs
            .job
            .join(format!("slurm-job.attempt{}.sh", ctx.number));
        let program = entry_program(job);
        let samples = job.dirs.job.join(samples_name(ctx.number));
        let goldgate = self.goldgate.as_ref().map(|p| p.display().to_string());
        let attempt_options = self.attempt_options(job, slurm);
        let spec = BatchSpec {
            slurm,
            time_limit: limit,
            log: &raw,
            entry_program: program.as_deref(),
            sampler: goldgate.as_deref().map(|goldgate| SamplerStep {
                goldgate,
                dir: &samples,
                interval: self.sample_interval,
            }),
            attempt_options: &attempt_options,
        };
        goldgate_core::fsio::write_atomic(&script, render_batch(job, &spec).as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
        let _ = std::fs::remove_file(&raw);
        let id = super::command::sbatch(&script, &[]).map_err(|e| e.to_string())?;
        on_event(ExecEvent::Submitted { id });
        self.queue.watch(id);
        let limits = (
            self.pending_limit
                .or(slurm.pending_limit)
                .unwrap_or(goldgate_core::config::DEFAULT_PENDING_LIMIT),
            slurm.outage_limit,
        );
        let logs = (raw.as_path(), log.as_path());
        let followed = self.follow(Followed::new(id, limits), ctx, logs, limit, on_event);
        self.queue.forget(id);
        let unmasked = self.settle(job, &raw, &log)?;
        let mut output = followed?;
        if let Some(observed) = output.observed.as_mut().filter(|_| !output.wall.is_zero()) {
            // Stopped by Ctrl-C: read what the samplers wrote, without waiting for the rest.
            let wait = match ctx.stop.is_requested() {
                true => Duration::ZERO,
                false => NODE_FILE_WAIT,
            };
            observed.nodes = read_nodes(&samples, job.nodes, wait);
        }
        if let Some(node) = output.observed.as_mut().and_then(|o| o.nodes.first_mut()) {
            node.warnings.extend(unmasked);
        }
        self.note_node_failure(job, &mut output);
        Ok(output)
    }

    /// Once the job is over: Slurm's raw copy of the output settled, and the launcher's
    /// per-rank logs (torchrun's `--log-dir` under `logs/`), which CI uploads with the console
    /// log, masked as it is; a warning for each log that could not be masked.
    fn settle(&self, job: &Job, raw: &Path, log: &Path) -> Result<Vec<String>, String> {
        settle_ended(raw, log, self.keep_raw_log)?;
        let redactor = crate::run::watch::redactor(&job.env, &job.env_unset);
        let logs = &job.dirs.logs;
        Ok(crate::run::rank_logs::mask(
            logs,
            log,
            &redactor,
            self.keep_raw_log,
        ))
    }

    /// This attempt's own `sbatch` options: the run id as `--comment`, and `--exclude` with
    /// the nodes earlier attempts' node failures left behind (and the platform's own).
    fn attempt_options(&self, job: &Job, slurm: &SlurmConfig) -> Vec<String> {
        let mut options = vec![format!("--comment={}", run_comment(&self.run_id))];
        let failed = self
            .excluded
            .lock()
            .map(|e| e.get(&job.id).cloned().unwrap_or_default())
            .unwrap_or_default();
        if !failed.is_empty() {
            let mut nodes: Vec<String> = slurm
                .sbatch_args
                .iter()
                .filter_map(|a| a.strip_prefix("--exclude="))
                .map(str::to_owned)
                .collect();
            nodes.extend(failed);
            options.push(format!("--exclude={}", nodes.join(",")));
        }
        options
    }

    /// After a NODE_FAIL: the allocation's nodes Slurm now holds down (all of them when it
    /// cannot say and the job had one) are excluded from the job's next attempts.
    fn note_node_failure(&self, job: &Job, output: &mut AttemptOutput) {
        let Outcome::Infrastructure { state } = &output.outcome else {
            return;
        };
        if state != "NODE_FAIL" || output.host.is_empty() {
            return;
        }
        let mut nodes = unhealthy_nodes(&output.host).unwrap_or_default();
        let one_node = !output.host.contains(['[', ',']);
        if nodes.is_empty() && one_node {
            nodes.push(output.host.clone());
        }
        if nodes.is_empty() {
            return;
        }
        if let Ok(mut excluded) = self.excluded.lock() {
            let list = excluded.entry(job.id.clone()).or_default();
            list.extend(nodes.iter().cloned());
            list.sort();
            list.dedup();
        }
        let line = output.failure_line.get_or_insert_with(String::new);
        line.push_str(&format!(
            "{}a retry excludes {}",
            if line.is_empty() { "" } else { "; " },
            nodes.join(",")
        ));
    }

    /// Follows the submitted job until it left the queue, then says how it ended.
    fn follow(
        &self,
        mut job: Followed,
        ctx: &AttemptContext<'_>,
        (raw, log): (&Path, &Path),
        limit: Option<Duration>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let mut tail = Tail::new(raw.to_path_buf());
        // The batch job inherits goldgate's environment (sbatch's `--export=ALL`) and sets
        // the job's on top: its secrets are masked as the log's lines arrive.
        let mut watch = LogWatch::new()
            .redacting(crate::run::watch::redactor(
                &ctx.job.env,
                &ctx.job.env_unset,
            ))
            .storing(log)?;
        // goldgate's own limit backs Slurm's up: a minute after Slurm's (whole minutes).
        let watchdog = limit.map(|l| Duration::from_secs(crate::plan::slurm_minutes(l) * 60 + 60));
        // A read that fails is kept for the end: the job is followed until it left the queue.
        let mut unread = None;
        let state = loop {
            if let Err(e) = read_log(&mut tail, &mut watch, &mut job, raw, on_event) {
                unread.get_or_insert(e);
            }
            // The script's exit line with code 0 and no error from Slurm's step tools: its
            // nodes all ended well, which Slurm will call COMPLETED; no need to wait for the
            // next poll. Anything else waits for Slurm's word (srun may exit 0 after a node
            // failure, saying `srun: error: Node failure on n2`).
            let clean = !job.oom_kill && !job.slurm_error && job.cancel.is_none();
            if clean && job.exit == Some(0) {
                break EndState::of("COMPLETED");
            }
            if let Some(end) = self.poll(&mut job, ctx, on_event) {
                break end;
            }
            self.maybe_cancel(&mut job, ctx, watchdog)?;
            std::thread::sleep(TICK);
        };
        read_log(&mut tail, &mut watch, &mut job, raw, on_event)?;
        match unread {
            Some(e) => Err(e),
            None => self.ended(job, state, watch, log, limit, on_event),
        }
    }

    /// Asks the queue about the job (and says the controller's outages this worker noticed
    /// first); `Some(end)` once it left the queue, or was given up after an outage past the
    /// limit.
    fn poll(
        &self,
        job: &mut Followed,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Option<EndState> {
        let seen = self.queue.seen(job.id);
        for change in self.queue.take_changes() {
            on_event(match change {
                Change::Silent { error } => ExecEvent::ControllerSilent {
                    error,
                    limit: job.outage_limit,
                },
                Change::Answers { after } => ExecEvent::ControllerAnswers { after },
            });
        }
        if let Some(outage) = self.queue.outage().or_else(|| job.failing.clone())
            && outage.since.elapsed() > job.outage_limit
        {
            let end = give_up(job, &outage, ctx.stop);
            if let (Some(Err(_)), Ok(mut left)) = (&job.given_up, self.uncancelled.lock()) {
                left.push(job.id);
            }
            return Some(end);
        }
        let entry = match seen {
            Seen::NotYet => return None,
            Seen::Gone => {
                return match read_end(job.id) {
                    Ok(end) => {
                        job.failing = None;
                        Some(end)
                    }
                    Err(e) => {
                        job.failed(e);
                        None
                    }
                };
            }
            Seen::Listed(entry) => entry,
        };
        if !entry.nodes.is_empty() {
            job.nodes = entry.nodes.clone();
        }
        match phase(&entry.state) {
            Phase::Pending => {
                if job.pending.as_deref() != Some(entry.reason.as_str()) {
                    job.pending = Some(entry.reason.clone());
                    on_event(ExecEvent::Pending {
                        reason: entry.reason,
                    });
                }
                None
            }
            Phase::Running => {
                mark_started(job, on_event);
                None
            }
            Phase::Ended => Some(EndState {
                state: entry.state,
                reason: entry.reason,
                exit: None,
            }),
        }
    }

    /// Starts or escalates a cancel: on a stop request, past the watchdog, past the pending
    /// limit or for a pending reason that never clears, `scancel --signal=TERM` to the
    /// steps (a pending job is simply cancelled); after the grace period Slurm's own cancel
    /// and SIGKILL; gives up waiting for the job to leave the queue after [`LEAVE_WAIT`].
    /// A failed `scancel` is tried again on the next tick (an outage, bounded by its limit).
    fn maybe_cancel(
        &self,
        job: &mut Followed,
        ctx: &AttemptContext<'_>,
        watchdog: Option<Duration>,
    ) -> Result<(), String> {
        match job.cancel.clone() {
            None => {
                let Some(why) = job.cancel_reason(ctx.stop, watchdog) else {
                    return Ok(());
                };
                let signal = job.started.map(|_| "TERM");
                match scancel(job.id, signal) {
                    Ok(()) => {
                        job.failing = None;
                        job.cancel = Some((why, Instant::now(), false));
                    }
                    Err(e) => job.failed(e),
                }
            }
            Some((why, since, false)) if since.elapsed() >= self.grace => {
                match scancel(job.id, None) {
                    Ok(()) => {
                        let _ = scancel(job.id, Some("KILL"));
                        job.cancel = Some((why, since, true));
                    }
                    Err(e) => job.failed(e),
                }
            }
            Some((_, since, true)) if since.elapsed() >= self.grace + LEAVE_WAIT => {
                return Err(format!(
                    "Slurm job {} was cancelled but is still in the queue after {} s",
                    job.id,
                    (self.grace + LEAVE_WAIT).as_secs()
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// The attempt's output once the job left the queue in `state`.
    fn ended(
        &self,
        mut job: Followed,
        end_state: EndState,
        watch: LogWatch,
        log: &Path,
        limit: Option<Duration>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let (summary, save_marks, tail, stored) =
            watch.finish_all(on_event, &mut |line| see_exit(line, &mut job));
        stored?;
        if end_state.state == "FAILED" && job.exit.is_none() {
            job.exit = (end_state.exit).or_else(|| read_end(job.id).ok().and_then(|e| e.exit));
        }
        job.exit = job_exit(&job);
        let now = Instant::now();
        let end = job.ended.unwrap_or(now);
        // Queued: from submission until the job started, or, one that never started, until
        // it left the queue (or was given up): then all of it was pending.
        let queued = job.started.unwrap_or(end).duration_since(job.submitted);
        let wall = job
            .started
            .map_or(Duration::ZERO, |s| end.duration_since(s));
        let signs = crate::run::watch::signs(&summary);
        let cancelled = match job.cancel.clone().map_or(Cancelled::No, |(why, _, _)| why) {
            Cancelled::NotStarted { reason, .. } => Cancelled::NotStarted {
                reason,
                pending_seconds: queued.as_secs_f64(),
            },
            other => other,
        };
        let ours = cancelled_line(&job, &cancelled, &self.out_dir);
        // Slurm ended the job itself (TIMEOUT, CANCELLED by someone, NODE_FAIL, ...): its word
        // explains it, not the signal's echo in the log (`Exited with exit code 143`).
        let slurm_ended_it = cancelled == Cancelled::No && slurm_ended(&end_state.state).is_some();
        // Slurm enforces whole minutes.
        let limit_seconds = limit.map_or(0.0, |l| (crate::plan::slurm_minutes(l) * 60) as f64);
        let outcome = outcome(&end_state.state, job.exit, cancelled, signs, limit_seconds);
        let (log_line, log_tail) = crate::run::watch::diagnosis(&summary, tail, outcome.passed());
        let slurms =
            (!outcome.passed()).then(|| slurm_line(job.id, &end_state, job.exit, &job.nodes));
        let failure_line = match slurm_ended_it {
            true => ours.or(slurms),
            false => ours.or(log_line).or(slurms),
        };
        Ok(AttemptOutput {
            outcome,
            signs,
            failure_line,
            log_tail,
            log: log.to_path_buf(),
            wall,
            queued: Some(queued),
            host: job.nodes,
            observed: Some(Observed {
                summary,
                nodes: Vec::new(),
                save_marks,
                // One console log holds every run of the batch job; it is not split per run.
                resumed: None,
            }),
        })
    }
}

/// Reads what Slurm's copy of the output gained; its existence means the batch script
/// started. A log that cannot be read is an infrastructure error that names it.
fn read_log(
    tail: &mut Tail,
    watch: &mut LogWatch,
    job: &mut Followed,
    raw: &Path,
    on_event: &mut dyn FnMut(ExecEvent),
) -> Result<(), String> {
    if job.started.is_none() && raw.exists() {
        mark_started(job, on_event);
    }
    tail.read(&mut |bytes| watch.feed(bytes, on_event, &mut |line| see_exit(line, job)))
        .map_err(|e| format!("cannot read the job's output {}: {e}", raw.display()))
}

/// `samples`, or `samples.attempt2` for later attempts: where every node's sampler writes.
fn samples_name(attempt: u32) -> String {
    match attempt {
        1 => "samples".to_owned(),
        n => format!("samples.attempt{n}"),
    }
}

/// For a direct launch, the bare entry name resolved as `launch` would (beside goldgate's
/// executable, then PATH): the nodes run the script without goldgate's PATH tweaks.
fn entry_program(job: &Job) -> Option<String> {
    let name = job.runs.first()?.entry_argv.first()?;
    if job.launcher != Launcher::Direct || name.contains('/') {
        return None;
    }
    let exe = std::env::current_exe().ok();
    let exe_dir: Option<PathBuf> = exe.as_deref().and_then(Path::parent).map(Path::to_path_buf);
    let path_var = std::env::var_os("PATH");
    crate::plan::resolve_program(name, exe_dir.as_deref(), path_var.as_deref())
        .map(|p| p.display().to_string())
}
