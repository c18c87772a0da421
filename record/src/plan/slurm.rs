//! Stage "plan": the Slurm batch script of a job — `#SBATCH` lines from the platform's `slurm:`
//! block and the plan (nodes, one task per node, time limit, the console log in the job's
//! folder), the first node's name as `MASTER_ADDR`, a port of the job's own, the per-node
//! sampler step, and one task per node running what `repro` prints with Megatron's multi-node
//! launcher arguments (`--nnodes $SLURM_NNODES --node_rank $SLURM_NODEID`). A pure function:
//! `plan --executor slurm`, `repro --executor slurm` and the Slurm executor print or submit
//! the same text.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::job::{Job, Site};
use super::repro::{PORT_REF, mkdirs, provenance, render_node_body};
use super::shell::shell_quote;
use goldgate_core::config::SlurmConfig;

/// Launcher words of a batch job's node: Slurm's node count and node id, the first node.
pub(super) const SLURM_NNODES_REF: &str = "${SLURM_NNODES}";
pub(super) const SLURM_NODEID_REF: &str = "${SLURM_NODEID}";

/// What a batch script needs besides the job.
#[derive(Clone, Copy, Debug)]
pub struct BatchSpec<'a> {
    pub slurm: &'a SlurmConfig,
    /// `--time` of the whole batch job (every run), `None` = the partition's default.
    pub time_limit: Option<Duration>,
    /// `--output`: the console log (the batch script's and every node's output).
    pub log: &'a Path,
    /// The bare entry resolved to a path (as `repro` does for a direct launch).
    pub entry_program: Option<&'a str>,
    /// The per-node sampler step: goldgate's executable and the folder it writes each node's
    /// samples to; `None` leaves the step out.
    pub sampler: Option<SamplerStep<'a>>,
    /// Options of this attempt alone, after the platform's (they win): the run id as
    /// `--comment`, the nodes an earlier attempt's node failure left behind as `--exclude`.
    pub attempt_options: &'a [String],
}

/// `srun --overlap --ntasks-per-node=1 <goldgate> sample --dir DIR --stop-file STOP ...`.
#[derive(Clone, Copy, Debug)]
pub struct SamplerStep<'a> {
    pub goldgate: &'a str,
    pub dir: &'a Path,
    pub interval: Duration,
}

/// The name of the stop file the batch script creates once training ended.
pub const SAMPLER_STOP_FILE: &str = "stop";

/// The batch script of `job`.
pub fn render_batch(job: &Job, spec: &BatchSpec<'_>) -> String {
    let mut s = String::from("#!/usr/bin/env bash\n");
    for option in sbatch_options(job, spec) {
        let _ = writeln!(s, "#SBATCH {option}");
    }
    let _ = writeln!(s, "# The goldgate job {} as one Slurm batch job.", job.id);
    s.push_str(&provenance(job));
    s.push_str("set -euo pipefail\n\n");
    s.push_str("# Rendezvous: the first node of the allocation, a port of this job's own.\n");
    s.push_str(
        "MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)\"\n\
         export MASTER_ADDR\n\
         export MASTER_PORT=\"${MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}\"\n",
    );
    s.push_str(&mkdirs(job));
    let node_script = job.dirs.job.join("slurm-node.sh");
    let node_script = shell_quote(&node_script.display().to_string());
    let _ = writeln!(
        s,
        "\n# What every node runs (one task per node).\ncat > {node_script} <<'GOLDGATE_NODE'"
    );
    let site = Site {
        nodes: SLURM_NNODES_REF.to_owned(),
        node_rank: SLURM_NODEID_REF.to_owned(),
        master_addr: super::job::MASTER_ADDR_REF.to_owned(),
        master_port: PORT_REF.to_owned(),
        log_dir: job.dirs.logs.display().to_string(),
    };
    if let Some(sampler) = &spec.sampler {
        s.push_str(&sampler_handshake(sampler));
    }
    s.push_str(&render_node_body(job, spec.entry_program, &site));
    s.push_str("GOLDGATE_NODE\n");
    if let Some(sampler) = &spec.sampler {
        s.push_str(&sampler_start(sampler));
    }
    let _ = writeln!(
        s,
        "\nsrun {} bash {node_script} && code=0 || code=$?",
        step_options(spec.slurm).join(" ")
    );
    if spec.sampler.is_some() {
        s.push_str(&sampler_stop(spec.sampler.as_ref()));
    }
    let _ = writeln!(s, "echo \"{EXIT_MARKER}$code\"\nexit \"$code\"");
    s
}

/// The batch script's last line in the console log, before the nodes' exit code: goldgate
/// reads the code from it (and the end of the running time) without asking Slurm.
pub const EXIT_MARKER: &str = "goldgate: the nodes exited with ";

/// The `#SBATCH` options: goldgate's own first, then the platform's.
fn sbatch_options(job: &Job, spec: &BatchSpec<'_>) -> Vec<String> {
    let slurm = spec.slurm;
    let mut options = vec![
        format!("--job-name={}", job_name(&job.id)),
        format!("--nodes={}", job.nodes),
        "--ntasks-per-node=1".to_owned(),
        // goldgate retries a job the cluster failed itself (`--retries`), recording each try.
        "--no-requeue".to_owned(),
        format!(
            "--output={}",
            shell_safe_path(&spec.log.display().to_string())
        ),
    ];
    let named = [
        ("--partition", &slurm.partition),
        ("--account", &slurm.account),
        ("--qos", &slurm.qos),
        ("--gres", &slurm.gres),
    ];
    for (flag, value) in named {
        if let Some(v) = value {
            options.push(format!("{flag}={v}"));
        }
    }
    if let Some(limit) = spec.time_limit {
        options.push(format!("--time={}", slurm_minutes(limit)));
    }
    options.extend(slurm.sbatch_args.iter().cloned());
    options.extend(spec.attempt_options.iter().cloned());
    options
}

/// The options of the training step: one task per node, all stopped when one fails, the
/// container when the platform has one.
fn step_options(slurm: &SlurmConfig) -> Vec<String> {
    let mut options = vec![
        "--ntasks-per-node=1".to_owned(),
        "--kill-on-bad-exit=1".to_owned(),
    ];
    if let Some(image) = &slurm.container_image {
        options.push(format!("--container-image={}", shell_quote(image)));
    }
    if !slurm.container_mounts.is_empty() {
        let mounts = slurm.container_mounts.join(",");
        options.push(format!("--container-mounts={}", shell_quote(&mounts)));
    }
    options
}

/// Starts the sampler on every node, in the background, before training.
fn sampler_start(sampler: &SamplerStep<'_>) -> String {
    let dir = shell_quote(&sampler.dir.display().to_string());
    let stop = shell_quote(&sampler.dir.join(SAMPLER_STOP_FILE).display().to_string());
    format!(
        "\n# Every node's memory, sampled from before training starts until it ended.\n\
         mkdir -p {dir}\nrm -f {stop}\n\
         srun --overlap --ntasks-per-node=1 {} sample --dir {dir} --stop-file {stop} --interval {}ms &\n\
         sampler=$!\n",
        shell_quote(sampler.goldgate),
        sampler.interval.as_millis().max(1)
    )
}

/// The node script's first lines under a sampler: name the task's process group (the
/// sampler watches it) and wait, up to a minute, until the node's sampler took its baselines.
fn sampler_handshake(sampler: &SamplerStep<'_>) -> String {
    let dir = sampler.dir.display().to_string();
    let pgid = shell_quote(&format!("{dir}/pgid."));
    let ready = shell_quote(&format!("{dir}/ready."));
    format!(
        "# This node's sampler watches this task's process group, from before training on.\n\
         echo \"$$\" > {pgid}\"$SLURM_NODEID\"\n\
         for _ in $(seq 600); do [ -e {ready}\"$SLURM_NODEID\" ] && break; sleep 0.1; done\n"
    )
}

/// Tells the samplers to stop and waits for them.
fn sampler_stop(sampler: Option<&SamplerStep<'_>>) -> String {
    let Some(sampler) = sampler else {
        return String::new();
    };
    let stop = sampler.dir.join(SAMPLER_STOP_FILE);
    format!(
        "touch {}\nwait \"$sampler\" || true\n",
        shell_quote(&stop.display().to_string())
    )
}

/// A job name Slurm shows in `squeue`: `goldgate:` and the job id, characters outside
/// `[A-Za-z0-9._:/@=,+-]` as `_`.
pub fn job_name(id: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._:/@=,+-".contains(c);
    let id: String = id.chars().map(|c| if safe(c) { c } else { '_' }).collect();
    format!("goldgate:{id}")
}

/// A path as one word of an `#SBATCH` line (sbatch splits them on blanks; no quoting there).
fn shell_safe_path(path: &str) -> String {
    path.replace(char::is_whitespace, "_")
}

/// `--time` in whole minutes, rounded up (Slurm counts time limits in minutes).
pub fn slurm_minutes(limit: Duration) -> u64 {
    limit.as_secs().div_ceil(60).max(1)
}

/// The batch job's time limit: each run's limit (`--timeout`, else the case's or platform's,
/// else the recipe's `time_limit`) times the job's runs, else the platform's
/// `slurm.time_limit`.
pub fn batch_time_limit(
    job: &Job,
    timeout: Option<Duration>,
    slurm: &SlurmConfig,
) -> Option<Duration> {
    let per_run = timeout.or(job.timeout).or_else(|| {
        job.recipe
            .as_ref()
            .and_then(|r| r.time_limit)
            .map(Duration::from_secs)
    });
    let runs = u32::try_from(job.runs.len()).unwrap_or(u32::MAX).max(1);
    per_run.map(|d| d.saturating_mul(runs)).or(slurm.time_limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_keep_the_id_readable() {
        assert_eq!(
            job_name("gpt/a b@allocator=gc80#2"),
            "goldgate:gpt/a_b@allocator=gc80_2"
        );
    }

    #[test]
    fn minutes_round_up() {
        assert_eq!(slurm_minutes(Duration::from_secs(1)), 1);
        assert_eq!(slurm_minutes(Duration::from_secs(60)), 1);
        assert_eq!(slurm_minutes(Duration::from_secs(61)), 2);
        assert_eq!(slurm_minutes(Duration::from_secs(1800)), 30);
    }

    #[test]
    fn time_limit_is_per_run_times_runs_else_the_platforms() {
        let mut job = Job::fixture(Path::new("/o"), "gpt/a", 1);
        let slurm = SlurmConfig {
            time_limit: Some(Duration::from_secs(600)),
            ..SlurmConfig::default()
        };
        assert_eq!(
            batch_time_limit(&job, None, &slurm),
            Some(Duration::from_secs(600))
        );
        job.runs.push(job.runs[0].clone());
        job.timeout = Some(Duration::from_secs(100));
        assert_eq!(
            batch_time_limit(&job, None, &slurm),
            Some(Duration::from_secs(200))
        );
        let flag = Some(Duration::from_secs(30));
        assert_eq!(
            batch_time_limit(&job, flag, &slurm),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn a_two_node_script_runs_one_task_per_node_with_slurms_ids() {
        let mut job = Job::fixture(Path::new("/o"), "gpt/a", 1);
        job.nodes = 2;
        job.launcher = super::super::job::Launcher::Torchrun { nproc: 4 };
        job.runs[0].entry_argv = vec!["/m/pretrain_gpt.py".into(), "--tp".into(), "2".into()];
        let slurm = SlurmConfig {
            partition: Some("batch".into()),
            gres: Some("gpu:4".into()),
            container_image: Some("nvcr.io/nvidia/pytorch:25.01-py3".into()),
            container_mounts: vec!["/lustre:/lustre".into()],
            sbatch_args: vec!["--exclusive".into()],
            ..SlurmConfig::default()
        };
        let log = Path::new("/o/r/gpt/a/default/1/logs/console.log");
        let spec = BatchSpec {
            slurm: &slurm,
            time_limit: Some(Duration::from_secs(1800)),
            log,
            entry_program: None,
            sampler: Some(SamplerStep {
                goldgate: "/usr/bin/goldgate",
                dir: Path::new("/o/r/gpt/a/default/1/samples"),
                interval: Duration::from_millis(100),
            }),
            attempt_options: &[],
        };
        insta::assert_snapshot!(render_batch(&job, &spec));
    }
}
