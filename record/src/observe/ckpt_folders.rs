//! Stage "observe": the size of each save's checkpoint folder (`iter_NNNNNNN`, Megatron's
//! layout), read once the job has ended and before goldgate removes the checkpoints: an
//! independent reading of what each save wrote, next to the probe's `wchar`.

use std::collections::BTreeMap;
use std::path::Path;

/// Folders followed below one save's folder (a sharded save nests one or two levels).
const MAX_DEPTH: usize = 8;

/// Bytes of regular-file content under each `iter_NNNNNNN` folder of `save_dir`, by
/// iteration. Links are not followed (a job's link must not make goldgate walk elsewhere);
/// an unreadable entry counts nothing. Empty when `save_dir` does not exist.
pub(crate) fn folder_sizes(save_dir: &Path) -> BTreeMap<u64, u64> {
    let Ok(entries) = std::fs::read_dir(save_dir) else {
        return BTreeMap::new();
    };
    let mut sizes = BTreeMap::new();
    for entry in entries.flatten() {
        let Some(iteration) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("iter_"))
            .and_then(|digits| digits.parse::<u64>().ok())
        else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            sizes.insert(iteration, tree_bytes(&entry.path(), MAX_DEPTH));
        }
    }
    sizes
}

/// Bytes of the regular files below `dir`, `depth` levels deep at most.
fn tree_bytes(dir: &Path, depth: usize) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_file() {
            total += entry.metadata().map_or(0, |m| m.len());
        } else if kind.is_dir() && depth > 0 {
            total += tree_bytes(&entry.path(), depth - 1);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_each_save_folder_and_ignores_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path();
        std::fs::create_dir_all(save.join("iter_0000003/mp_rank_00")).unwrap();
        std::fs::write(
            save.join("iter_0000003/mp_rank_00/model.pt"),
            vec![1u8; 1000],
        )
        .unwrap();
        std::fs::write(save.join("iter_0000003/metadata.json"), b"{}").unwrap();
        std::fs::create_dir_all(save.join("iter_0000006")).unwrap();
        std::fs::write(save.join("iter_0000006/__0_0.distcp"), vec![2u8; 500]).unwrap();
        std::fs::write(save.join("latest_checkpointed_iteration.txt"), b"6").unwrap();
        std::fs::create_dir_all(save.join("iter_bogus")).unwrap();
        std::os::unix::fs::symlink("/usr", save.join("iter_0000006/usr")).unwrap();
        let sizes = folder_sizes(save);
        assert_eq!(sizes, BTreeMap::from([(3, 1002), (6, 500)]));
        assert!(folder_sizes(&save.join("missing")).is_empty());
    }
}
