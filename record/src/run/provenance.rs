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

/// The git commit of the checkout holding the job's entry script (its first `.py` word), when
/// the script is tracked there.
pub(crate) fn workload_commit(job: &Job, base_dir: &Path) -> Option<String> {
    let entry = job
        .runs
        .first()?
        .entry_argv
        .iter()
        .find(|w| w.ends_with(".py"))?;
    script_commit(&base_dir.join(entry))
}

/// The commit of the git checkout that tracks `script` (symlinks resolved). `git rev-parse`
/// alone would name any repository that encloses the folder: a script copied or extracted into
/// an unrelated checkout (or under the working directory's) would get that checkout's commit.
fn script_commit(script: &Path) -> Option<String> {
    let script = script.canonicalize().ok()?;
    let dir = script.parent()?;
    let name = script.file_name()?.to_str()?;
    git(dir, &["ls-files", "--error-unmatch", "--", name])?;
    git(dir, &["rev-parse", "HEAD"]).filter(|s| !s.is_empty())
}

/// `git ARGS` in `dir`: its trimmed stdout when it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_ok(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {ok:?}");
    }

    #[test]
    fn the_commit_is_the_scripts_checkout_not_an_enclosing_one() {
        let outer = tempfile::tempdir().unwrap();
        git_ok(outer.path(), &["init", "-q"]);
        std::fs::write(outer.path().join("readme"), "outer").unwrap();
        git_ok(outer.path(), &["add", "readme"]);
        git_ok(outer.path(), &["commit", "-q", "-m", "outer"]);
        let outer_head = git(outer.path(), &["rev-parse", "HEAD"]).unwrap();
        // An extracted workload inside the outer checkout, untracked by it: not the outer's.
        let work = outer.path().join("mlm");
        std::fs::create_dir(&work).unwrap();
        std::fs::write(work.join("pretrain.py"), "print()").unwrap();
        assert_eq!(script_commit(&work.join("pretrain.py")), None);
        // Its own checkout: its commit.
        git_ok(&work, &["init", "-q"]);
        git_ok(&work, &["add", "pretrain.py"]);
        git_ok(&work, &["commit", "-q", "-m", "inner"]);
        let inner = script_commit(&work.join("pretrain.py")).unwrap();
        assert_eq!(inner.len(), 40);
        assert_ne!(inner, outer_head);
        // A script the outer checkout tracks: the outer's commit.
        std::fs::write(outer.path().join("train.py"), "print()").unwrap();
        git_ok(outer.path(), &["add", "train.py"]);
        git_ok(outer.path(), &["commit", "-q", "-m", "script"]);
        let now = git(outer.path(), &["rev-parse", "HEAD"]).unwrap();
        assert_eq!(script_commit(&outer.path().join("train.py")), Some(now));
        assert_eq!(script_commit(&outer.path().join("missing.py")), None);
    }
}
