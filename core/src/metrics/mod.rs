//! Stage "metrics", its records: the `results.json` record of one job and the `run.json` index
//! of a run (the schema crate's types), loading them back (names checked, size-limited), long
//! series thinned (`downsample`) and a run's TensorBoard scalars merged into its metrics. The
//! pure builder of a record from what was observed is `goldgate-record`'s `metrics::build`.

pub mod downsample;
pub mod record;
pub mod tensorboard;
