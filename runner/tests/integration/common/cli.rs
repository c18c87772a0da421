//! Running the `goldgate` binary from a test: one command builder and one way to read what it
//! printed, so every CLI test starts goldgate in the same environment.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

/// The workspace root: where `goldgate run` finds `goldgate.yaml` and the fixture cases
/// (`runner/tests/fixtures/cases`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `goldgate` binary built for these tests, without colour (`NO_COLOR`) and outside GitHub
/// Actions (no `GITHUB_ACTIONS`/`GITHUB_STEP_SUMMARY`: no annotations, no step summary), even
/// when the tests themselves run in CI. Add the arguments, folder and further variables.
pub fn goldgate() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goldgate"));
    cmd.env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// [`goldgate`] with this build's folder first on `PATH`, so a case whose entry is
/// `[goldgate, fake-trainer]` starts this build's hidden fake trainer.
pub fn goldgate_on_path() -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_goldgate"));
    let path = format!(
        "{}:{}",
        bin.parent().expect("the binary is in a folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = goldgate();
    cmd.env("PATH", path);
    cmd
}

/// `goldgate ARGS` in `dir`, run to the end with no stdin, as [`goldgate_on_path`] starts it.
pub fn goldgate_in(dir: &Path, args: &[&str]) -> Output {
    goldgate_on_path()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("goldgate starts")
}

/// Writes `text` to `path`, making its folders first.
pub fn write(path: &Path, text: &str) {
    let parent = path.parent().expect("a file's path has a folder");
    std::fs::create_dir_all(parent).expect("the test's folder can be made");
    std::fs::write(path, text).expect("the test's file can be written");
}

/// Stdout then stderr, as text (bytes that are not UTF-8 replaced).
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The exit code; the test fails when goldgate was killed by a signal instead.
pub fn code(o: &Output) -> i32 {
    o.status
        .code()
        .unwrap_or_else(|| panic!("goldgate was killed: {}\n{}", o.status, text(o)))
}

/// Sends goldgate SIGINT, as Ctrl-C in its terminal would, and waits until it exited.
pub fn ctrl_c(child: &mut Child) -> ExitStatus {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child's pid is not 0");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("goldgate is running");
    child.wait().expect("goldgate was started by this test")
}
