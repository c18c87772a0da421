//! `goldgate ab-study` (hidden): the A/B resampling study of `compare::ab::study` on recorded
//! jobs — unchanged jobs per session (`--session NAME=DIR`), optionally a real interleaved A/B
//! session (`--real-a`, `--real-b`) — printed as markdown (docs/book/src/results/ab-study.md is its
//! output; docs/archive/ab-study/ab-study.sh reruns it on the H200 records).

use std::path::PathBuf;

use super::error::{AppError, CmdError};
use super::output::out;
use goldgate_core::config::Sequential;
use goldgate_judge::compare::ab::across_jobs::{self, Pair};
use goldgate_judge::compare::ab::covariate::study as cov_study;
use goldgate_judge::compare::ab::covariate::study::{Plant, StudyJob};
use goldgate_judge::compare::ab::covariate::{self, Covariate};
use goldgate_judge::compare::ab::study::{self, Normal, Session, SessionModel, StudyOptions};
use goldgate_judge::compare::stats::summary::SplitMix64;
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

/// Arguments of `goldgate ab-study`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Unchanged jobs of one session, as `NAME=DIR` (a folder of runs). Repeatable; two or more
    /// sessions let the golden rules be judged against another session's golden.
    #[arg(long = "session", value_name = "NAME=DIR", value_parser = parse_session)]
    pub sessions: Vec<(String, PathBuf)>,
    /// Real A jobs of one interleaved A/B session (judged pair by pair in start order).
    #[arg(long)]
    pub real_a: Option<PathBuf>,
    /// Real B jobs of that session.
    #[arg(long)]
    pub real_b: Option<PathBuf>,
    /// The per-save metric studied.
    #[arg(long, default_value = "checkpoint-blocking-time")]
    pub metric: String,
    /// Saves at the start of each job left out (the one-time set-up save).
    #[arg(long, default_value_t = 1)]
    pub skip_saves: usize,
    /// Synthetic sequences per design and size.
    #[arg(long, default_value_t = 2000)]
    pub draws: usize,
    #[arg(long, default_value_t = 20261201)]
    pub seed: u64,
    /// Seconds one more save costs a job (its save and the iterations between two saves).
    #[arg(long, default_value_t = 0.85)]
    pub per_save_seconds: f64,
    /// Also write the markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// The save/iteration covariate's study instead (`compare::ab::covariate::study`): each
    /// `--session` one group of jobs (one session's one arm), `--real-a`/`--real-b` judged
    /// plain and adjusted.
    #[arg(long)]
    pub covariate: bool,
}

fn parse_session(text: &str) -> Result<(String, PathBuf), String> {
    let (name, dir) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=DIR"))?;
    Ok((name.to_owned(), PathBuf::from(dir)))
}

/// A job's counted saves and its wall time.
fn saves(r: &RunRecord, metric: &str, skip: usize) -> Option<(Vec<f64>, f64, String)> {
    let v: Vec<f64> = r
        .metrics
        .get(metric)?
        .0
        .values()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    (v.len() > skip && r.outcome.passed())
        .then(|| (v[skip..].to_vec(), r.wall_seconds, r.started_at.clone()))
}

fn load(
    dir: &std::path::Path,
    metric: &str,
    skip: usize,
) -> Result<Vec<(Vec<f64>, f64, String)>, AppError> {
    let mut jobs: Vec<_> = goldgate_core::records::load_results(dir)?
        .iter()
        .filter_map(|(_, r)| saves(r, metric, skip))
        .collect();
    jobs.sort_by(|a, b| a.2.cmp(&b.2));
    Ok(jobs)
}

/// Runs the study.
pub fn run(args: Args) -> Result<Exit, AppError> {
    if args.covariate {
        return covariate_study(&args);
    }
    let mut rng = Normal(SplitMix64::new(args.seed));
    let models = fit_models(&args, &mut rng)?;
    let opts = StudyOptions {
        draws: args.draws.max(1),
        sizes: vec![0.05, 0.10, 0.15, 0.20, 0.30],
        seed: args.seed,
        per_save_seconds: args.per_save_seconds,
        warmup_jobs: 1,
    };
    let mut designs = Vec::new();
    for (saves, min_effect, spread, max_pairs) in grid() {
        let seq = Sequential {
            alpha: 0.01,
            min_effect,
            max_pairs,
            min_pairs: 1,
            spread,
            spread_df: 8,
        };
        designs.push(study::design(&models, saves, &seq, &opts));
    }
    let rules = study::todays_rules(&models, 0.55, &opts);
    let real = real_session(&args)?;
    let text =
        goldgate_judge::report::ab_study::render(&models, &designs, &rules, real.as_ref(), &opts);
    publish(&args, &text)
}

/// Prints the study and writes `--markdown`.
fn publish(args: &Args, text: &str) -> Result<Exit, AppError> {
    out!("{text}");
    if let Some(path) = &args.markdown {
        goldgate_core::fsio::write_atomic(path, text.as_bytes()).map_err(|source| {
            CmdError::Write {
                path: path.clone(),
                source,
            }
        })?;
    }
    Ok(Exit::Pass)
}

/// Each passed job of `dir` as `ab` reduces it (save and iteration summaries under the
/// shipped rules), in start order.
fn study_jobs(dir: &std::path::Path, group: &str) -> Result<Vec<StudyJob>, AppError> {
    let shipped = goldgate_core::config::Config::builtin()?;
    let rules = goldgate_core::rules::RuleSet::from_config(&shipped.rules);
    let summary = |r: &RunRecord, metric: &str| {
        rules
            .find(metric)
            .and_then(|rule| across_jobs::job_summary(rule, r, metric))
    };
    let mut jobs: Vec<(String, StudyJob)> = goldgate_core::records::load_results(dir)?
        .iter()
        .filter(|(_, r)| r.outcome.passed())
        .filter_map(|(_, r)| {
            Some((
                r.started_at.clone(),
                StudyJob {
                    group: group.to_owned(),
                    save: summary(r, covariate::ADJUSTED)?,
                    iteration: summary(r, covariate::BY)?,
                    wall: r.wall_seconds,
                },
            ))
        })
        .collect();
    jobs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(jobs.into_iter().map(|(_, j)| j).collect())
}

/// The plain test and the covariate's designs on every plant: save changes, then iteration
/// changes with the saves unchanged; floors at the shipped guard, then the guard's level at
/// one floor (the look's own level is the guard first tried).
fn covariate_designs(
    fit: &cov_study::Fit,
    seq: &Sequential,
    draws: usize,
    seed: u64,
) -> Vec<cov_study::Design> {
    let mut plants: Vec<Plant> = [0.0, 0.05, 0.10, 0.15, 0.20, 0.30]
        .map(|save| Plant {
            save,
            iteration: 0.0,
        })
        .to_vec();
    plants.extend(
        [-0.10, -0.05, -0.03, 0.03, 0.05, 0.10].map(|iteration| Plant {
            save: 0.0,
            iteration,
        }),
    );
    let mut designs = vec![cov_study::design(fit, &plants, seq, None, draws, seed)];
    let slope = (fit.slope * 100.0).round() / 100.0;
    let guard = covariate::GUARD_LEVEL;
    let mut grid: Vec<(f64, f64)> = [0.07, 0.06, 0.055, 0.05].map(|s| (s, guard)).to_vec();
    grid.extend([(0.055, 0.8), (0.055, seq.level())]);
    for (spread, level) in grid {
        let c = Covariate { slope, spread };
        designs.push(cov_study::design(
            fit,
            &plants,
            seq,
            Some((c, level)),
            draws,
            seed,
        ));
    }
    designs
}

/// The real session's A and B jobs, pair `k` the `k`-th of each, judged plain and adjusted.
fn real_covariate(
    a: &[StudyJob],
    b: &[StudyJob],
    seq: &Sequential,
    c: Covariate,
) -> Vec<cov_study::RealLook> {
    let pairs = |f: fn(&StudyJob) -> f64| -> Vec<Pair> {
        (a.iter().zip(b).enumerate())
            .map(|(k, (x, y))| Pair {
                block: (k / 2 + 1) as u32,
                a: f(x),
                b: f(y),
            })
            .collect()
    };
    cov_study::real_pairs(&pairs(|j| j.save), &pairs(|j| j.iteration), seq, c)
}

/// `--covariate`: the fit, the plain and covariate designs on every plant, the real session.
fn covariate_study(args: &Args) -> Result<Exit, AppError> {
    let mut jobs = Vec::new();
    for (name, dir) in &args.sessions {
        jobs.extend(study_jobs(dir, name)?);
    }
    let fit = cov_study::fit(&jobs).ok_or(CmdError::BadValue {
        message: "ab-study --covariate needs two or more --session groups of two or more passed jobs with saves and iteration times",
    })?;
    let shipped = goldgate_core::config::Config::builtin()?;
    let seq = shipped.ab.on("h200");
    let draws = args.draws.max(1);
    let designs = covariate_designs(&fit, &seq, draws, args.seed);
    let real = match (&args.real_a, &args.real_b) {
        (Some(a), Some(b)) => {
            let c = Covariate::on(&shipped.ab, "h200").unwrap_or(Covariate {
                slope: fit.slope,
                spread: seq.spread,
            });
            real_covariate(&study_jobs(a, "a")?, &study_jobs(b, "b")?, &seq, c)
        }
        _ => Vec::new(),
    };
    let text = goldgate_judge::report::ab_covariate::render(&fit, &seq, &designs, draws, &real);
    publish(args, &text)
}

/// Every `--session`'s model; an error when none has two passed jobs.
fn fit_models(args: &Args, rng: &mut Normal) -> Result<Vec<SessionModel>, AppError> {
    let mut models = Vec::new();
    for (name, dir) in &args.sessions {
        let jobs = load(dir, &args.metric, args.skip_saves)?;
        let session = Session {
            name: name.clone(),
            walls: jobs.iter().map(|j| j.1).collect(),
            jobs: jobs.into_iter().map(|j| j.0).collect(),
        };
        models.extend(SessionModel::fit(&session, rng));
    }
    if models.is_empty() {
        return Err(CmdError::BadValue {
            message: "ab-study needs a --session with two or more passed jobs",
        }
        .into());
    }
    Ok(models)
}

/// `--real-a`/`--real-b`: their per-job medians and the estimate after each pair, with the
/// shipped goldgate.yaml's `ab:` settings on the H200 (as `goldgate ab` uses them).
fn real_session(
    args: &Args,
) -> Result<Option<goldgate_judge::report::ab_study::RealPairs>, AppError> {
    let (Some(a), Some(b)) = (&args.real_a, &args.real_b) else {
        return Ok(None);
    };
    let medians = |dir: &std::path::Path| -> Result<Vec<f64>, AppError> {
        Ok(load(dir, &args.metric, args.skip_saves)?
            .into_iter()
            .filter_map(|(v, _, _)| goldgate_judge::compare::stats::summary::median(&v))
            .collect())
    };
    let (a, b) = (medians(a)?, medians(b)?);
    let shipped = goldgate_core::config::Config::builtin()?;
    let seq = shipped.ab.on("h200");
    let looks = study::real_pairs(&a, &b, &seq);
    Ok(Some((a, b, looks)))
}

/// The designs studied: saves per job × minimum effect × spread floor × most pairs.
fn grid() -> Vec<(usize, f64, f64, u32)> {
    let mut out = Vec::new();
    for saves in [10, 30, 50] {
        for min_effect in [0.03, 0.05] {
            for spread in [0.03, 0.05, 0.07, 0.09] {
                for max_pairs in [6, 12] {
                    out.push((saves, min_effect, spread, max_pairs));
                }
            }
        }
    }
    out
}
