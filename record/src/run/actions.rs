//! Stage "run": carries out the [`RunAction`]s a plan puts between a job's runs. Every
//! executor calls [`apply`] before each run (a batch executor does it on the shared
//! filesystem before submitting the run).

use crate::plan::RunAction;

/// Does one action; the error names the path.
pub fn apply(action: &RunAction) -> Result<(), String> {
    match action {
        RunAction::RemoveCheckpoint { dir, iteration } => {
            let path = dir.join(format!("iter_{iteration:07}"));
            match std::fs::remove_dir_all(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
            }
        }
        RunAction::WriteLatestIteration { dir, iteration } => {
            let path = dir.join("latest_checkpointed_iteration.txt");
            goldgate_core::fsio::write_atomic(&path, format!("{iteration}\n").as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_one_checkpoint_and_rewrites_the_tracker() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        for it in [50, 100] {
            std::fs::create_dir_all(d.join(format!("iter_{it:07}/sub"))).unwrap();
        }
        std::fs::write(d.join("latest_checkpointed_iteration.txt"), "100\n").unwrap();
        apply(&RunAction::RemoveCheckpoint {
            dir: d.clone(),
            iteration: 100,
        })
        .unwrap();
        apply(&RunAction::WriteLatestIteration {
            dir: d.clone(),
            iteration: 50,
        })
        .unwrap();
        assert!(d.join("iter_0000050").is_dir());
        assert!(!d.join("iter_0000100").exists());
        let tracker = std::fs::read_to_string(d.join("latest_checkpointed_iteration.txt"));
        assert_eq!(tracker.unwrap(), "50\n");
        // Removing what is not there is not an error (Megatron's `rm -rf`).
        apply(&RunAction::RemoveCheckpoint {
            dir: d,
            iteration: 7,
        })
        .unwrap();
    }
}
