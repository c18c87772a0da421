//! Stage "observe": writes the probe's `sitecustomize.py` into a job folder and computes the
//! environment that puts it first on every rank's `PYTHONPATH`.

use std::path::Path;

/// The Python probe, embedded in the binary so an installed goldgate needs no data files.
const SITECUSTOMIZE: &str = include_str!("sitecustomize.py");

/// What `--probe` asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeMode {
    /// Record allocator statistics and empty_cache calls.
    pub torch: bool,
    /// Also record allocation history and dump a snapshot on out-of-memory errors.
    pub history: bool,
}

impl ProbeMode {
    /// Parses `torch`, `torch,history` or `none`.
    pub fn parse(text: &str) -> Result<ProbeMode, String> {
        let mut mode = ProbeMode::default();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "none" => return Ok(ProbeMode::default()),
                "torch" => mode.torch = true,
                "history" => mode.history = true,
                other => {
                    return Err(format!(
                        "unknown probe `{other}` (expected `torch`, `torch,history` or `none`)"
                    ));
                }
            }
        }
        if mode.history && !mode.torch {
            return Err("`history` needs `torch` (use `--probe torch,history`)".into());
        }
        Ok(mode)
    }
}

/// Writes `<job_dir>/probe/sitecustomize.py` and returns the variables to set for the job:
/// `PYTHONPATH` with the probe folder first (then `existing_pythonpath`), the output folder,
/// the polling interval and the history switch.
pub fn install(
    job_dir: &Path,
    mode: ProbeMode,
    interval_seconds: f64,
    existing_pythonpath: Option<&str>,
) -> std::io::Result<Vec<(String, String)>> {
    let dir = job_dir.join("probe");
    std::fs::create_dir_all(&dir)?;
    goldgate_core::fsio::write_atomic(&dir.join("sitecustomize.py"), SITECUSTOMIZE.as_bytes())?;
    let mut pythonpath = dir.display().to_string();
    if let Some(rest) = existing_pythonpath.filter(|p| !p.is_empty()) {
        pythonpath.push(':');
        pythonpath.push_str(rest);
    }
    let mut env = vec![
        ("PYTHONPATH".to_string(), pythonpath),
        ("GOLDGATE_PROBE_DIR".to_string(), dir.display().to_string()),
        (
            "GOLDGATE_PROBE_INTERVAL_S".to_string(),
            format!("{interval_seconds}"),
        ),
    ];
    if mode.history {
        env.push(("GOLDGATE_PROBE_HISTORY".to_string(), "1".to_string()));
    }
    Ok(env)
}

/// For a job that is not Python: creates `<job_dir>/probe` and returns `GOLDGATE_PROBE_DIR`
/// only, so a workload that counts for itself (the fake trainer does) writes probe files in
/// the probe's schema, read back like a Python rank's.
pub fn probe_dir_only(job_dir: &Path) -> std::io::Result<Vec<(String, String)>> {
    let dir = job_dir.join("probe");
    std::fs::create_dir_all(&dir)?;
    Ok(vec![(
        "GOLDGATE_PROBE_DIR".to_string(),
        dir.display().to_string(),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes() {
        assert_eq!(ProbeMode::parse("none").unwrap(), ProbeMode::default());
        assert_eq!(
            ProbeMode::parse("torch").unwrap(),
            ProbeMode {
                torch: true,
                history: false
            }
        );
        assert_eq!(
            ProbeMode::parse("torch,history").unwrap(),
            ProbeMode {
                torch: true,
                history: true
            }
        );
        assert!(ProbeMode::parse("history").is_err());
        assert!(
            ProbeMode::parse("cuda")
                .unwrap_err()
                .contains("unknown probe `cuda`")
        );
    }

    #[test]
    fn install_puts_probe_first_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let env = install(
            dir.path(),
            ProbeMode {
                torch: true,
                history: true,
            },
            5.0,
            Some("/a:/b"),
        )
        .unwrap();
        let pp = &env.iter().find(|(k, _)| k == "PYTHONPATH").unwrap().1;
        assert!(pp.ends_with("/probe:/a:/b"), "{pp}");
        assert!(dir.path().join("probe/sitecustomize.py").is_file());
        assert!(
            env.iter()
                .any(|(k, v)| k == "GOLDGATE_PROBE_HISTORY" && v == "1")
        );
    }
}
