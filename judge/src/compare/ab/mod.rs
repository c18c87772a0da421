//! Stage "compare": the A/B test (`goldgate ab`) — baseline and candidate on one machine, judged
//! pair by pair: `across_jobs` (each job runs one arm, ABBA/BAAB blocks), `within_job` (every
//! job runs both arms, switched save by save), `metric` (how one metric came out, whichever test
//! judged it), `covariate` (across jobs, the save adjusted by the job's iteration time: `ab
//! --covariate`, and its study), `outcome` (what a run decided, `ab.json`, its exit code),
//! `precision` (`--precision`: run until the intervals are that narrow) and `study` (the
//! resampling study of the test on recorded jobs, `goldgate ab-study`).

pub mod across_jobs;
pub mod covariate;
pub mod metric;
pub mod outcome;
pub mod precision;
pub mod study;
pub mod within_job;
