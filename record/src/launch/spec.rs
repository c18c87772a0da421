//! Stage "launch": what to run — the spec of one process tree, the launcher prefix
//! (torchrun, ft_launcher, direct), free rendezvous ports and program lookup.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::LaunchError;
use crate::plan::{RunSpec, Site};

/// Default time between SIGTERM and SIGKILL when a job is stopped.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// One process tree to start: exactly these words, this environment, no shell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Program and arguments; a bare program name is looked up by [`resolve_program`].
    pub argv: Vec<String>,
    /// Variables set on top of goldgate's own environment.
    pub env: BTreeMap<String, String>,
    /// Variables removed from the inherited environment.
    pub env_unset: Vec<String>,
    /// Working directory of the job; must exist.
    pub cwd: PathBuf,
    /// Where the job's combined stdout+stderr is copied as it arrives, unredacted: set only
    /// on request (`--keep-raw-log`). The log goldgate keeps is the redacted one the run's
    /// log watch writes from [`crate::launch::LaunchEvent::Output`].
    pub raw_log: Option<PathBuf>,
    /// Wall-clock limit; then SIGTERM to the group, `grace`, SIGKILL.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// `CUDA_VISIBLE_DEVICES` for this job's slice of GPUs (overrides `env`).
    pub cuda_visible_devices: Option<String>,
}

impl LaunchSpec {
    /// A spec with the inherited environment, no timeout and the default grace period.
    pub fn new(argv: Vec<String>, cwd: PathBuf) -> LaunchSpec {
        LaunchSpec {
            argv,
            env: BTreeMap::new(),
            env_unset: Vec::new(),
            cwd,
            raw_log: None,
            timeout: None,
            grace: DEFAULT_GRACE,
            cuda_visible_devices: None,
        }
    }
}

/// How the entry program is started: the plan's launcher (`torchrun`, `ft_launcher`, direct).
use crate::plan::Launcher;

/// The command line the local executor starts for one run: [`RunSpec::argv`] (the one
/// launcher-line builder), with a program entry resolved here first (torchrun would only
/// search PATH; a `.py` script and a direct launcher's program are left as they are).
pub fn command_line(
    launcher: &Launcher,
    run: &RunSpec,
    site: &Site,
    cwd: &Path,
) -> Result<Vec<String>, LaunchError> {
    let Some(first) = run.entry_argv.first() else {
        return Err(LaunchError::EmptyArgv);
    };
    if *launcher == Launcher::Direct || first.ends_with(".py") {
        return Ok(run.argv(launcher, site));
    }
    let resolved = resolve_program(first, cwd, std::env::var_os("PATH"))?;
    let mut run = run.clone();
    run.entry_argv[0] = resolved.to_string_lossy().into_owned();
    Ok(run.argv(launcher, site))
}

/// A TCP port on 127.0.0.1 that was free a moment ago: bind port 0, read it, close.
pub fn free_port() -> Result<u16, LaunchError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|source| LaunchError::FreePort { source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| LaunchError::FreePort { source })?;
    Ok(addr.port())
}

/// Finds the program to execute.
///
/// A name with a `/` is a path (relative ones against `cwd`). A bare name is looked up
/// next to goldgate's own executable first (so `fake-trainer` built beside `goldgate`
/// wins), then in each `PATH` directory.
pub fn resolve_program(
    name: &str,
    cwd: &Path,
    path_var: Option<OsString>,
) -> Result<PathBuf, LaunchError> {
    if name.contains('/') {
        let path = cwd.join(name);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(LaunchError::ProgramNotFound {
                program: name.to_owned(),
                searched: path.display().to_string(),
            })
        };
    }
    // The search itself is the plan's (next to goldgate's executable, then PATH), so
    // `repro` and `run` always find the same program.
    let own_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    if let Some(found) = crate::plan::resolve_program(name, own_dir.as_deref(), path_var.as_deref())
    {
        return Ok(found);
    }
    // Where it looked, in a few words: a whole PATH is a wall of text that says nothing more.
    let path_dirs = path_var.iter().flat_map(std::env::split_paths).count();
    let mut searched: Vec<String> = own_dir
        .map(|d| format!("next to goldgate ({})", d.display()))
        .into_iter()
        .collect();
    if path_dirs > 0 {
        let s = if path_dirs == 1 { "" } else { "s" };
        searched.push(format!("the job's PATH ({path_dirs} folder{s})"));
    }
    Err(LaunchError::ProgramNotFound {
        program: name.to_owned(),
        searched: if searched.is_empty() {
            "no folders".to_owned()
        } else {
            searched.join(" and ")
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| (*w).to_owned()).collect()
    }

    fn site() -> Site {
        Site {
            nodes: "1".into(),
            node_rank: "0".into(),
            master_addr: "localhost".into(),
            master_port: "29512".into(),
            log_dir: "/j/logs".into(),
        }
    }

    #[test]
    fn direct_keeps_the_entry_as_is() {
        let run = RunSpec::new(words(&["x", "--a", "1"]));
        let argv = command_line(&Launcher::Direct, &run, &site(), Path::new("/")).unwrap();
        assert_eq!(argv, words(&["x", "--a", "1"]));
    }

    #[test]
    fn torchrun_prefix_for_a_python_script() {
        let run = RunSpec::new(words(&["pretrain_gpt.py", "--train-iters", "10"]));
        let argv = command_line(
            &Launcher::Torchrun { nproc: 8 },
            &run,
            &site(),
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(
            argv.join(" "),
            "torchrun --nproc_per_node 8 --nnodes 1 --master_addr localhost --master_port 29512 \
             --node_rank 0 --log-dir /j/logs --tee 0:3,7:3 --redirects 3 pretrain_gpt.py \
             --train-iters 10"
        );
    }

    #[test]
    fn ft_launcher_takes_the_same_flags_and_resolves_programs() {
        let run = RunSpec::new(words(&["sh", "-c", "true"]));
        let argv = command_line(
            &Launcher::FtLauncher { nproc: 2 },
            &run,
            &site(),
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(argv[..3], words(&["ft_launcher", "--nproc_per_node", "2"]));
        assert_eq!(argv[17], "--max-restarts=3");
        assert_eq!(argv[18], "--no-python");
        assert!(argv[19].ends_with("/sh"), "{argv:?}");
        assert_eq!(argv[20..], words(&["-c", "true"]));
    }

    #[test]
    fn empty_entry_is_an_error() {
        let run = RunSpec::new(Vec::new());
        let err = command_line(&Launcher::Direct, &run, &site(), Path::new("/")).unwrap_err();
        assert!(matches!(err, LaunchError::EmptyArgv));
    }

    #[test]
    fn free_port_is_nonzero_and_bindable() {
        let port = free_port().unwrap();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
    }

    #[test]
    fn resolves_from_path_and_reports_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let found =
            resolve_program("sh", dir.path(), Some("/nonexistent:/bin:/usr/bin".into())).unwrap();
        assert!(found.ends_with("sh"));
        let err = resolve_program("no-such-prog-xyz", dir.path(), Some("/nonexistent".into()))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("program `no-such-prog-xyz` not found (looked in "),
            "{msg}"
        );
        assert!(
            msg.ends_with(") and the job's PATH (1 folder))") && msg.contains("next to goldgate ("),
            "{msg}"
        );
    }

    #[test]
    fn relative_paths_are_taken_against_cwd() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.sh"), "").unwrap();
        assert_eq!(
            resolve_program("./run.sh", dir.path(), None).unwrap(),
            dir.path().join("./run.sh")
        );
        assert!(resolve_program("./missing", dir.path(), None).is_err());
    }
}
