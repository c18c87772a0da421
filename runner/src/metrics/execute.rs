//! Stage "metrics": runs one planned job end to end — launch it (with retries), observe its
//! log as it streams and its memory with the samplers, read the probe — and returns the
//! [`RunRecord`] that `goldgate run` writes to `results.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::build::{self, Peaks};
use super::record::{
    Attempt, CheckpointRecord, Fingerprint, MemoryRecord, Outcome, RunRecord, SCHEMA_VERSION,
    VariantRecord,
};
use super::sampling::{self, Sampled};
use crate::launch::{self, FailureSigns, JobStatus, LaunchEvent, LaunchSpec, StopFlag};
use crate::observe::log::{LogEvent, LogParser, LogSummary, SummaryBuilder};
use crate::observe::probe::install::{ProbeMode, install};
use crate::plan::Job;

/// How `goldgate run` runs each job.
#[derive(Clone, Debug)]
pub struct ExecOptions {
    pub run_id: String,
    pub timeout: Option<Duration>,
    pub grace: Duration,
    pub retries: u32,
    pub sample_interval: Duration,
    pub probe: ProbeMode,
    pub keep_checkpoints: bool,
    /// This job's slice of GPUs (`--jobs N`), when slicing.
    pub cuda_visible_devices: Option<String>,
    /// goldgate's working directory (where relative entry paths point).
    pub base_dir: PathBuf,
}

/// What happens while a job runs, for the progress display.
#[derive(Debug)]
pub enum JobEvent<'a> {
    /// An attempt of a run started.
    Started { attempt: u32, run: usize },
    /// The log printed iteration `step` of `of`.
    Step { step: u64, of: Option<u64> },
    /// A raw log line (for `--verbose`-style echoing).
    Line(&'a [u8]),
}

/// What one launch of one run produced.
struct RunResult {
    status: JobStatus,
    summary: LogSummary,
    sampled: Sampled,
    wall: Duration,
    log: PathBuf,
    save_marks: Vec<(f64, Option<f64>, u64)>,
    failure_line: Option<String>,
}

/// Runs `job` and returns its record. Infrastructure errors (the program cannot be found,
/// the log cannot be written) become a `launch-error` outcome, so one broken job never
/// loses the others' results.
pub fn execute(
    job: &Job,
    opts: &ExecOptions,
    stop: &StopFlag,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> RunRecord {
    let started_at = jiff::Timestamp::now().to_string();
    let start = Instant::now();
    let mut attempts = Vec::new();
    let mut last: Option<RunResult> = None;
    let mut outcome = Outcome::Interrupted;
    for number in 1..=opts.retries + 1 {
        if stop.is_requested() {
            break;
        }
        let attempt_start = jiff::Timestamp::now().to_string();
        match run_attempt(job, opts, stop, number, on_event) {
            Ok(result) => {
                outcome = outcome_of(result.status);
                attempts.push(Attempt {
                    number,
                    started_at: attempt_start,
                    wall_seconds: result.wall.as_secs_f64(),
                    outcome: outcome.clone(),
                    failure_line: result.failure_line.clone(),
                    log: relative(&job.dirs.job, &result.log),
                });
                let retry = launch::should_retry(
                    result.status,
                    signs(&result.summary),
                    number,
                    opts.retries,
                );
                last = Some(result);
                if !retry {
                    break;
                }
            }
            Err(message) => {
                outcome = Outcome::LaunchError {
                    message: message.clone(),
                };
                attempts.push(Attempt {
                    number,
                    started_at: attempt_start,
                    wall_seconds: 0.0,
                    outcome: outcome.clone(),
                    failure_line: Some(message),
                    log: PathBuf::new(),
                });
                break;
            }
        }
    }
    let probe = crate::observe::probe::read::read(&job.dirs.job);
    if !opts.keep_checkpoints {
        // Checkpoints of a finished job are not evidence; a disk full of them breaks the next job.
        let _ = std::fs::remove_dir_all(&job.dirs.checkpoints);
    }
    assemble(
        job,
        opts,
        started_at,
        start.elapsed(),
        outcome,
        attempts,
        last,
        probe,
    )
}

fn outcome_of(status: JobStatus) -> Outcome {
    match status {
        JobStatus::Passed => Outcome::Passed,
        JobStatus::Failed { code } => Outcome::Failed { exit_code: code },
        JobStatus::Killed { signal } => Outcome::Killed { signal },
        JobStatus::TimedOut => Outcome::TimedOut { after_seconds: 0.0 },
        JobStatus::OutOfMemory => Outcome::OutOfMemory,
        JobStatus::NcclTimeout => Outcome::NcclTimeout,
        JobStatus::Nan => Outcome::Nan,
        JobStatus::Interrupted => Outcome::Interrupted,
    }
}

fn signs(summary: &LogSummary) -> FailureSigns {
    use crate::observe::log::FailureKind;
    let has = |k: FailureKind| summary.failure_counts.get(&k).is_some_and(|n| *n > 0);
    FailureSigns {
        oom: has(FailureKind::Oom),
        nccl_timeout: has(FailureKind::NcclTimeout),
        nan: has(FailureKind::Nan),
        flaky: summary.failures.iter().any(|f| f.flaky),
    }
}

fn relative(base: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(base).unwrap_or(path).to_path_buf()
}

/// One attempt: every run of the job (two for ckpt-resume), stopping at the first failure.
fn run_attempt(
    job: &Job,
    opts: &ExecOptions,
    stop: &StopFlag,
    number: u32,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> Result<RunResult, String> {
    for dir in job.dirs.all() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let env = job_env(job, opts)?;
    let mut result = None;
    for (index, run) in job.runs.iter().enumerate() {
        on_event(JobEvent::Started {
            attempt: number,
            run: index + 1,
        });
        let name = match (job.runs.len(), number) {
            (1, 1) => "console.log".to_string(),
            (1, n) => format!("console.attempt{n}.log"),
            (_, 1) => format!("console.run{}.log", index + 1),
            (_, n) => format!("console.run{}.attempt{n}.log", index + 1),
        };
        let log = job.dirs.logs.join(name);
        for action in &run.before {
            apply_action(action)?;
        }
        let port = launch::free_port().map_err(|e| e.to_string())?;
        let site = job.site(&port.to_string());
        let argv = launch::command_line(
            job.launcher,
            run.nproc,
            &site,
            &run.entry_argv,
            &job.dirs.job,
        )
        .map_err(|e| e.to_string())?;
        let mut spec = LaunchSpec::new(argv, job.dirs.job.clone(), log.clone());
        spec.env = env.clone();
        spec.env.extend(run.env.clone());
        spec.env_unset = job.env_unset.clone();
        spec.timeout = opts.timeout;
        spec.grace = opts.grace;
        spec.cuda_visible_devices = opts.cuda_visible_devices.clone();
        let r = run_once(&spec, opts, stop, on_event)?;
        let passed = r.status.passed();
        result = Some(r);
        if !passed {
            break;
        }
    }
    result.ok_or_else(|| format!("job {} has no run", job.id))
}

/// Does one step the plan puts between runs; the error names the path.
fn apply_action(action: &crate::plan::RunAction) -> Result<(), String> {
    use crate::plan::RunAction;
    match action {
        RunAction::RemoveCheckpoint { dir, iteration } => {
            let path = dir.join(format!("iter_{iteration:07}"));
            match std::fs::remove_dir_all(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
            }
        }
        RunAction::WriteLatestIteration { dir, iteration } => {
            let path = dir.join("latest_checkpointed_iteration.txt");
            super::atomic::write_atomic(&path, format!("{iteration}\n").as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
    }
}

/// The job's environment: the plan's, plus the probe for Python jobs.
fn job_env(job: &Job, opts: &ExecOptions) -> Result<BTreeMap<String, String>, String> {
    let mut env = job.env.clone();
    if opts.probe.torch && is_python_job(job) {
        let existing = env
            .get("PYTHONPATH")
            .cloned()
            .or_else(|| std::env::var("PYTHONPATH").ok());
        // The probe polls allocator statistics every 5 s at most: enough for a timeline of a
        // training job, and cheap (see README, "The allocator probe").
        let interval = opts.sample_interval.as_secs_f64().max(5.0);
        let extra =
            install(&job.dirs.job, opts.probe, interval, existing.as_deref()).map_err(|e| {
                format!(
                    "cannot install the probe in {}: {e}",
                    job.dirs.job.display()
                )
            })?;
        env.extend(extra);
    }
    Ok(env)
}

/// Torchrun-style launchers run Python; a direct entry is Python when it is `python*` or a `.py`.
fn is_python_job(job: &Job) -> bool {
    use crate::plan::Launcher;
    if !matches!(job.launcher, Launcher::Direct) {
        return true;
    }
    job.runs
        .first()
        .and_then(|r| r.entry_argv.first())
        .map(|p| {
            let name = Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            name.starts_with("python") || name.ends_with(".py")
        })
        .unwrap_or(false)
}

/// When each checkpoint save started and ended, in seconds since the launch, by iteration:
/// the marks on the memory timeline.
#[derive(Default)]
struct SaveMarks(BTreeMap<u64, (f64, Option<f64>)>);

impl SaveMarks {
    fn see(&mut self, event: &LogEvent<'_>, t: f64) {
        match event {
            LogEvent::CheckpointSaving { iteration, .. } => {
                self.0.entry(*iteration).or_insert((t, None));
            }
            LogEvent::CheckpointSaved { iteration } => {
                if let Some(mark) = self.0.get_mut(iteration) {
                    mark.1.get_or_insert(t);
                }
            }
            _ => {}
        }
    }

    fn list(&self) -> Vec<(f64, Option<f64>, u64)> {
        self.0.iter().map(|(it, (s, e))| (*s, *e, *it)).collect()
    }
}

fn run_once(
    spec: &LaunchSpec,
    opts: &ExecOptions,
    stop: &StopFlag,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> Result<RunResult, String> {
    let sampler = sampling::start(opts.sample_interval, spec.cuda_visible_devices.as_deref());
    let mut parser = LogParser::new();
    let mut builder = SummaryBuilder::default();
    let mut lines = 0u64;
    let mut marks = SaveMarks::default();
    let t0 = Instant::now();
    let report = launch::launch(spec, stop, |event| match event {
        LaunchEvent::Spawned { pgid, .. } => sampler.watch(pgid),
        LaunchEvent::Line(line) => {
            lines += 1;
            on_event(JobEvent::Line(line));
            let Some(parsed) = parser.feed(line) else {
                return;
            };
            if let LogEvent::Iteration(it) = &parsed.event {
                on_event(JobEvent::Step {
                    step: it.iteration,
                    of: it.train_iters,
                });
            }
            marks.see(&parsed.event, t0.elapsed().as_secs_f64());
            builder.add(&parsed);
        }
    });
    let sampled = sampler.stop();
    let report = report.map_err(|e| e.to_string())?;
    builder.set_line_counts(lines, 0);
    let summary = builder.finish();
    let status = launch::classify(report.outcome, signs(&summary));
    let failure_line = (!status.passed())
        .then(|| summary.failures.first().map(|f| f.line.clone()))
        .flatten();
    Ok(RunResult {
        status,
        summary,
        sampled,
        wall: report.wall,
        log: report.log_path,
        save_marks: marks.list(),
        failure_line,
    })
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    job: &Job,
    opts: &ExecOptions,
    started_at: String,
    wall: Duration,
    mut outcome: Outcome,
    attempts: Vec<Attempt>,
    last: Option<RunResult>,
    probe: Option<crate::observe::probe::read::ProbeSummary>,
) -> RunRecord {
    if let (Outcome::TimedOut { after_seconds }, Some(t)) = (&mut outcome, opts.timeout) {
        *after_seconds = t.as_secs_f64();
    }
    let (metrics, checkpoints, memory, fingerprint) = match &last {
        Some(r) => {
            let saves: Vec<CheckpointRecord> = build::checkpoints(&r.summary);
            let peaks = Peaks {
                gpu_above_baseline: r.sampled.gpu_peak_above_baseline(),
                host_rss: r.sampled.host_peak_rss(),
                shm: r.sampled.shm_peak(),
            };
            let metrics = build::metrics(&r.summary, &saves, peaks, probe.as_ref());
            let mut memory = r.sampled.memory_record();
            memory.timeline.saves = r.save_marks.clone();
            (metrics, saves, memory, r.sampled.fingerprint())
        }
        None => (
            BTreeMap::new(),
            Vec::new(),
            MemoryRecord::default(),
            Fingerprint::default(),
        ),
    };
    let mut fingerprint = fingerprint;
    fingerprint.host = hostname();
    fingerprint.goldgate_version = env!("CARGO_PKG_VERSION").to_string();
    fingerprint.workload_commit = workload_commit(job, &opts.base_dir);
    RunRecord {
        schema_version: SCHEMA_VERSION,
        run_id: opts.run_id.clone(),
        job_id: job.id.clone(),
        case: job.case.clone(),
        variant: VariantRecord {
            name: job.variant.name(),
            slug: job.variant.slug(),
            choices: job.variant.choices.iter().cloned().collect(),
        },
        repeat: job.repeat,
        platform: job.platform.clone(),
        outcome,
        attempts,
        started_at,
        wall_seconds: wall.as_secs_f64(),
        argv: job
            .runs
            .iter()
            .map(|r| {
                r.entry_argv
                    .iter()
                    .map(|w| crate::plan::redact_text(job, w))
                    .collect()
            })
            .collect(),
        env: crate::plan::redacted_env(job),
        env_unset: job.env_unset.clone(),
        fingerprint,
        nondeterministic: [
            "NON_DETERMINSTIC_RESULTS",
            "NVTE_ALLOW_NONDETERMINISTIC_ALGO",
        ]
        .iter()
        .any(|k| {
            job.env
                .get(*k)
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
        }),
        metrics,
        checkpoints,
        memory,
        probe: probe.and_then(|p| serde_json::to_value(p).ok()),
        observer_cpu_seconds: last.as_ref().and_then(|r| r.sampled.observer_cpu_seconds),
        warnings: last.map(|r| r.sampled.warnings).unwrap_or_default(),
    }
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// The git commit of the folder holding the job's entry script, when it is a git checkout.
fn workload_commit(job: &Job, base_dir: &Path) -> Option<String> {
    let entry = job
        .runs
        .first()?
        .entry_argv
        .iter()
        .find(|w| w.ends_with(".py"))?;
    let dir = base_dir.join(entry).parent()?.to_path_buf();
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::log::LogParser;

    #[test]
    fn save_marks_pair_saving_and_saved_lines_by_iteration() {
        let mut parser = LogParser::new();
        let mut m = SaveMarks::default();
        let lines: [(&[u8], f64); 3] = [
            (b"[2026-11-29 20:16:15.068999] saving checkpoint at iteration      10 to /c in torch_dist format", 1.0),
            (b"  [2026-11-29 20:16:18.552401] successfully saved checkpoint from iteration      10 to /c [ t 1/1, gtp_remat 1/1, p 1/1 ]", 2.5),
            (b"[2026-11-29 20:16:19.068999] saving checkpoint at iteration      20 to /c in torch_dist format", 4.0),
        ];
        for (line, t) in lines {
            let parsed = parser.feed(line).unwrap();
            m.see(&parsed.event, t);
        }
        assert_eq!(m.list(), vec![(1.0, Some(2.5), 10), (4.0, None, 20)]);
    }
}
