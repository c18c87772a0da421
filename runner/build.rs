//! Build script: records the commit goldgate is built from and the release tag, as
//! `GOLDGATE_BUILD` (`v0.2.0, commit 1a2b3c4d5e6f` or `commit 1a2b3c4d5e6f`), for
//! `goldgate --version`. The commit, in order: `GOLDGATE_COMMIT`
//! set by whoever builds (a packager), `git rev-parse` in a checkout, the `.cargo_vcs_info.json`
//! that `cargo package` puts in a crates tarball (which has no `.git`), else `unknown`. The tag:
//! `GOLDGATE_RELEASE` set by whoever builds (the release workflow sets the tag it builds), else
//! a `v*` tag on the checkout's HEAD (`git describe --tags --exact-match`), else none.

#![allow(clippy::print_stdout)] // cargo reads a build script's instructions from its stdout

use std::path::Path;
use std::process::Command;

fn main() {
    // Rerun when goldgate's own source changes, i.e. only when the crate is rebuilt anyway:
    // watching `.git` would rebuild the crate and every test binary on each commit. A build
    // after a commit that touched no source keeps the commit of the last source change; a
    // clean build (CI, `cargo install`) always names HEAD.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    // The crates goldgate is built from: a change there rebuilds this one anyway.
    for dir in [
        "../core/src",
        "../record/src",
        "../judge/src",
        "../schema/src",
    ] {
        println!("cargo:rerun-if-changed={dir}");
    }
    println!("cargo:rerun-if-env-changed=GOLDGATE_COMMIT");
    println!("cargo:rerun-if-env-changed=GOLDGATE_RELEASE");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let dir = Path::new(&manifest);
    let commit = std::env::var("GOLDGATE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| from_git(dir))
        .or_else(|| from_vcs_info(dir))
        .unwrap_or_else(|| "unknown".to_owned());
    let release = std::env::var("GOLDGATE_RELEASE")
        .ok()
        .filter(|t| !t.is_empty())
        .or_else(|| {
            git(
                dir,
                &[
                    "describe",
                    "--tags",
                    "--exact-match",
                    "--match",
                    "v*",
                    "HEAD",
                ],
            )
        });
    // `v0.2.0, commit …` at a release, `commit …` otherwise: one value, as cargo trims the
    // whitespace at the end of one (a prefix `v0.2.0, ` would lose its space).
    let build = match release {
        Some(tag) => format!("{tag}, commit {commit}"),
        None => format!("commit {commit}"),
    };
    println!("cargo:rustc-env=GOLDGATE_BUILD={build}");
}

/// Output of `git ARGS` in `dir`, trimmed; none when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

/// The short commit of the checkout.
fn from_git(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--short=12", "HEAD"])
}

/// `{"git": {"sha1": "…"}}` from the file `cargo package` writes beside Cargo.toml.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let path = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(path).ok()?;
    // A fixed layout written by cargo; no JSON parser needed for one hex string.
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find('"')? + 1;
    let sha: String = after[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .take(12)
        .collect();
    (!sha.is_empty()).then_some(sha)
}
