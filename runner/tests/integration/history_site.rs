//! `goldgate history site` in a real browser: Debian's chromium, headless, loads the index
//! and a case page from disk; the pages must load without a console message or script error,
//! every plot must have data, and the tooltip (pinned with `#show=0`) must name the newest
//! run's commit with a link. The browser is `$GOLDGATE_CHROMIUM`, else `chromium` on PATH;
//! without one the test prints `skipped:` — except under `CI=true`, where it fails.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use goldgate_judge::history::ingest::{IngestContext, job_row, run_row};
use goldgate_judge::history::{Location, Store};
use goldgate_schema::{RunRecord, StepValues, VariantRecord};

fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("GOLDGATE_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("chromium"))
                    .find(|p| p.is_file())
            })
        });
    if found.is_none() {
        common::prereq::missing(
            "no chromium (.ci/run installs Debian's: apt-get install -y chromium; or GOLDGATE_CHROMIUM)",
        );
    }
    found
}

/// A store of 12 runs of one case (2 jobs each), checkpoint time stepping up 40 % at run 8.
fn store(dir: &Path) -> Location {
    let location = Location::Sqlite(dir.join("history.sqlite"));
    let mut store = Store::open(&location, "now").unwrap();
    let variant = VariantRecord {
        name: "default".into(),
        slug: "default".into(),
        choices: Default::default(),
    };
    for i in 0..12u32 {
        let run = format!("2026-11-{:02}T08-00-00Z", i + 1);
        let records: Vec<RunRecord> = (1..=2)
            .map(|rep| {
                let t = if i >= 8 { 1.4 } else { 1.0 }
                    + f64::from(rep) * 0.01
                    + f64::from(i % 3) * 0.005;
                let mut r = RunRecord {
                    run_id: run.clone(),
                    started_at: format!("2026-11-{:02}T08:00:00Z", i + 1),
                    ..RunRecord::passed("gpt/site-demo", variant.clone(), rep, "h200")
                };
                r.fingerprint.workload_commit = Some(format!("{:x}{:0>36}", 0xabc0 + i, i));
                r.metrics.insert(
                    "checkpoint-blocking-time".into(),
                    StepValues((1..=4).map(|s| (s * 10, t)).collect()),
                );
                r.metrics.insert(
                    "lm loss".into(),
                    StepValues((1..=4).map(|s| (s * 10, 10.0 - s as f64 * 0.1)).collect()),
                );
                r
            })
            .collect();
        let refs: Vec<&RunRecord> = records.iter().collect();
        let ctx = IngestContext {
            commit: None,
            branch: "main".into(),
            now: "now".into(),
        };
        let rows: Vec<_> = records
            .iter()
            .map(|r| job_row(r, &format!("{run}/{}/results.json", r.rel_dir().display())))
            .collect();
        store.ingest(&run_row(&refs, &ctx).unwrap(), &rows).unwrap();
    }
    location
}

/// chromium's DOM after the page's scripts ran, and its log.
fn load(browser: &Path, profile: &Path, url: &str) -> (String, String) {
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // Shared memory in /tmp, not /dev/shm: tests that assert on /dev/shm usage run
            // meanwhile (`common::shm`).
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", url])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn console_messages(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn the_site_loads_in_chromium_with_data_and_no_console_errors() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let location = store(tmp.path());
    let Location::Sqlite(db) = &location else {
        unreachable!()
    };
    let site = tmp.path().join("site");
    let o = common::cli::goldgate()
        .args([
            "history",
            "--db",
            db.to_str().unwrap(),
            "site",
            "--out",
            site.to_str().unwrap(),
        ])
        .env_remove("GOLDGATE_HISTORY")
        .output()
        .unwrap();
    assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    assert!(
        common::cli::text(&o).contains("(1 case pages, 2 plots)"),
        "{}",
        common::cli::text(&o)
    );

    let profile = tmp.path().join("profile");
    let (index, log) = load(
        &browser,
        &profile,
        &format!("file://{}", site.join("index.html").display()),
    );
    assert!(
        console_messages(&log).is_empty(),
        "console: {:?}",
        console_messages(&log)
    );
    assert!(
        index.contains("href=\"cases/gpt__site-demo.html\""),
        "{index}"
    );
    assert!(
        index.contains("checkpoint-blocking-time at 2026-11-09T08-00-00Z"),
        "{index}"
    );

    let page = site.join("cases/gpt__site-demo.html");
    let (dom, log) = load(
        &browser,
        &profile,
        &format!("file://{}#show=0", page.display()),
    );
    assert!(
        console_messages(&log).is_empty(),
        "console: {:?}",
        console_messages(&log)
    );
    assert!(dom.contains("data-plots-with-data=\"2\""), "{dom}");
    assert_eq!(
        dom.matches("class=\"job\"").count(),
        2 * 12 * 2,
        "every job of both plots"
    );
    assert!(
        dom.contains("class=\"change\""),
        "the step at run 8 is a change point"
    );
    // The pinned tooltip names the newest run's commit and links its results.
    let newest = format!("{:x}{:0>8}", 0xabc0 + 11, 0);
    assert!(dom.contains(&newest[..12]), "{newest}: {dom}");
    assert!(
        dom.contains("href=\"2026-11-12T08-00-00Z/gpt/site-demo/default/1/results.json\""),
        "{dom}"
    );
}
