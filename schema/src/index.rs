//! `run.json`: the index of one run ([`RunIndex`]): what it was asked to do and where each
//! job's `results.json` is.

use std::collections::BTreeMap;
use std::path::PathBuf;

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;

/// One job in the run index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct JobEntry {
    /// `<case>@<variant>#<repeat>`.
    pub job_id: String,
    /// Folder relative to the run folder.
    pub dir: PathBuf,
    /// Outcome, or null while it runs.
    pub outcome: Option<Outcome>,
    /// The batch scheduler's ids of the job's attempts (Slurm job ids), each written as soon
    /// as the scheduler accepted it: what `goldgate cancel` cancels of a run that died.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduler_job_ids: Vec<u64>,
    /// The names (never the values) of the variables of goldgate's environment whose values
    /// the job's output is masked for: the secret-named ones it inherits, and those a secret
    /// the case sets came from (`HF_TOKEN: "${CALLER_A}"`: `CALLER_A`). What whoever settles
    /// the output of a run that died (`goldgate cancel`, the next run) must find in its own
    /// environment to mask what goldgate never read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_names: Vec<String>,
    /// For each of [`JobEntry::secret_names`], a 16-bit check of the value the job had: the
    /// first two bytes of SHA-256 over the run's [`RunIndex::secret_salt`] and the value, never
    /// the value. Whoever settles the output of a run that died masks with its own
    /// environment's value of a name only when it passes the check (a rotated token, another
    /// CI job's, fails it 65535 times in 65536); 16 bits say too little to confirm a guess.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_checks: BTreeMap<String, u16>,
}

/// `OUT/<run-id>/run.json`: what the run was asked to do and where each job's files are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct RunIndex {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Run id (`YYYYMMDD-HHMMSS-<4 hex>`).
    pub run_id: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339, null while running.
    pub finished_at: Option<String>,
    /// Platform name.
    pub platform: String,
    /// goldgate's version.
    pub goldgate_version: String,
    /// The command line (secrets never appear in it: they come from the environment).
    pub command: Vec<String>,
    /// Jobs in plan order.
    pub jobs: Vec<JobEntry>,
    /// The host and process id of the goldgate that ran it: a run without `finished_at`
    /// whose process is gone died (its Slurm jobs may be left in the queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<Runner>,
    /// The run is one job of a `goldgate ab` sequence (see [`crate::RunRecord::ab`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<crate::record::AbMember>,
    /// The run whose failed or unfinished jobs this one ran again (`run --rerun-failed`): that
    /// run's other jobs complete this run's matrix when it is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
    /// The run was asked to keep its jobs' output unredacted too (`run --keep-raw-log`): the
    /// output of a run that died is settled the same way after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_raw_log: bool,
    /// The run's random key (32 hex digits) for its jobs' [`JobEntry::secret_checks`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_salt: Option<String>,
}

/// Where the goldgate process of a run ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
pub struct Runner {
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: u32,
}
