//! Stage "run": the scheduler. Hands planned jobs, in plan order, to `--jobs N` worker
//! threads; each worker runs a job's attempts on the [`Executor`] (retrying flaky failures
//! under `--retries`, every attempt recorded), builds its record and emits the events the
//! reporter and the results writer consume. A stop request (Ctrl-C / SIGTERM) lets running
//! attempts end as interrupted and starts nothing new.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::error::RunError;
use super::event::{ExecEvent, RunEvent};
use super::executor::{AttemptContext, AttemptOutput, Executor};
use super::options::RunOptions;
use super::provenance::workload_commit;
use crate::launch::StopFlag;
use crate::metrics::{JobResult, build};
use crate::plan::Job;
use goldgate_schema::{Attempt, Outcome, RunRecord};

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Records of the jobs that ran, in plan order (jobs never started are absent).
    pub records: Vec<RunRecord>,
    /// Whether a stop request ended the run.
    pub interrupted: bool,
}

/// The events of every worker, delivered one at a time.
type Sink<'s> = Mutex<&'s mut (dyn FnMut(RunEvent<'_>) + Send)>;

/// Runs `jobs` on `executor` and emits every [`RunEvent`] to `on_event`. Refuses the whole
/// run, before anything starts, when the executor refuses any job.
pub fn run_jobs(
    jobs: &[Job],
    executor: &dyn Executor,
    opts: &RunOptions,
    stop: &StopFlag,
    on_event: &mut (dyn FnMut(RunEvent<'_>) + Send),
) -> Result<RunSummary, RunError> {
    admit(jobs, executor)?;
    on_event(RunEvent::RunStarted {
        run_id: &opts.run_id,
        jobs,
    });
    let sink: Sink<'_> = Mutex::new(on_event);
    let next = AtomicUsize::new(0);
    let records = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..opts.workers_for(jobs.len()) {
            let (sink, next, records) = (&sink, &next, &records);
            scope.spawn(move || {
                while let Some((index, job)) = take(jobs, next, stop) {
                    let record = run_job(index, job, worker, executor, opts, stop, sink);
                    if let Ok(mut r) = records.lock() {
                        r.push((index, record));
                    }
                }
            });
        }
    });
    let interrupted = stop.is_requested();
    emit(&sink, RunEvent::RunFinished { interrupted });
    let mut records = records.into_inner().unwrap_or_default();
    records.sort_by_key(|(i, _)| *i);
    Ok(RunSummary {
        records: records.into_iter().map(|(_, r)| r).collect(),
        interrupted,
    })
}

/// Asks the executor about every job; all refusals are reported together.
fn admit(jobs: &[Job], executor: &dyn Executor) -> Result<(), RunError> {
    let refused: Vec<_> = jobs
        .iter()
        .filter_map(|j| executor.admit(j).err().map(|r| (j, r)))
        .collect();
    let Some((_, first)) = refused.first() else {
        return Ok(());
    };
    let hint = first
        .hint
        .clone()
        .unwrap_or_else(|| "leave these jobs out of the selection".to_owned());
    let list = refused
        .iter()
        .map(|(j, r)| format!("  {}: {}", j.id, r.reason))
        .collect::<Vec<_>>()
        .join("\n");
    Err(RunError::Refused {
        executor: executor.name(),
        count: refused.len(),
        list,
        hint,
    })
}

/// The next job in plan order, unless the run is being stopped.
fn take<'j>(jobs: &'j [Job], next: &AtomicUsize, stop: &StopFlag) -> Option<(usize, &'j Job)> {
    if stop.is_requested() {
        return None;
    }
    let index = next.fetch_add(1, Ordering::SeqCst);
    jobs.get(index).map(|job| (index, job))
}

fn emit(sink: &Sink<'_>, event: RunEvent<'_>) {
    // A consumer that panicked poisons the lock; the run goes on without it.
    if let Ok(mut on_event) = sink.lock() {
        on_event(event);
    }
}

/// Every attempt of one job, then its record.
fn run_job(
    index: usize,
    job: &Job,
    worker: usize,
    executor: &dyn Executor,
    opts: &RunOptions,
    stop: &StopFlag,
    sink: &Sink<'_>,
) -> RunRecord {
    emit(sink, RunEvent::JobStarted { index, job });
    let started_at = jiff::Timestamp::now().to_string();
    let start = Instant::now();
    let mut attempts = Vec::new();
    let mut last: Option<AttemptOutput> = None;
    for number in 1..=opts.retries.saturating_add(1) {
        if stop.is_requested() {
            break;
        }
        let ctx = AttemptContext {
            job,
            number,
            worker,
            stop,
        };
        let attempt_start = jiff::Timestamp::now().to_string();
        let output = executor.attempt(&ctx, &mut |event: ExecEvent| {
            emit(sink, RunEvent::Exec { index, job, event });
        });
        let attempt = attempt_record(job, number, attempt_start, &output);
        let retrying = may_retry(&output, number, opts.retries);
        emit(
            sink,
            RunEvent::AttemptFinished {
                index,
                job,
                attempt: &attempt,
                retrying,
            },
        );
        attempts.push(attempt);
        last = Some(output);
        if !retrying {
            break;
        }
    }
    let record = finish_job(job, opts, started_at, start, attempts, last);
    emit(
        sink,
        RunEvent::JobFinished {
            index,
            job,
            record: &record,
        },
    );
    record
}

/// Whether attempt `number` (1-based) may be followed by another under `--retries retries`:
/// failures whose log matched a marker Megatron's CI retries, and failures of the cluster
/// rather than the job (a node that failed, a preemption).
pub fn may_retry(output: &AttemptOutput, number: u32, retries: u32) -> bool {
    let retryable = match output.outcome {
        Outcome::Passed
        | Outcome::Interrupted
        | Outcome::LaunchError { .. }
        | Outcome::NotStarted { .. } => false,
        Outcome::Infrastructure { .. } => true,
        _ => output.signs.flaky,
    };
    retryable && number <= retries
}

fn attempt_record(job: &Job, number: u32, started_at: String, out: &AttemptOutput) -> Attempt {
    Attempt {
        number,
        started_at,
        wall_seconds: out.wall.as_secs_f64(),
        outcome: out.outcome.clone(),
        failure_line: out.failure_line.clone(),
        log_tail: out.log_tail.clone(),
        log: out
            .log
            .strip_prefix(&job.dirs.job)
            .unwrap_or(&out.log)
            .to_path_buf(),
        queued_seconds: out.queued.map(|q| q.as_secs_f64()),
    }
}

/// Reads the probe, removes the checkpoints (unless kept) and builds the job's record.
fn finish_job(
    job: &Job,
    opts: &RunOptions,
    started_at: String,
    start: Instant,
    attempts: Vec<Attempt>,
    last: Option<AttemptOutput>,
) -> RunRecord {
    let probe = crate::observe::probe::read::read(&job.dirs.job);
    let checkpoint_folders = crate::observe::ckpt_folders::folder_sizes(&job.dirs.checkpoints);
    if !opts.keep_checkpoints {
        // Checkpoints of a finished job are not evidence; a disk full of them breaks the next job.
        let _ = std::fs::remove_dir_all(&job.dirs.checkpoints);
    }
    let (outcome, host, observed) = match last {
        Some(out) => (out.outcome, out.host, out.observed),
        None => (Outcome::Interrupted, super::provenance::hostname(), None),
    };
    let result = JobResult {
        run_id: opts.run_id.clone(),
        started_at,
        wall: start.elapsed(),
        outcome,
        attempts,
        observed,
        probe,
        checkpoint_folders,
        host,
        workload_commit: workload_commit(job, &opts.base_dir),
        tensorboard: opts.tensorboard.then(|| read_tensorboard(job)),
    };
    build::record(job, result)
}

/// Each run's TensorBoard folder, read: the first run's, and a resume test's second.
fn read_tensorboard(job: &Job) -> build::TensorboardRead {
    let read = |n: usize| {
        let dir = job
            .runs
            .get(n)
            .and_then(|r| r.env.get("TENSORBOARD_PATH"))
            .or_else(|| job.env.get("TENSORBOARD_PATH"))
            .map_or_else(|| job.dirs.tensorboard.clone(), std::path::PathBuf::from);
        let scalars = goldgate_core::tensorboard::job_scalars(&dir).map_err(|e| e.to_string());
        (dir, scalars)
    };
    build::TensorboardRead {
        first: read(0),
        resumed: (job.test_type.resumes() && job.runs.len() > 1).then(|| read(1)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::Condvar;
    use std::time::Duration;

    use super::*;
    use crate::launch::FailureSigns;
    use crate::run::executor::Refusal;
    use crate::run::progress::Progress;
    use crate::run::writer::ResultsWriter;

    /// What the mock does for one attempt of one case.
    #[derive(Clone, Copy)]
    enum Script {
        Pass,
        Fail {
            flaky: bool,
        },
        LaunchError,
        /// Asks the run to stop (as Ctrl-C would), then ends interrupted.
        CtrlC,
    }

    /// hyperfine's mock-executor idea: scripted outcomes, no processes.
    #[derive(Default)]
    struct Mock {
        /// case → outcome of attempt 1, 2, ... (the last repeats).
        scripts: BTreeMap<String, Vec<Script>>,
        /// Cases it refuses.
        refuse: Vec<String>,
        /// Each attempt waits (at most 10 s) until this many attempts have started.
        rendezvous: usize,
        state: Mutex<MockState>,
        changed: Condvar,
    }

    #[derive(Default)]
    struct MockState {
        started: usize,
        active: usize,
        max_active: usize,
        /// (job id, attempt, worker) in the order attempts started.
        calls: Vec<(String, u32, usize)>,
    }

    impl Mock {
        fn script(mut self, case: &str, script: &[Script]) -> Mock {
            self.scripts.insert(case.to_owned(), script.to_vec());
            self
        }

        fn state(&self) -> std::sync::MutexGuard<'_, MockState> {
            self.state.lock().unwrap()
        }

        fn enter(&self, ctx: &AttemptContext<'_>) {
            let mut s = self.state();
            s.started += 1;
            s.active += 1;
            s.max_active = s.max_active.max(s.active);
            s.calls.push((ctx.job.id.clone(), ctx.number, ctx.worker));
            self.changed.notify_all();
            let target = self.rendezvous;
            let (mut s, _) = self
                .changed
                .wait_timeout_while(s, Duration::from_secs(10), |s| s.started < target)
                .unwrap();
            s.active -= 1;
        }
    }

    impl Executor for Mock {
        fn name(&self) -> &'static str {
            "mock"
        }

        fn admit(&self, job: &Job) -> Result<(), Refusal> {
            match self.refuse.contains(&job.case) {
                true => Err(Refusal {
                    reason: "needs 2 nodes".to_owned(),
                    hint: Some("use a bigger executor".to_owned()),
                }),
                false => Ok(()),
            }
        }

        fn attempt(
            &self,
            ctx: &AttemptContext<'_>,
            on_event: &mut dyn FnMut(ExecEvent),
        ) -> AttemptOutput {
            self.enter(ctx);
            on_event(ExecEvent::RunStarted { run: 1 });
            on_event(ExecEvent::Step {
                step: 1,
                of: None,
                iteration_ms: None,
            });
            let script = self.scripts.get(&ctx.job.case).map_or(Script::Pass, |s| {
                s[(ctx.number as usize - 1).min(s.len() - 1)]
            });
            let (outcome, flaky) = match script {
                Script::Pass => (Outcome::Passed, false),
                Script::Fail { flaky } => (Outcome::Failed { exit_code: 1 }, flaky),
                Script::LaunchError => {
                    return AttemptOutput::launch_error("no such program".into(), "h".into());
                }
                Script::CtrlC => {
                    ctx.stop.request();
                    (Outcome::Interrupted, false)
                }
            };
            AttemptOutput {
                outcome,
                signs: FailureSigns {
                    flaky,
                    ..FailureSigns::default()
                },
                failure_line: None,
                log_tail: Vec::new(),
                log: ctx.job.dirs.logs.join("console.log"),
                wall: Duration::from_millis(1500),
                queued: None,
                host: "h".to_owned(),
                observed: None,
            }
        }
    }

    fn jobs(out: &Path, cases: &[&str]) -> Vec<Job> {
        cases.iter().map(|c| Job::fixture(out, c, 1)).collect()
    }

    fn options(out: &Path, workers: u32, retries: u32) -> RunOptions {
        let mut o = RunOptions::new("r", out, out);
        o.workers = workers;
        o.retries = retries;
        o
    }

    /// Runs the mock and returns the summary and the events as short strings.
    fn run(
        jobs: &[Job],
        mock: &Mock,
        opts: &RunOptions,
        stop: &StopFlag,
    ) -> (RunSummary, Vec<String>) {
        let mut events = Vec::new();
        let summary = run_jobs(jobs, mock, opts, stop, &mut |e| events.push(short(&e))).unwrap();
        (summary, events)
    }

    fn short(e: &RunEvent<'_>) -> String {
        match e {
            RunEvent::RunStarted { jobs, .. } => format!("run {}", jobs.len()),
            RunEvent::JobStarted { index, .. } => format!("start {index}"),
            RunEvent::Exec { index, event, .. } => format!("exec {index} {event:?}"),
            RunEvent::AttemptFinished {
                index,
                attempt,
                retrying,
                ..
            } => format!("attempt {index}.{} retry={retrying}", attempt.number),
            RunEvent::JobFinished { index, record, .. } => {
                format!("done {index} {}", record.outcome.label())
            }
            RunEvent::RunFinished { interrupted } => format!("finished interrupted={interrupted}"),
        }
    }

    #[test]
    fn retries_only_flaky_failures_within_budget() {
        let out = |outcome: Outcome, flaky: bool| {
            AttemptOutput {
                signs: FailureSigns {
                    nccl_timeout: true,
                    flaky,
                    ..FailureSigns::default()
                },
                ..AttemptOutput::launch_error(String::new(), String::new())
            }
            .with_outcome(outcome)
        };
        let failed = out(Outcome::NcclTimeout, true);
        assert!(may_retry(&failed, 1, 2));
        assert!(may_retry(&failed, 2, 2));
        assert!(!may_retry(&failed, 3, 2));
        assert!(!may_retry(&failed, 1, 0));
        assert!(!may_retry(&out(Outcome::NcclTimeout, false), 1, 2));
        assert!(!may_retry(&out(Outcome::Passed, true), 1, 2));
        assert!(!may_retry(&out(Outcome::Interrupted, true), 1, 2));
        let launch = Outcome::LaunchError {
            message: String::new(),
        };
        assert!(!may_retry(&out(launch, true), 1, 2));
    }

    impl AttemptOutput {
        fn with_outcome(mut self, outcome: Outcome) -> AttemptOutput {
            self.outcome = outcome;
            self
        }
    }

    #[test]
    fn one_worker_runs_jobs_in_plan_order_with_events_in_order() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b", "m/c"]);
        let mock = Mock::default().script("m/b", &[Script::Fail { flaky: false }]);
        let (summary, events) = run(&jobs, &mock, &options(out.path(), 1, 0), &StopFlag::new());
        let ids: Vec<_> = summary.records.iter().map(|r| r.job_id.as_str()).collect();
        assert_eq!(ids, ["m/a@default#1", "m/b@default#1", "m/c@default#1"]);
        assert_eq!(summary.records[1].outcome, Outcome::Failed { exit_code: 1 });
        assert!(!summary.interrupted);
        let job0: Vec<_> = events.iter().take(6).map(String::as_str).collect();
        assert_eq!(
            job0,
            [
                "run 3",
                "start 0",
                "exec 0 RunStarted { run: 1 }",
                "exec 0 Step { step: 1, of: None, iteration_ms: None }",
                "attempt 0.1 retry=false",
                "done 0 passed",
            ]
        );
        assert_eq!(events.len(), 1 + 3 * 5 + 1);
        assert_eq!(events.last().unwrap(), "finished interrupted=false");
        let workers: Vec<_> = mock.state().calls.iter().map(|c| c.2).collect();
        assert_eq!(workers, [0, 0, 0]);
    }

    #[test]
    fn jobs_n_runs_n_attempts_at_once_on_distinct_workers() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b", "m/c"]);
        let mock = Mock {
            rendezvous: 3,
            ..Mock::default()
        };
        let (summary, _) = run(&jobs, &mock, &options(out.path(), 3, 0), &StopFlag::new());
        let state = mock.state();
        assert_eq!(state.max_active, 3, "all three ran at once");
        let mut workers: Vec<_> = state.calls.iter().map(|c| c.2).collect();
        workers.sort();
        assert_eq!(workers, [0, 1, 2]);
        // Records come back in plan order whatever order the jobs finished in.
        let cases: Vec<_> = summary.records.iter().map(|r| r.case.as_str()).collect();
        assert_eq!(cases, ["m/a", "m/b", "m/c"]);
    }

    #[test]
    fn never_more_attempts_at_once_than_workers() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b", "m/c", "m/d", "m/e"]);
        let mock = Mock::default();
        let (summary, _) = run(&jobs, &mock, &options(out.path(), 2, 0), &StopFlag::new());
        assert_eq!(summary.records.len(), 5);
        let state = mock.state();
        assert!(state.max_active <= 2, "{}", state.max_active);
        assert!(state.calls.iter().all(|c| c.2 < 2));
    }

    #[test]
    fn retries_rerun_only_flaky_failures_and_record_every_attempt() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(
            out.path(),
            &["m/flaky-once", "m/broken", "m/always", "m/nolaunch"],
        );
        let flaky = Script::Fail { flaky: true };
        let mock = Mock::default()
            .script("m/flaky-once", &[flaky, Script::Pass])
            .script("m/broken", &[Script::Fail { flaky: false }])
            .script("m/always", &[flaky])
            .script("m/nolaunch", &[Script::LaunchError]);
        let (summary, events) = run(&jobs, &mock, &options(out.path(), 1, 2), &StopFlag::new());
        let attempts: Vec<_> = summary.records.iter().map(|r| r.attempts.len()).collect();
        assert_eq!(attempts, [2, 1, 3, 1]);
        let r = &summary.records;
        assert_eq!(r[0].outcome, Outcome::Passed);
        assert_eq!(r[0].attempts[0].outcome, Outcome::Failed { exit_code: 1 });
        assert_eq!(r[2].outcome, Outcome::Failed { exit_code: 1 });
        assert!(matches!(r[3].outcome, Outcome::LaunchError { .. }));
        assert_eq!(
            r[3].attempts[0].failure_line.as_deref(),
            Some("no such program")
        );
        assert_eq!(r[0].attempts[1].number, 2);
        assert_eq!(r[0].attempts[0].log, Path::new("logs/console.log"));
        assert_eq!(r[0].attempts[0].wall_seconds, 1.5);
        assert!(events.contains(&"attempt 0.1 retry=true".to_owned()));
        assert!(events.contains(&"attempt 2.3 retry=false".to_owned()));
    }

    #[test]
    fn ctrl_c_ends_the_running_job_interrupted_and_starts_no_other() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b", "m/c"]);
        let mock = Mock::default().script("m/b", &[Script::CtrlC]);
        let stop = StopFlag::new();
        let (summary, events) = run(&jobs, &mock, &options(out.path(), 1, 3), &stop);
        assert!(summary.interrupted);
        let outcomes: Vec<_> = summary.records.iter().map(|r| r.outcome.clone()).collect();
        assert_eq!(outcomes, [Outcome::Passed, Outcome::Interrupted]);
        assert_eq!(
            summary.records[1].attempts.len(),
            1,
            "no retry after Ctrl-C"
        );
        assert_eq!(mock.state().calls.len(), 2, "m/c never started");
        assert_eq!(events.last().unwrap(), "finished interrupted=true");
    }

    #[test]
    fn results_are_on_disk_after_every_job() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b"]);
        let run_dir = out.path().join("r");
        let index_path = run_dir.join("run.json");
        let mock = Mock::default().script("m/b", &[Script::Fail { flaky: false }]);
        let mut writer =
            ResultsWriter::create(&options(out.path(), 1, 0), &jobs, vec!["goldgate".into()])
                .unwrap();
        let index = goldgate_core::records::load_index(&index_path).unwrap();
        assert!(index.jobs.iter().all(|j| j.outcome.is_none()));
        assert!(index.finished_at.is_none());
        let mut after_first = None;
        run_jobs(
            &jobs,
            &mock,
            &options(out.path(), 1, 0),
            &StopFlag::new(),
            &mut |e| {
                writer.event(&e);
                if let RunEvent::JobStarted { index: 1, .. } = e {
                    // What a crash right now would leave behind.
                    let first = jobs[0].dirs.job.join("results.json");
                    let index = goldgate_core::records::load_index(&index_path).unwrap();
                    after_first = Some((first.is_file(), index));
                }
            },
        )
        .unwrap();
        writer.finish().unwrap();
        let (first_written, index) = after_first.unwrap();
        assert!(
            first_written,
            "job 1's results.json exists before job 2 starts"
        );
        assert_eq!(index.jobs[0].outcome, Some(Outcome::Passed));
        assert_eq!(index.jobs[1].outcome, None);
        let index = goldgate_core::records::load_index(&index_path).unwrap();
        assert_eq!(
            index.jobs[1].outcome,
            Some(Outcome::Failed { exit_code: 1 })
        );
        assert!(index.finished_at.is_some());
        let record = goldgate_core::records::load_record(&jobs[1].dirs.job.join("results.json"));
        assert_eq!(record.unwrap().attempts.len(), 1);
    }

    #[test]
    fn refused_jobs_are_all_named_and_nothing_starts() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/big", "m/small", "m/huge"]);
        let mock = Mock {
            refuse: vec!["m/big".into(), "m/huge".into()],
            ..Mock::default()
        };
        let mut events = 0;
        let err = run_jobs(
            &jobs,
            &mock,
            &options(out.path(), 1, 0),
            &StopFlag::new(),
            &mut |_| events += 1,
        )
        .unwrap_err();
        assert_eq!(events, 0);
        assert!(mock.state().calls.is_empty());
        let text = err.to_string();
        assert!(
            text.contains("the mock executor cannot run 2 of the planned jobs"),
            "{text}"
        );
        assert!(
            text.contains("  m/big@default#1: needs 2 nodes\n  m/huge@default#1: needs 2 nodes"),
            "{text}"
        );
        assert!(matches!(err, RunError::Refused { count: 2, .. }));
    }

    #[test]
    fn progress_lines_in_a_log() {
        let out = tempfile::tempdir().unwrap();
        let jobs = jobs(out.path(), &["m/a", "m/b"]);
        let mock = Mock::default().script("m/b", &[Script::Fail { flaky: true }, Script::Pass]);
        let buffer = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut progress = Progress::lines(Box::new(SharedBuf(buffer.clone())));
        run_jobs(
            &jobs,
            &mock,
            &options(out.path(), 1, 1),
            &StopFlag::new(),
            &mut |e| progress.event(&e),
        )
        .unwrap();
        let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        insta::with_settings!({filters => vec![(r"in \d+\.\d s", "in [wall] s")]}, {
            insta::assert_snapshot!(text);
        });
    }

    struct SharedBuf(std::sync::Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for SharedBuf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
