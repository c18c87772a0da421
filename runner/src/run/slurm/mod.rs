//! Stage "run": the Slurm executor — each attempt of a job as one batch job (`sbatch`), all of
//! goldgate's jobs watched with one `squeue` call per poll interval, each job's log streamed
//! from the shared job folder, Slurm's end states mapped to goldgate's outcomes.

mod command;
mod executor;
mod node;
mod queue;
mod state;
mod tail;

pub use command::SlurmError;
pub use executor::SlurmExecutor;
pub use node::{NodeSamples, node_file, sample_node};
