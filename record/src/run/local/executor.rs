//! Stage "run", local executor: runs each attempt of a job as process groups on this machine
//! — the job's runs in order, each launched (`launch`) while its log streams through a
//! [`LogWatch`] and the memory samplers watch its process group — and returns what was
//! observed. `--jobs N` workers each get their own slice of the GPUs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::sampling;
use super::scripts::{self, Hook, ScriptFailure};
use crate::launch::{self, FailureSigns, LaunchError, LaunchEvent, LaunchSpec, Settle};
use crate::metrics::Observed;
use crate::observe::probe::install::{ProbeMode, install, probe_dir_only};
use crate::plan::{Job, Launcher, RunSpec};
use crate::run::event::ExecEvent;
use crate::run::executor::{AttemptContext, AttemptOutput, Executor, Refusal, create_job_dirs};
use crate::run::options::RunOptions;
use crate::run::watch::LogWatch;

/// Runs jobs as process groups on this machine.
#[derive(Clone, Debug)]
pub struct LocalExecutor {
    timeout: Option<Duration>,
    grace: Duration,
    sample_interval: Duration,
    probe: ProbeMode,
    /// `--settle`: what to do to the node before each attempt.
    settle: Settle,
    /// `CUDA_VISIBLE_DEVICES` of each worker; `None` (no slicing) with one worker.
    slices: Vec<Option<String>>,
    host: String,
    /// Run the cases' BEFORE_SCRIPT and AFTER_SCRIPT (`--no-scripts`: no).
    scripts: bool,
    /// `--no-capture`: echo each log line to goldgate's stderr.
    echo: bool,
    /// `--keep-raw-log`: also keep the job's output unredacted, beside the stored log.
    keep_raw_log: bool,
}

impl LocalExecutor {
    /// An executor for `jobs` under `opts`, with one GPU slice per worker.
    pub fn new(opts: &RunOptions, jobs: &[Job]) -> Result<LocalExecutor, LaunchError> {
        Ok(LocalExecutor {
            timeout: opts.timeout,
            grace: opts.grace,
            sample_interval: opts.sample_interval,
            probe: opts.probe,
            settle: opts.settle,
            slices: gpu_slices(jobs, opts.workers_for(jobs.len()))?,
            host: crate::run::provenance::hostname(),
            scripts: opts.scripts,
            echo: opts.no_capture,
            keep_raw_log: opts.keep_raw_log,
        })
    }
}

impl Executor for LocalExecutor {
    fn name(&self) -> &'static str {
        "local"
    }

    /// One node only: a job of several nodes needs one launcher per node.
    fn admit(&self, job: &Job) -> Result<(), Refusal> {
        if job.nodes <= 1 {
            return Ok(());
        }
        Err(Refusal {
            reason: format!(
                "needs {} nodes ({} ranks), and the local executor runs one node",
                job.nodes,
                job.world_size()
            ),
            hint: Some(
                "run it with the Slurm executor, which starts one launcher per node (`goldgate repro` prints the per-node command), or give it one node with --nodes 1 if its parallel layout fits".to_owned(),
            ),
        })
    }

    fn attempt(
        &self,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> AttemptOutput {
        self.try_attempt(ctx, on_event)
            .unwrap_or_else(|message| AttemptOutput::launch_error(message, self.host.clone()))
    }
}

impl LocalExecutor {
    /// Every run of the job, stopping at the first that does not pass. `Err` is an
    /// infrastructure error (a folder, the probe, the program).
    fn try_attempt(
        &self,
        ctx: &AttemptContext<'_>,
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let job = ctx.job;
        create_job_dirs(job)?;
        let env = self.job_env(job)?;
        // Settled once per attempt, before its first run: the watch records what was done.
        let settled = launch::settle(self.settle)
            .map_err(|e| format!("cannot settle the node before the job: {e}"))?;
        let settle = (self.settle.label(), Some(settled.as_secs_f64()));
        let mut outputs = Vec::new();
        for (index, run) in job.runs.iter().enumerate() {
            for action in &run.before {
                crate::run::actions::apply(action)?;
            }
            on_event(ExecEvent::RunStarted { run: index + 1 });
            let log = job
                .dirs
                .logs
                .join(log_name(job.runs.len(), index, ctx.number));
            let spec = self.spec(job, run, &env, &log, ctx.worker)?;
            let output = self.run_with_scripts(&spec, &log, index, ctx, settle, on_event)?;
            let passed = output.outcome.passed();
            outputs.push(output);
            if !passed {
                break;
            }
        }
        job_output(job, outputs)
    }

    /// One run with the case's scripts around it: a failed `BEFORE_SCRIPT` is the run's
    /// failure (the training does not start); a failed `AFTER_SCRIPT` fails a run that passed.
    fn run_with_scripts(
        &self,
        spec: &LaunchSpec,
        run_log: &Path,
        index: usize,
        ctx: &AttemptContext<'_>,
        settle: (&str, Option<f64>),
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let job = ctx.job;
        let log = |hook: Hook| {
            let name = log_name(job.runs.len(), index, ctx.number);
            let stem = hook.field().to_ascii_lowercase();
            job.dirs.logs.join(name.replacen("console", &stem, 1))
        };
        let script = |text: &Option<String>| text.clone().filter(|_| self.scripts);
        if let Some(text) = script(&job.before_script)
            && let Some(failed) =
                scripts::run_script(Hook::Before, &text, spec, log(Hook::Before), ctx.stop)?
        {
            return Ok(self.script_failed(failed));
        }
        let mut output = self.run_once(spec, run_log, ctx, settle, on_event)?;
        if let Some(text) = script(&job.after_script) {
            let mut after = spec.clone();
            let code = scripts::exit_code(&output.outcome).to_string();
            after.env.insert("EXIT_CODE".to_owned(), code);
            let failed =
                scripts::run_script(Hook::After, &text, &after, log(Hook::After), ctx.stop)?;
            if let (Some(failed), true) = (failed, output.outcome.passed()) {
                output.outcome = failed.outcome;
                output.failure_line = Some(failed.line);
            }
        }
        Ok(output)
    }

    /// The attempt's output when a script failed before the training ran.
    fn script_failed(&self, failed: ScriptFailure) -> AttemptOutput {
        AttemptOutput {
            outcome: failed.outcome,
            signs: FailureSigns::NONE,
            failure_line: Some(failed.line),
            log_tail: Vec::new(),
            log: failed.log,
            wall: Duration::ZERO,
            queued: None,
            host: self.host.clone(),
            observed: None,
        }
    }

    /// The launch spec of one run: launcher words with a free port, the job's and the run's
    /// variables, this worker's GPUs.
    fn spec(
        &self,
        job: &Job,
        run: &RunSpec,
        env: &BTreeMap<String, String>,
        log: &Path,
        worker: usize,
    ) -> Result<LaunchSpec, String> {
        let port = launch::free_port().map_err(|e| e.to_string())?;
        let site = job.site(&port.to_string());
        let argv = launch::command_line(&job.launcher, run, &site, &job.dirs.job)
            .map_err(|e| e.to_string())?;
        let mut spec = LaunchSpec::new(argv, job.dirs.job.clone());
        spec.raw_log = self
            .keep_raw_log
            .then(|| crate::run::watch::raw_log_path(log));
        spec.env = env.clone();
        spec.env
            .extend(run.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        spec.env_unset = job.env_unset.clone();
        spec.timeout = self.timeout_of(job);
        spec.grace = self.grace;
        spec.cuda_visible_devices = self.slices.get(worker).cloned().flatten();
        Ok(spec)
    }

    /// The job's environment: the plan's, plus the probe for Python jobs (for other jobs, the
    /// probe folder only: a workload may write probe files itself).
    fn job_env(&self, job: &Job) -> Result<BTreeMap<String, String>, String> {
        let mut env = job.env.clone();
        if self.probe.torch && !is_python_job(job) {
            let extra = probe_dir_only(&job.dirs.job).map_err(|e| {
                format!(
                    "cannot create the probe folder in {}: {e}",
                    job.dirs.job.display()
                )
            })?;
            env.extend(extra);
        } else if self.probe.torch {
            let existing = env
                .get("PYTHONPATH")
                .cloned()
                .or_else(|| std::env::var("PYTHONPATH").ok());
            // The probe polls allocator statistics every 5 s at most: enough for a timeline of a
            // training job, and cheap (see README, "The allocator probe").
            let interval = self.sample_interval.as_secs_f64().max(5.0);
            let extra =
                install(&job.dirs.job, self.probe, interval, existing.as_deref()).map_err(|e| {
                    format!(
                        "cannot install the probe in {}: {e}",
                        job.dirs.job.display()
                    )
                })?;
            env.extend(extra);
        }
        Ok(env)
    }

    /// One launch of one run, observed: its log through a [`LogWatch`], its process group
    /// through the samplers.
    fn run_once(
        &self,
        spec: &LaunchSpec,
        log: &Path,
        ctx: &AttemptContext<'_>,
        (settle, settle_seconds): (&str, Option<f64>),
        on_event: &mut dyn FnMut(ExecEvent),
    ) -> Result<AttemptOutput, String> {
        let redactor = crate::run::watch::redactor(&spec.env, &spec.env_unset);
        let mut watch = LogWatch::new()
            .echoing(self.echo)
            .redacting(redactor.clone())
            .storing(log)?;
        let node = crate::observe::node::watch(&ctx.job.dirs.checkpoints, settle, settle_seconds);
        let sampler = sampling::start(
            self.sample_interval,
            spec.cuda_visible_devices.as_deref(),
            node,
        );
        let report = launch::launch(spec, ctx.stop, |event| match event {
            LaunchEvent::Spawned { pgid, .. } => sampler.watch(pgid),
            LaunchEvent::Output(bytes) => watch.feed(bytes, on_event, &mut |_| {}),
        });
        let mut sampled = sampler.stop(self.host.clone());
        // The launcher's per-rank logs (torchrun's `--log-dir`) are uploaded with the console
        // log: masked as it is, now that nothing writes them.
        sampled.warnings.extend(crate::run::rank_logs::mask(
            &ctx.job.dirs.logs,
            log,
            &redactor,
            self.keep_raw_log,
        ));
        let report = report.map_err(|e| with_causes(&e))?;
        if !report.escaped.is_empty() {
            sampled.warnings.push(escaped_warning(&report.escaped));
        }
        let (summary, save_marks, tail, stored) = watch.finish_all(on_event, &mut |_| {});
        stored?;
        let signs = crate::run::watch::signs(&summary);
        let outcome = launch::classify(report.outcome, signs, self.timeout_of(ctx.job));
        let (failure_line, log_tail) =
            crate::run::watch::diagnosis(&summary, tail, outcome.passed());
        Ok(AttemptOutput {
            outcome,
            signs,
            failure_line,
            log_tail,
            log: log.to_path_buf(),
            wall: report.wall,
            queued: None,
            host: self.host.clone(),
            observed: Some(Observed {
                summary,
                nodes: vec![sampled],
                save_marks,
                resumed: None,
            }),
        })
    }

    /// `--timeout` when given, else the job's own limit (its case's, or its platform's).
    fn timeout_of(&self, job: &Job) -> Option<Duration> {
        self.timeout.or(job.timeout)
    }
}

/// What a job's runs add up to. A resume test (ckpt-resume, frozen-resume) whose runs all
/// passed is its first run — the one Megatron compares with the golden values — carrying the
/// second run's log as the resumed run, and the wall time of both; any other job is its last
/// run (the one that failed, or the only one).
fn job_output(job: &Job, mut outputs: Vec<AttemptOutput>) -> Result<AttemptOutput, String> {
    let all_passed = outputs.iter().all(|o| o.outcome.passed());
    if job.test_type.resumes() && outputs.len() == 2 && all_passed {
        let second = outputs.pop();
        let mut first = outputs.pop();
        if let (Some(first), Some(second)) = (&mut first, second) {
            first.wall += second.wall;
            if let Some(observed) = &mut first.observed {
                observed.resumed = second.observed.map(|o| o.summary);
            }
        }
        return first.ok_or_else(|| format!("job {} has no run", job.id));
    }
    outputs
        .pop()
        .ok_or_else(|| format!("job {} has no run", job.id))
}

/// An error and its causes on one line (`cannot write the job log x: File too large`): the
/// cause is what a user can act on.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The warning for processes that left the job's process group and outlived it.
fn escaped_warning(escaped: &[String]) -> String {
    format!(
        "{} process(es) escaped the job's process group and outlived it; goldgate stopped them: {}",
        escaped.len(),
        escaped.join(", ")
    )
}

/// `console.log`, or with several runs or attempts `console.run2.attempt3.log`.
fn log_name(runs: usize, index: usize, attempt: u32) -> String {
    match (runs, attempt) {
        (1, 1) => "console.log".to_string(),
        (1, n) => format!("console.attempt{n}.log"),
        (_, 1) => format!("console.run{}.log", index + 1),
        (_, n) => format!("console.run{}.attempt{n}.log", index + 1),
    }
}

/// Torchrun-style launchers run Python; a direct entry is Python when it is `python*` or a `.py`.
fn is_python_job(job: &Job) -> bool {
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

/// One `CUDA_VISIBLE_DEVICES` slice per worker (`--jobs N`); no slicing for one worker.
fn gpu_slices(jobs: &[Job], workers: usize) -> Result<Vec<Option<String>>, LaunchError> {
    let n = u32::try_from(workers).unwrap_or(u32::MAX);
    if n <= 1 {
        return Ok(vec![None]);
    }
    let nproc = jobs.iter().map(|j| j.nproc).max().unwrap_or(1);
    let per_node = jobs.first().map(|j| j.nproc).unwrap_or(1).max(nproc);
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let gpus = launch::visible_gpus(per_node.saturating_mul(n), visible.as_deref());
    Ok(launch::gpu_slices(&gpus, nproc, n)?
        .into_iter()
        .map(Some)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names_tell_runs_and_attempts_apart() {
        assert_eq!(log_name(1, 0, 1), "console.log");
        assert_eq!(log_name(1, 0, 2), "console.attempt2.log");
        assert_eq!(log_name(2, 1, 1), "console.run2.log");
        assert_eq!(log_name(2, 0, 3), "console.run1.attempt3.log");
    }
}
