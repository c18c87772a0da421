//! Stage "history": main's recent jobs as records — what `bless --from-history` blesses, so
//! the golden's per-job samples (the two-sample test's golden side) are the last N passed
//! runs of a branch on one platform rather than one old session's jobs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::error::HistoryError;
use super::series::SeriesKey;
use super::store::Store;
use goldgate_schema::{RunRecord, StepValues, VariantRecord};

/// The variant record of a stored variant name (`default`, `allocator=gc80,checkpoint=async`).
pub fn variant_record(name: &str) -> VariantRecord {
    let choices: BTreeMap<String, String> = if name == "default" {
        BTreeMap::new()
    } else {
        name.split(',')
            .filter_map(|c| c.split_once('='))
            .map(|(a, v)| (a.to_owned(), v.to_owned()))
            .collect()
    };
    let safe = |t: &str| -> String {
        t.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let slug = if choices.is_empty() {
        "default".to_owned()
    } else {
        let parts: Vec<String> = choices
            .iter()
            .map(|(a, v)| format!("{}-{}", safe(a), safe(v)))
            .collect();
        parts.join("+")
    };
    VariantRecord {
        name: name.to_owned(),
        slug,
        choices,
    }
}

/// The passed jobs of the newest `runs` runs of `key.branch` (default `main`) on
/// `key.platform`, as records with every stored sample; repeats renumbered 1..N (newest run
/// first) so each job id is distinct. The path of each is `history:<run id>/<job id>`.
pub fn recent_records(
    store: &mut Store,
    key: &SeriesKey,
    runs: usize,
) -> Result<Vec<(PathBuf, RunRecord)>, HistoryError> {
    let jobs = store.recent_jobs(key, runs)?;
    let variant = variant_record(&key.variant);
    let mut out = Vec::with_capacity(jobs.len());
    for (k, (run_id, job_id, commit)) in jobs.iter().enumerate() {
        let repeat = u32::try_from(k + 1).unwrap_or(u32::MAX);
        let mut record = RunRecord::passed(&key.case, variant.clone(), repeat, &key.platform);
        record.run_id = run_id.clone();
        record.fingerprint.workload_commit = Some(commit.clone());
        record.metrics = store
            .job_samples(run_id, job_id)?
            .into_iter()
            .map(|(name, steps)| (name, StepValues(steps)))
            .collect();
        out.push((PathBuf::from(format!("history:{run_id}/{job_id}")), record));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_become_the_records_choices_and_slug() {
        let v = variant_record("allocator=gc80,checkpoint=async");
        assert_eq!(v.slug, "allocator-gc80+checkpoint-async");
        assert_eq!(v.choices.len(), 2);
        assert_eq!(variant_record("default").slug, "default");
    }
}
