//! Stage "run": facts about where a job ran and what it ran, for the record's fingerprint.

use std::path::Path;

use crate::plan::Job;

/// This machine's host name.
pub(crate) fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// The git commit of the folder holding the job's entry script, when it is a git checkout.
pub(crate) fn workload_commit(job: &Job, base_dir: &Path) -> Option<String> {
    let entry = job
        .runs
        .first()?
        .entry_argv
        .iter()
        .find(|w| w.ends_with(".py"))?;
    let dir = base_dir.join(entry).parent()?.to_path_buf();
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}
