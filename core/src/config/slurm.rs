//! Stage "plan": a platform's executor (`executor: local | slurm`) and its `slurm:` block —
//! partition, account, QoS, GPUs per node as `gres`, a default time limit, extra `sbatch`
//! arguments, a pyxis/enroot container, and the job root every node sees — read from
//! `goldgate.yaml` and checked, each problem naming its line and column.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::error::ConfigError;

/// What runs a platform's jobs when `--executor` does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorChoice {
    /// Process groups on this machine, one node.
    #[default]
    Local,
    /// One batch job per job on a Slurm cluster, one launcher per node.
    Slurm,
}

impl ExecutorChoice {
    /// `local` or `slurm`, as written in goldgate.yaml and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorChoice::Local => "local",
            ExecutorChoice::Slurm => "slurm",
        }
    }
}

/// A platform's Slurm settings (all optional: a cluster's defaults apply to what is left out).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SlurmConfig {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--qos`.
    pub qos: Option<String>,
    /// `--gres`, `gpu:N` or `gpu:TYPE:N` (GPUs per node).
    pub gres: Option<String>,
    /// `--time` when neither `--timeout`, the case, the platform nor the recipe gives a limit.
    #[serde(serialize_with = "crate::duration::seconds::serialize")]
    pub time_limit: Option<Duration>,
    /// More `sbatch` options, each one word (`--exclusive`, `--constraint=h100`).
    pub sbatch_args: Vec<String>,
    /// pyxis/enroot `--container-image` of every node's launcher.
    pub container_image: Option<String>,
    /// pyxis `--container-mounts`, `SRC:DST[:FLAGS]` each.
    pub container_mounts: Vec<String>,
    /// A folder every node sees: jobs' folders (logs, samples, results) go below it unless
    /// `--out` says otherwise.
    pub job_root: Option<PathBuf>,
    /// How often goldgate asks Slurm about its jobs (one `squeue` call for all of them).
    #[serde(serialize_with = "seconds")]
    pub poll_interval: Duration,
    /// How long a job may wait in the queue before goldgate cancels it (`--pending-limit`
    /// wins); `None`: [`DEFAULT_PENDING_LIMIT`].
    #[serde(serialize_with = "crate::duration::seconds::serialize")]
    pub pending_limit: Option<Duration>,
    /// How long Slurm's controller may fail to answer (`squeue`, `scontrol`, `scancel`)
    /// before goldgate gives a job up as an infrastructure failure.
    #[serde(serialize_with = "seconds")]
    pub outage_limit: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// `poll_interval` when the block gives none: 6 scheduler calls a minute.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The pending limit when neither `--pending-limit` nor `slurm.pending_limit` gives one: a
/// CI gate waits an hour for nodes, not forever.
pub const DEFAULT_PENDING_LIMIT: Duration = Duration::from_secs(3600);

/// `outage_limit` when the block gives none: a controller restart or failover takes
/// seconds to a few minutes.
pub const DEFAULT_OUTAGE_LIMIT: Duration = Duration::from_secs(600);

impl Default for SlurmConfig {
    fn default() -> SlurmConfig {
        SlurmConfig {
            partition: None,
            account: None,
            qos: None,
            gres: None,
            time_limit: None,
            sbatch_args: Vec::new(),
            container_image: None,
            container_mounts: Vec::new(),
            job_root: None,
            poll_interval: DEFAULT_POLL_INTERVAL,
            pending_limit: None,
            outage_limit: DEFAULT_OUTAGE_LIMIT,
        }
    }
}

/// Options goldgate writes itself: an `sbatch_args` entry may not set them.
const OWN_OPTIONS: [&str; 9] = [
    "--no-requeue",
    "--requeue",
    "--nodes",
    "--ntasks-per-node",
    "--output",
    "--error",
    "--job-name",
    "--parsable",
    "--chdir",
];

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSlurm {
    #[serde(default)]
    partition: Option<Spanned<String>>,
    #[serde(default)]
    account: Option<Spanned<String>>,
    #[serde(default)]
    qos: Option<Spanned<String>>,
    #[serde(default)]
    gres: Option<Spanned<String>>,
    #[serde(default)]
    time_limit: Option<Spanned<String>>,
    #[serde(default)]
    sbatch_args: Vec<Spanned<String>>,
    #[serde(default)]
    container_image: Option<Spanned<String>>,
    #[serde(default)]
    container_mounts: Vec<Spanned<String>>,
    #[serde(default)]
    job_root: Option<Spanned<String>>,
    #[serde(default)]
    poll_interval: Option<Spanned<String>>,
    #[serde(default)]
    pending_limit: Option<Spanned<String>>,
    #[serde(default)]
    outage_limit: Option<Spanned<String>>,
}

/// Checks a `slurm:` block and builds it; `path` is the file, for error places.
pub(crate) fn slurm_from_raw(raw: RawSlurm, path: &Path) -> Result<SlurmConfig, ConfigError> {
    let bad = |at: &Spanned<String>, msg: String| ConfigError::invalid(path, at, msg);
    let word = |key: &str, v: Option<Spanned<String>>| -> Result<Option<String>, ConfigError> {
        match v {
            Some(s) if s.value.is_empty() || s.value.chars().any(char::is_whitespace) => Err(bad(
                &s,
                format!("slurm.{key}: `{}` must be one word", s.value),
            )),
            other => Ok(other.map(|s| s.value)),
        }
    };
    if let Some(g) = &raw.gres {
        check_gres(&g.value).map_err(|m| bad(g, m))?;
    }
    let time_limit = match &raw.time_limit {
        None => None,
        Some(t) => Some(
            crate::duration::parse_duration(&t.value)
                .map_err(|m| bad(t, format!("slurm.time_limit: {m}")))?,
        ),
    };
    let poll_interval = poll_interval(raw.poll_interval.as_ref(), path)?;
    let pending_limit = match &raw.pending_limit {
        None => None,
        Some(t) => Some(positive("pending_limit", t, path)?),
    };
    let outage_limit = match &raw.outage_limit {
        None => DEFAULT_OUTAGE_LIMIT,
        Some(t) => positive("outage_limit", t, path)?,
    };
    for arg in &raw.sbatch_args {
        check_sbatch_arg(&arg.value).map_err(|m| bad(arg, m))?;
    }
    for mount in &raw.container_mounts {
        check_mount(&mount.value).map_err(|m| bad(mount, m))?;
    }
    let job_root = match raw.job_root {
        Some(root) if !Path::new(&root.value).is_absolute() => {
            let msg = format!(
                "slurm.job_root: `{}` must be an absolute path on a filesystem every node sees",
                root.value
            );
            return Err(bad(&root, msg));
        }
        other => other.map(|r| PathBuf::from(r.value)),
    };
    Ok(SlurmConfig {
        partition: word("partition", raw.partition)?,
        account: word("account", raw.account)?,
        qos: word("qos", raw.qos)?,
        gres: raw.gres.map(|g| g.value),
        time_limit,
        sbatch_args: raw.sbatch_args.into_iter().map(|a| a.value).collect(),
        container_image: word("container_image", raw.container_image)?,
        container_mounts: raw.container_mounts.into_iter().map(|m| m.value).collect(),
        job_root,
        poll_interval,
        pending_limit,
        outage_limit,
    })
}

/// `slurm.<key>`: a duration above zero.
fn positive(key: &str, text: &Spanned<String>, path: &Path) -> Result<Duration, ConfigError> {
    crate::duration::parse_duration(&text.value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            let msg = format!(
                "slurm.{key}: `{}` is not a duration above zero (`90s`, `30m`)",
                text.value
            );
            ConfigError::invalid(path, text, msg)
        })
}

/// `slurm.poll_interval`: a duration of at least 100 ms, [`DEFAULT_POLL_INTERVAL`] when absent.
fn poll_interval(text: Option<&Spanned<String>>, path: &Path) -> Result<Duration, ConfigError> {
    let Some(t) = text else {
        return Ok(DEFAULT_POLL_INTERVAL);
    };
    crate::duration::parse_duration(&t.value)
        .ok()
        .filter(|d| *d >= Duration::from_millis(100))
        .ok_or_else(|| {
            let msg = format!(
                "slurm.poll_interval: `{}` is not a duration of at least 100ms",
                t.value
            );
            ConfigError::invalid(path, t, msg)
        })
}

/// `gpu:N` or `gpu:TYPE:N`, N ≥ 1.
fn check_gres(gres: &str) -> Result<(), String> {
    let parts: Vec<&str> = gres.split(':').collect();
    let count = match parts.as_slice() {
        ["gpu", n] | ["gpu", _, n] => n.parse::<u32>().ok().filter(|n| *n > 0),
        _ => None,
    };
    match count {
        Some(_) => Ok(()),
        None => Err(format!(
            "slurm.gres: `{gres}` is not `gpu:N` or `gpu:TYPE:N` (N GPUs per node, at least 1)"
        )),
    }
}

/// One `sbatch` option word that goldgate does not write itself.
fn check_sbatch_arg(arg: &str) -> Result<(), String> {
    if !arg.starts_with('-') || arg.chars().any(char::is_whitespace) {
        return Err(format!(
            "slurm.sbatch_args: `{arg}` is not one option word (write `--constraint=h100`, one per entry)"
        ));
    }
    let name = arg.split('=').next().unwrap_or(arg);
    if OWN_OPTIONS.contains(&name) {
        return Err(format!(
            "slurm.sbatch_args: goldgate sets `{name}` itself (nodes from the plan, the log in the job folder)"
        ));
    }
    Ok(())
}

/// `SRC:DST` or `SRC:DST:FLAGS`, SRC and DST absolute, no comma (pyxis joins mounts by commas).
fn check_mount(mount: &str) -> Result<(), String> {
    let parts: Vec<&str> = mount.split(':').collect();
    let ok = matches!(parts.len(), 2 | 3)
        && parts[..2].iter().all(|p| p.starts_with('/'))
        && !mount.contains(',')
        && !mount.chars().any(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "slurm.container_mounts: `{mount}` is not `/SRC:/DST` or `/SRC:/DST:FLAGS`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gres_words() {
        assert!(check_gres("gpu:8").is_ok());
        assert!(check_gres("gpu:h100:8").is_ok());
        for bad in ["gpu", "gpu:0", "gpu:x", "tpu:1", "gpu:a:b:1"] {
            assert!(check_gres(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sbatch_args_are_single_options_goldgate_does_not_own() {
        assert!(check_sbatch_arg("--exclusive").is_ok());
        assert!(check_sbatch_arg("--constraint=h100").is_ok());
        assert!(check_sbatch_arg("exclusive").is_err());
        assert!(check_sbatch_arg("--nodes=4").is_err());
        assert!(check_sbatch_arg("--mem 10G").is_err());
    }

    #[test]
    fn mounts_are_absolute_pairs() {
        assert!(check_mount("/lustre/data:/data").is_ok());
        assert!(check_mount("/a:/b:ro").is_ok());
        assert!(check_mount("data:/data").is_err());
        assert!(check_mount("/a:/b,/c:/d").is_err());
    }
}
