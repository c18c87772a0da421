//! Stage "run": the Slurm executor — each attempt of a job as one batch job (`sbatch`), all of
//! goldgate's jobs watched with one `squeue` call per poll interval, each job's log streamed
//! from the shared job folder, Slurm's end states mapped to goldgate's outcomes, Slurm's raw
//! copy of each job's output settled, and what a run that died left in the queue found and
//! cancelled, and in its job folders settled.

mod command;
mod ended;
mod executor;
mod followed;
mod node;
mod orphans;
mod queue;
mod raw;
mod state;
mod tail;

pub use command::SlurmError;
pub use executor::SlurmExecutor;
pub use node::{NodeSamples, node_file, sample_node};
pub use orphans::{CleanedUp, cancel_left, left_in_queue};
