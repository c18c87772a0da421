//! `goldgate sample` (hidden): one node's memory sampler inside a Slurm batch job, started by
//! the batch script on every node (`srun --overlap --ntasks-per-node=1 goldgate sample ...`)
//! before training and stopped after it; writes `node<SLURM_NODEID>.json` in `--dir`.

use std::path::PathBuf;
use std::time::Duration;

use super::error::AppError;
use goldgate_core::duration::parse_duration;
use goldgate_schema::Exit;

/// Arguments of `goldgate sample`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The job's samples folder on the shared filesystem.
    #[arg(long)]
    pub dir: PathBuf,
    /// Sampling ends once this file exists (the batch script creates it after training).
    #[arg(long)]
    pub stop_file: PathBuf,
    /// Sampling interval.
    #[arg(long, value_parser = parse_duration, default_value = "10ms")]
    pub interval: Duration,
    /// The node's number in the job (Slurm sets `SLURM_NODEID`).
    #[arg(long, env = "SLURM_NODEID", default_value_t = 0)]
    pub node: u32,
}

/// Runs the command: samples until the stop file appears or a signal arrives.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let stop = goldgate_record::launch::install_signal_handlers()?;
    goldgate_record::run::slurm::sample_node(
        &args.dir,
        &args.stop_file,
        args.interval,
        args.node,
        &stop,
    )
    .map_err(|source| goldgate_record::run::RunError::Write {
        path: goldgate_record::run::slurm::node_file(&args.dir, args.node),
        source,
    })?;
    Ok(Exit::Pass)
}
