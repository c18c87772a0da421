//! Reading back what a test's `goldgate run` wrote.

use std::path::Path;

use goldgate::metrics::RunRecord;

/// Every `results.json` record under `out` (a results folder or one run of it).
pub fn records(out: &Path) -> Vec<RunRecord> {
    match goldgate::metrics::record::load_results(out) {
        Ok(found) => found.into_iter().map(|(_, r)| r).collect(),
        Err(e) => panic!("results under {}: {e}", out.display()),
    }
}
