//! Stage "metrics": the `results.json` record of one job, the run index, atomic writes.
