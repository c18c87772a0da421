//! Stage "run", Slurm executor: where an attempt's output goes — Slurm's own copy,
//! `slurm-output.attempt<N>.log` in the job folder, written as it came, secrets and all, outside
//! `logs/`, and the console log goldgate keeps in `logs/` — and Slurm's copy settled once the
//! job is over: removed, or moved beside the console log as `console.raw.log` with
//! `--keep-raw-log`. goldgate settles it as it sees the job end ([`settle_ended`]); a goldgate
//! killed mid-job never does, so whoever cleans up after the run (`goldgate cancel`, the next
//! run: [`Leftovers`]) settles what it left, from what `run.json` recorded (`keep_raw_log`,
//! each job's `secret_names`, never a value) and the secrets of its own environment
//! (`run::leftovers`): what the console log lacks of the output is masked into it — or, when a
//! secret the job had is not in that environment, left out and said so — and the job's
//! per-rank logs are masked as `run::leftovers` masks a local run's.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use goldgate_core::fsio::{check_no_links, open_regular};
use goldgate_core::redact::Redactor;
use goldgate_schema::RunIndex;

use crate::run::leftovers::{Environment, JobFolder, job_folders, settle_rank_logs};
use crate::run::rank_logs;
use crate::run::watch::raw_log_path;

/// Where Slurm writes attempt `attempt`'s output in the job folder `job_dir`.
pub(super) fn raw_path(job_dir: &Path, attempt: u32) -> PathBuf {
    job_dir.join(format!("slurm-output.attempt{attempt}.log"))
}

/// The console log goldgate keeps of attempt `attempt` in the job's `logs/`: `console.log`, or
/// `console.attempt2.log` for later attempts.
pub(super) fn log_name(attempt: u32) -> String {
    match attempt {
        1 => "console.log".to_owned(),
        n => format!("console.attempt{n}.log"),
    }
}

/// The attempt a file name of [`raw_path`] names.
fn attempt_of(name: &str) -> Option<u32> {
    name.strip_prefix("slurm-output.attempt")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// Slurm's copy of the output once goldgate has read all of it into `log`: removed, or moved
/// to `console.raw.log` beside the log with `keep_raw`.
pub(super) fn settle_ended(raw: &Path, log: &Path, keep_raw: bool) -> Result<(), String> {
    let result = match keep_raw {
        true => std::fs::rename(raw, raw_log_path(log)),
        false => std::fs::remove_file(raw),
    };
    match result {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(format!("cannot remove the raw log {}: {e}", raw.display()))
        }
        _ => Ok(()),
    }
}

/// What the jobs of a run that no goldgate follows any more left to settle: Slurm's raw
/// output files, and the folders of the jobs whose end goldgate never recorded (their
/// per-rank logs may hold what was never masked, `run::leftovers`).
#[derive(Debug, Default)]
pub(super) struct Leftovers {
    jobs: Vec<JobLeft>,
}

#[derive(Debug)]
struct JobLeft {
    folder: JobFolder,
    /// (attempt, raw output file), in attempt order.
    raw: Vec<(u32, PathBuf)>,
}

impl Leftovers {
    /// What the jobs of `index` (its folder `run_dir`) left; a job folder that `run.json` puts
    /// outside the run folder, or reaches through a link, is never looked into.
    pub(super) fn find(run_dir: &Path, index: &RunIndex) -> Leftovers {
        let jobs = job_folders(run_dir, index).filter_map(|folder| {
            let mut raw: Vec<(u32, PathBuf)> = std::fs::read_dir(&folder.dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| Some((attempt_of(e.file_name().to_str()?)?, e.path())))
                .collect();
            raw.sort();
            (!raw.is_empty() || folder.unfinished).then_some(JobLeft { folder, raw })
        });
        Leftovers {
            jobs: jobs.collect(),
        }
    }

    /// Whether any raw output file was left.
    pub(super) fn has_raw(&self) -> bool {
        self.jobs.iter().any(|j| !j.raw.is_empty())
    }

    /// Settles everything found, with the secrets of this process's environment; with
    /// `keep_raw` (the run's `--keep-raw-log`) the raw output is kept as `console.raw.log`.
    /// Returns a line for each thing it could not do, or did only in part.
    pub(super) fn settle(&self, run_dir: &Path, keep_raw: bool) -> Vec<String> {
        let here = Environment::here();
        let mut warnings = Vec::new();
        for job in &self.jobs {
            let masking = here.masking(&job.folder);
            let missing: Vec<&str> = masking.missing.iter().map(String::as_str).collect();
            let settle = Settle {
                run_dir,
                redactor: &masking.redactor,
                missing: &missing,
                keep_raw,
            };
            let id = &job.folder.id;
            for (attempt, raw) in &job.raw {
                let log = job.folder.dir.join("logs").join(log_name(*attempt));
                match settle.attempt(raw, &log) {
                    Ok(None) => {}
                    Ok(Some(note)) => warnings.push(format!("job {id}: {note}")),
                    Err(e) => warnings.push(format!(
                        "job {id}: cannot settle Slurm's raw output {}: {e}",
                        raw.display()
                    )),
                }
            }
            warnings.extend(settle_rank_logs(run_dir, &job.folder, &masking, keep_raw));
        }
        warnings
    }
}

/// How one job's leftovers are settled.
struct Settle<'a> {
    run_dir: &'a Path,
    redactor: &'a Redactor,
    /// The names of the job's secrets this environment does not hold.
    missing: &'a [&'a str],
    keep_raw: bool,
}

impl Settle<'_> {
    /// Masks into `log` the output of `raw` it lacks (the lines after those it holds), then
    /// removes `raw` or keeps it as the raw log. `Some(note)` when some output was left out.
    fn attempt(&self, raw: &Path, log: &Path) -> io::Result<Option<String>> {
        check_no_links(self.run_dir, raw)?;
        check_no_links(self.run_dir, log)?;
        let covered = whole_lines(log)?;
        let (mut input, len) = open_regular(raw)?;
        let from = offset_after(&mut input, covered)?;
        let mut note = None;
        if from < len {
            let file = OpenOptions::new().create(true).append(true).open(log)?;
            let mut out = BufWriter::with_capacity(64 * 1024, file);
            input.seek(SeekFrom::Start(from))?;
            let rest = (&mut input).take(len - from);
            if self.missing.is_empty() {
                rank_logs::copy_masked(rest, &mut out, self.redactor)?;
            } else {
                let text = self.left_out(len - from);
                writeln!(out, "[goldgate: {text}]")?;
                note = Some(text);
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        match self.keep_raw {
            true => std::fs::rename(raw, raw_log_path(log))?,
            false => std::fs::remove_file(raw)?,
        }
        Ok(note)
    }

    /// Why `bytes` of a job's output are not in its log.
    fn left_out(&self, bytes: u64) -> String {
        format!(
            "{bytes} bytes of the job's output, written after goldgate stopped reading it, are \
             not kept: this environment lacks {}, which masks them (give `goldgate cancel` or \
             the next run the run's secrets to keep such output, masked)",
            self.missing.join(", ")
        )
    }
}

/// The number of whole lines (`\n`-ended) of `log`, which is cut after the last of them: a
/// goldgate killed while it wrote may have left half a line. 0 when there is no log.
fn whole_lines(log: &Path) -> io::Result<u64> {
    let file = match OpenOptions::new().read(true).write(true).open(log) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", log.display()),
        ));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, &file);
    let (mut lines, mut read, mut whole) = (0u64, 0u64, 0u64);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        for at in memchr::memchr_iter(b'\n', buf) {
            lines += 1;
            whole = read + at as u64 + 1;
        }
        let n = buf.len();
        read += n as u64;
        reader.consume(n);
    }
    if whole < read {
        file.set_len(whole)?;
    }
    Ok(lines)
}

/// The offset just after the first `lines` lines of `input` (its end when it has fewer).
fn offset_after(input: &mut File, lines: u64) -> io::Result<u64> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let (mut left, mut offset) = (lines, 0u64);
    while left > 0 {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let mut used = buf.len();
        for at in memchr::memchr_iter(b'\n', buf) {
            left -= 1;
            if left == 0 {
                used = at + 1;
                break;
            }
        }
        offset += used as u64;
        reader.consume(used);
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle_one(raw: &[u8], log: Option<&[u8]>, missing: &[&str], keep_raw: bool) -> String {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("job");
        std::fs::create_dir_all(job.join("logs")).unwrap();
        let raw_file = raw_path(&job, 1);
        std::fs::write(&raw_file, raw).unwrap();
        let log_file = job.join("logs").join(log_name(1));
        if let Some(text) = log {
            std::fs::write(&log_file, text).unwrap();
        }
        let redactor = Redactor::from_env([("HF_TOKEN", "hf-left-secret-1")]);
        let settle = Settle {
            run_dir: dir.path(),
            redactor: &redactor,
            missing,
            keep_raw,
        };
        let note = settle.attempt(&raw_file, &log_file).unwrap();
        assert_eq!(note.is_some(), !missing.is_empty());
        assert!(!raw_file.exists());
        let kept = raw_log_path(&log_file);
        assert_eq!(kept.exists(), keep_raw);
        if keep_raw {
            assert_eq!(std::fs::read(kept).unwrap(), raw);
        }
        String::from_utf8(std::fs::read(&log_file).unwrap()).unwrap()
    }

    #[test]
    fn the_output_a_dead_goldgate_never_read_is_masked_into_its_log() {
        let raw = b"one hf-left-secret-1\ntwo\nthree hf-left-secret-1\nfour, cut hf-left-sec";
        for keep_raw in [false, true] {
            // The log holds the first line masked and half of the second.
            let log = settle_one(raw, Some(&b"one <redacted>\ntw"[..]), &[], keep_raw);
            assert_eq!(
                log,
                "one <redacted>\ntwo\nthree <redacted>\nfour, cut <redacted>"
            );
        }
        let log = settle_one(raw, None, &[], false);
        assert!(log.starts_with("one <redacted>\ntwo\n"), "{log}");
    }

    #[test]
    fn a_log_that_holds_all_the_output_is_left_as_it_is() {
        let log = settle_one(
            b"a hf-left-secret-1\nb\n",
            Some(&b"a <redacted>\nb\n"[..]),
            &[],
            false,
        );
        assert_eq!(log, "a <redacted>\nb\n");
    }

    #[test]
    fn output_whose_secret_this_environment_lacks_is_left_out_and_said() {
        let log = settle_one(
            b"a\nb hf-left-secret-1\n",
            Some(&b"a\n"[..]),
            &["WANDB_API_KEY"],
            true,
        );
        assert!(!log.contains("hf-left-secret-1"), "{log}");
        assert!(
            log.starts_with("a\n[goldgate: 19 bytes of the job's output")
                && log.contains("lacks WANDB_API_KEY"),
            "{log}"
        );
    }

    #[test]
    fn only_slurms_output_files_name_an_attempt() {
        assert_eq!(attempt_of("slurm-output.attempt3.log"), Some(3));
        for other in [
            "slurm-output.attempt.log",
            "slurm-output.attemptx.log",
            "slurm-job.attempt1.sh",
            "console.log",
        ] {
            assert_eq!(attempt_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_job_folder_outside_the_run_is_never_looked_into() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(raw_path(&outside, 1), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, run.join("linked")).unwrap();
        let index: RunIndex = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "run_id": "r", "started_at": "x", "finished_at": null,
            "platform": "p", "goldgate_version": "0", "command": [],
            "jobs": [
                {"job_id": "a", "dir": "../outside", "outcome": null},
                {"job_id": "b", "dir": "linked", "outcome": null}
            ]
        }))
        .unwrap();
        let found = Leftovers::find(&run, &index);
        assert!(found.jobs.is_empty() && !found.has_raw(), "{found:?}");
        assert_eq!(std::fs::read(raw_path(&outside, 1)).unwrap(), b"secret");
    }
}
