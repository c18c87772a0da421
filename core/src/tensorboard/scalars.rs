//! Stage "observe", TensorBoard: a job's scalars per tag and step, from every event file of
//! its folder (oldest first; a step keeps the first file's value, within a file the last one
//! written, as Megatron's convergence reader does). `simple_value`s first; a tag written only
//! as one-element tensors is taken from those.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::accumulate::TagSeries;
use super::error::TensorboardError;
use super::folder::{accumulate_file, find_event_files};

/// What a job's TensorBoard folder holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobScalars {
    pub dir: PathBuf,
    /// Event files, oldest first.
    pub files: Vec<PathBuf>,
    /// Tag → step → value (float32 `simple_value`s widened exactly), tags in first-seen order.
    pub series: Vec<(String, BTreeMap<u64, f64>)>,
}

/// Reads every event file of `dir`, one at a time: what stays is the scalars, merged as each
/// file is read (tensor tags apart, until the end shows which have no `simple_value`).
pub fn job_scalars(dir: &Path) -> Result<JobScalars, TensorboardError> {
    let files = find_event_files(dir)?;
    let mut series: Vec<(String, BTreeMap<u64, f64>)> = Vec::new();
    let mut tensors: Vec<(String, BTreeMap<u64, f64>)> = Vec::new();
    for file in &files {
        let acc = accumulate_file(file)?;
        for s in &acc.scalars {
            add(&mut series, s);
        }
        for s in &acc.tensors {
            add(&mut tensors, s);
        }
    }
    for (tag, values) in tensors {
        if !series.iter().any(|(t, _)| *t == tag) {
            series.push((tag, values));
        }
    }
    Ok(JobScalars {
        dir: dir.to_path_buf(),
        files,
        series,
    })
}

fn add(series: &mut Vec<(String, BTreeMap<u64, f64>)>, s: &TagSeries) {
    let mut file: BTreeMap<u64, f64> = BTreeMap::new();
    for (step, v) in &s.points {
        if let Ok(step) = u64::try_from(*step) {
            file.insert(step, *v);
        }
    }
    match series.iter_mut().find(|(t, _)| *t == s.tag) {
        Some((_, values)) => {
            for (step, v) in file {
                values.entry(step).or_insert(v);
            }
        }
        None => series.push((s.tag.clone(), file)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_resume_fixture_first_file_wins() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tensorboard/resume");
        let s = job_scalars(&dir).unwrap();
        assert_eq!(s.files.len(), 3);
        let loss = &s.series.iter().find(|(t, _)| t == "lm loss").unwrap().1;
        assert_eq!(
            loss.keys().copied().collect::<Vec<_>>(),
            (1..=50).collect::<Vec<_>>()
        );
        let tensor =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tensorboard/tensor");
        let t = job_scalars(&tensor).unwrap();
        let names: Vec<&str> = t.series.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["lm loss", "total loss"]);
        assert_eq!(t.series[0].1[&4], 1.0);
    }
}
