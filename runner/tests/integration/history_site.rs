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
        goldgate_core::fixtures::prereq::missing(
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
            checkout: None,
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
    chromium_run(browser, profile, &["--dump-dom", url])
}

/// Runs headless chromium with `args` after the flags every load shares; its stdout and log.
fn chromium_run(browser: &Path, profile: &Path, args: &[&str]) -> (String, String) {
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
        .args(args)
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
        index.contains("href=\"cases/gpt_2Fsite-demo.html\""),
        "{index}"
    );
    assert!(
        index.contains("checkpoint-blocking-time at 2026-11-09T08-00-00Z"),
        "{index}"
    );

    let page = site.join("cases/gpt_2Fsite-demo.html");
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
    // The pinned tooltip names the newest run's commit and shows its results' path; without
    // `--run-url` there is nothing to link to, so no link is dead.
    let newest = format!("{:x}{:0>8}", 0xabc0 + 11, 0);
    assert!(dom.contains(&newest[..12]), "{newest}: {dom}");
    assert!(
        dom.contains("<code>2026-11-12T08-00-00Z/gpt/site-demo/default/1/results.json</code>"),
        "{dom}"
    );
    assert!(!dom.contains("href=\"2026-11-12T08-00-00Z"), "{dom}");
}

/// One job's record of `case` in `run`: each metric's value at four steps.
fn job(case: &str, run: &str, day: u32, commit: &str, metrics: &[(&str, f64)]) -> RunRecord {
    let variant = VariantRecord {
        name: "default".into(),
        slug: "default".into(),
        choices: Default::default(),
    };
    let mut r = RunRecord {
        run_id: run.into(),
        started_at: format!("2026-11-{day:02}T08:00:00Z"),
        ..RunRecord::passed(case, variant, 1, "h200")
    };
    r.fingerprint.workload_commit = Some(commit.into());
    for (name, v) in metrics {
        r.metrics.insert(
            (*name).into(),
            StepValues((1..=4).map(|s| (s * 10, *v)).collect()),
        );
    }
    r
}

/// Stores `records` as one run each, as `history ingest` does.
fn put(location: &Location, records: &[RunRecord]) {
    let mut store = Store::open(location, "now").unwrap();
    let ctx = IngestContext {
        commit: None,
        checkout: None,
        branch: "main".into(),
        now: "now".into(),
    };
    for r in records {
        let row = run_row(&[r], &ctx).unwrap();
        let path = format!("{}/{}/results.json", r.run_id, r.rel_dir().display());
        store.ingest(&row, &[job_row(r, &path)]).unwrap();
    }
}

fn site_cmd(db: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    common::cli::goldgate()
        .args(["history", "--db", db.to_str().unwrap(), "site", "--out"])
        .arg(out)
        .args(extra)
        .env_remove("GOLDGATE_HISTORY")
        .output()
        .unwrap()
}

/// What a page's own checks found, run in chromium after the page's script: `check` is a
/// script that sets `document.body.dataset.check` to a JSON text. It is added to a copy of
/// the page (`<name>.check.html` beside it), so the page's own script runs exactly as
/// published. `window.alert` is replaced before anything runs: a script that fires sets
/// `data-alert`.
fn checked(
    browser: &Path,
    profile: &Path,
    page: &Path,
    hash: &str,
    check: &str,
) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let trap = "<script>window.alert = function (m) { document.documentElement.setAttribute('data-alert', String(m)); };</script>";
    let html = html
        .replacen("<head>", &format!("<head>\n{trap}"), 1)
        .replacen("</body>", &format!("<script>{check}</script>\n</body>"), 1);
    let copy = page.with_extension("check.html");
    std::fs::write(&copy, html).unwrap();
    let (dom, log) = chromium_run(
        browser,
        profile,
        &[
            "--window-size=1000,4000",
            "--dump-dom",
            &format!("file://{}{hash}", copy.display()),
        ],
    );
    assert!(
        console_messages(&log).is_empty(),
        "{}: console: {:?}",
        page.display(),
        console_messages(&log)
    );
    assert!(!dom.contains("data-alert=\""), "a script fired: {dom}");
    let at = dom
        .find("data-check=\"")
        .unwrap_or_else(|| panic!("no check result: {dom}"));
    let rest = &dom[at + "data-check=\"".len()..];
    let text = &rest[..rest.find('"').unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Every link of the page (the pinned tooltip's included) as the browser resolved it; a
/// `javascript:` one is clicked, so a script it carries would fire.
const LINKS_CHECK: &str = r#"
var links = Array.prototype.map.call(document.querySelectorAll('a'), function (a) {
  if (a.protocol === 'javascript:') { a.click(); }
  return a.protocol;
});
document.body.dataset.check = JSON.stringify({
  links: links, plots: document.querySelectorAll('figure.plot').length,
  withData: document.body.getAttribute('data-plots-with-data')
});
"#;

#[test]
fn hostile_names_run_no_script_and_every_case_gets_its_own_page() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let location = Location::Sqlite(tmp.path().join("h.sqlite"));
    let long = format!("m/{}", "n".repeat(250));
    let cases = [
        "m/a_b",
        "m/a?b",
        "m/a b",
        "m__a/b",
        "m/ü",
        "m/é",
        &long,
        "x/<!--</script>\u{2028}",
    ];
    let mut records = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let run = if i == 0 {
            "javascript:alert(4)".to_owned()
        } else {
            format!("r{i}")
        };
        records.push(job(case, &run, 1, "c0ffee", &[("lm loss", 1.0 + i as f64)]));
    }
    put(&location, &records);
    let db = tmp.path().join("h.sqlite");
    for (name, extra) in [
        ("plain", &[][..]),
        (
            "linked",
            &["--run-url", "https://ci.example/{run}/{path}"][..],
        ),
    ] {
        let out = tmp.path().join(name);
        let o = site_cmd(&db, &out, extra);
        assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
        let pages: Vec<_> = std::fs::read_dir(out.join("cases")).unwrap().collect();
        assert_eq!(pages.len(), cases.len(), "one page per case");
        let profile = tmp.path().join(format!("profile-{name}"));
        let index = checked(&browser, &profile, &out.join("index.html"), "", LINKS_CHECK);
        assert_eq!(index["links"].as_array().unwrap().len(), cases.len());
        for c in &cases {
            let page = out.join(goldgate_judge::report::site::case_file(c));
            let found = checked(&browser, &profile, &page, "#show=0", LINKS_CHECK);
            assert_eq!(
                found["withData"], "1",
                "{c}: the page's script ran: {found}"
            );
            for p in found["links"].as_array().unwrap() {
                assert!(
                    matches!(p.as_str(), Some("https:" | "file:")),
                    "{c}: a {p} link: {found}"
                );
            }
        }
    }
    // A script URL as --run-url is refused.
    let o = site_cmd(
        &db,
        &tmp.path().join("js"),
        &["--run-url", "javascript:alert({run})"],
    );
    assert_eq!(common::cli::code(&o), 2, "{}", common::cli::text(&o));
}

#[test]
fn a_site_never_writes_through_a_link_in_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let location = Location::Sqlite(tmp.path().join("h.sqlite"));
    put(
        &location,
        &[job("m/c", "r1", 1, "c0ffee", &[("lm loss", 1.0)])],
    );
    let out = tmp.path().join("site");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("cases")).unwrap();
    let o = site_cmd(&tmp.path().join("h.sqlite"), &out, &[]);
    assert_ne!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    assert!(
        common::cli::text(&o).contains("symbolic link"),
        "{}",
        common::cli::text(&o)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// For every plot: its tick labels, whether each sits inside the plot area, for every change
/// point at how many of 9 points along it a pointer finds the line itself (not something drawn
/// over it), and the x axis' labels.
const LAYOUT_CHECK: &str = r#"
document.querySelectorAll('rect.hit').forEach(function (r) { r.style.pointerEvents = 'none'; });
var plots = Array.prototype.map.call(document.querySelectorAll('figure.plot'), function (fig) {
  var area = fig.querySelector('rect.area').getBoundingClientRect();
  var ticks = Array.prototype.map.call(fig.querySelectorAll('text.tick'), function (t) {
    var b = t.getBoundingClientRect();
    var mid = b.top + b.height / 2;
    return { label: t.textContent, inside: mid >= area.top - 1 && mid <= area.bottom + 1 };
  });
  var changes = Array.prototype.map.call(fig.querySelectorAll('line.change'), function (l) {
    var b = l.getBoundingClientRect();
    var x = b.left + b.width / 2, seen = 0;
    for (var k = 1; k <= 9; k++) {
      if (document.elementFromPoint(x, b.top + b.height * k / 10) === l) { seen += 1; }
    }
    return seen;
  });
  var x = Array.prototype.map.call(fig.querySelectorAll('text.xtick, text.xcommit'),
    function (t) { return t.textContent; });
  return { metric: fig.getAttribute('data-metric'), ticks: ticks, changes: changes, x: x };
});
var filter = document.getElementById('filter');
filter.value = 'bytes';
filter.dispatchEvent(new Event('input'));
var shown = document.querySelectorAll('figure.plot:not([hidden])').length;
filter.value = '';
filter.dispatchEvent(new Event('input'));
document.body.dataset.check = JSON.stringify({ plots: plots, shownForBytes: shown });
"#;

#[test]
fn plots_read_truthfully_in_chromium_and_change_points_stay_visible() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let location = Location::Sqlite(tmp.path().join("h.sqlite"));
    // 12 runs: a flat 64 MiB, a constant 5.8e-5, a flat 0, a counter that never moves, saves
    // 40 % slower from run 8 on (an annotation at the same commit), and bytes moving by a few
    // bytes (no change point: below the default minimum change of exact byte counts).
    let records: Vec<RunRecord> = (0..12u32)
        .map(|i| {
            let t = if i >= 8 { 1.4 } else { 1.0 } + f64::from(i % 3) * 0.004;
            job(
                "gpt/layout",
                &format!("2026-11-{:02}T08-00-00Z", i + 1),
                i + 1,
                &format!("{:x}{:0>36}", 0xabc0 + i, i),
                &[
                    ("gpu-peak-bytes", 67_108_864.0),
                    ("grad-norm-tiny", 5.8e-5),
                    ("zero-loss", 0.0),
                    ("num-zeros", 3.0),
                    ("checkpoint-blocking-time", t),
                    (
                        "checkpoint-written-bytes",
                        67_109_735.0 - if i >= 6 { 18.0 } else { 0.0 },
                    ),
                ],
            )
        })
        .collect();
    put(&location, &records);
    {
        let mut store = Store::open(&location, "now").unwrap();
        store
            .annotate(&goldgate_judge::history::series::Annotation {
                case: "gpt/layout".into(),
                metric: "*".into(),
                commit: format!("{:x}{:0>36}", 0xabc0 + 8, 8),
                note: "slower saves, on purpose".into(),
                created_at: "now".into(),
            })
            .unwrap();
    }
    let out = tmp.path().join("site");
    let o = site_cmd(&tmp.path().join("h.sqlite"), &out, &[]);
    assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    let page = out.join(goldgate_judge::report::site::case_file("gpt/layout"));
    let found = checked(
        &browser,
        &tmp.path().join("profile"),
        &page,
        "",
        LAYOUT_CHECK,
    );
    let plots = found["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 6);
    // The one series that changed is the first plot.
    assert_eq!(plots[0]["metric"], "checkpoint-blocking-time", "{found}");
    for p in plots {
        let ticks = p["ticks"].as_array().unwrap();
        let labels: Vec<&str> = ticks.iter().map(|t| t["label"].as_str().unwrap()).collect();
        let distinct: std::collections::BTreeSet<&&str> = labels.iter().collect();
        assert!(labels.len() >= 2, "{}: {labels:?}", p["metric"]);
        assert_eq!(distinct.len(), labels.len(), "{}: {labels:?}", p["metric"]);
        assert!(!labels.contains(&"-0"), "{}: {labels:?}", p["metric"]);
        assert!(
            ticks.iter().all(|t| t["inside"] == true),
            "{}: a tick outside the plot: {ticks:?}",
            p["metric"]
        );
        let x: Vec<&str> = p["x"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            x.contains(&"2026-11-01") && x.contains(&"2026-11-12"),
            "{x:?}"
        );
        assert!(
            x.contains(&"abcb000"),
            "the newest commit names its run: {x:?}"
        );
    }
    // At most the median's step and a job's dot may cross the change point's line.
    let changed = plots[0]["changes"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{found}");
    assert!(
        changed[0].as_u64().unwrap() >= 7,
        "the change point is hidden: {found}"
    );
    let bytes = plots
        .iter()
        .find(|p| p["metric"] == "checkpoint-written-bytes")
        .unwrap();
    assert_eq!(
        bytes["changes"],
        serde_json::json!([]),
        "18 bytes is not a change"
    );
    assert_eq!(
        found["shownForBytes"], 2,
        "the filter keeps the two byte metrics"
    );
    if let Some(dir) = std::env::var_os("GOLDGATE_SITE_SCREENSHOTS") {
        let shot = Path::new(&dir).join("history-site-layout.png");
        chromium_run(
            &browser,
            &tmp.path().join("profile"),
            &[
                "--window-size=1000,1500",
                "--hide-scrollbars",
                &format!("--screenshot={}", shot.display()),
                &format!("file://{}#show=0", page.display()),
            ],
        );
    }
}

/// The index's filter as a person uses it: after each step, the cases shown and, per case, the
/// metric links the filter lists (their text, scheme and target), and the count line.
const INDEX_FILTER_CHECK: &str = r#"
function rows() {
  return Array.prototype.filter.call(document.querySelectorAll('tr.case'), function (r) {
    return !r.hidden;
  }).map(function (r) {
    return {
      'case': r.querySelector('a').textContent,
      hits: Array.prototype.map.call(r.querySelectorAll('div.hits a'), function (a) {
        return { text: a.textContent, protocol: a.protocol, page: a.pathname.split('/').pop(),
                 hash: decodeURIComponent(a.hash), shown: a.getClientRects().length > 0 };
      })
    };
  });
}
var filter = document.getElementById('filter');
var only = document.getElementById('changed-only');
function type(text) { filter.value = text; filter.dispatchEvent(new Event('input')); return rows(); }
var check = { atLoad: rows(), countAtLoad: document.getElementById('shown').textContent };
check.byMetric = type('rare-bytes');
check.byCase = type('case-1');
check.hostile = type('alert');
type('');
only.checked = true;
only.dispatchEvent(new Event('change'));
check.changedOnly = rows();
check.changedMetric = type('iteration');
check.images = document.querySelectorAll('img').length;
document.body.dataset.check = JSON.stringify(check);
"#;

/// A case page opened from one of the index's metric links: the filter's text and the plots
/// it leaves.
const CASE_FILTER_CHECK: &str = r#"
document.body.dataset.check = JSON.stringify({
  value: document.getElementById('filter').value,
  shown: Array.prototype.filter.call(document.querySelectorAll('figure.plot'), function (f) {
    return !f.hidden;
  }).map(function (f) { return f.getAttribute('data-metric'); }),
  count: document.getElementById('shown').textContent
});
"#;

#[test]
fn the_index_filter_finds_a_case_by_name_or_metric_among_many() {
    let Some(browser) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let location = Location::Sqlite(tmp.path().join("h.sqlite"));
    // 30 quiet cases of two runs; three of them with a rare metric, one with two hostile
    // metric names; and `moe/router`, whose iteration time steps up 30 % at run 8 of 12.
    let mut records = Vec::new();
    for i in 0..30u32 {
        let case = format!("gpt/case-{i:02}");
        for day in 1..=2 {
            let mut metrics = vec![("lm loss", 2.0), ("iteration-time", 0.5)];
            if [5, 17, 23].contains(&i) {
                metrics.push(("rare-bytes-written", 4096.0));
            }
            if i == 3 {
                metrics.push(("javascript:alert(5)", 1.0));
                metrics.push(("<img src=x onerror=alert(6)>", 1.0));
            }
            let run = format!("r{i:02}-{day}");
            records.push(job(&case, &run, day, "c0ffee", &metrics));
        }
    }
    for day in 1..=12u32 {
        let t = if day > 8 { 0.65 } else { 0.5 } + f64::from(day % 3) * 0.001;
        let run = format!("router-{day:02}");
        let commit = format!("{:x}{:0>36}", 0xabc0 + day, day);
        records.push(job(
            "moe/router",
            &run,
            day,
            &commit,
            &[("lm loss", 2.0), ("iteration-time", t)],
        ));
    }
    put(&location, &records);
    let out = tmp.path().join("site");
    let o = site_cmd(&tmp.path().join("h.sqlite"), &out, &[]);
    assert_eq!(common::cli::code(&o), 0, "{}", common::cli::text(&o));
    let profile = tmp.path().join("profile");
    let index = out.join("index.html");
    let found = checked(&browser, &profile, &index, "", INDEX_FILTER_CHECK);
    let cases = |step: &str| -> Vec<String> {
        found[step]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["case"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(cases("atLoad").len(), 31, "{found}");
    assert_eq!(found["countAtLoad"], "31 of 31 cases", "{found}");
    // A metric finds the cases that have it, each with a link to its page filtered to it.
    assert_eq!(
        cases("byMetric"),
        ["gpt/case-05", "gpt/case-17", "gpt/case-23"],
        "{found}"
    );
    for row in found["byMetric"].as_array().unwrap() {
        let hits = row["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 1, "{row}");
        assert_eq!(hits[0]["text"], "rare-bytes-written", "{row}");
        assert_eq!(hits[0]["protocol"], "file:", "{row}");
        assert_eq!(hits[0]["hash"], "#filter=rare-bytes-written", "{row}");
        assert_eq!(hits[0]["shown"], true, "{row}");
        let page = goldgate_judge::report::site::case_file(row["case"].as_str().unwrap());
        assert_eq!(
            hits[0]["page"].as_str(),
            page.strip_prefix("cases/"),
            "{row}"
        );
    }
    // A case name finds its cases, and lists no metric.
    let by_case = cases("byCase");
    assert_eq!(by_case.len(), 10, "{found}");
    assert!(
        by_case.iter().all(|c| c.starts_with("gpt/case-1")),
        "{found}"
    );
    assert!(
        found["byCase"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["hits"] == serde_json::json!([])),
        "{found}"
    );
    // Hostile metric names are text: no element made of them, a link only to their case page.
    assert_eq!(cases("hostile"), ["gpt/case-03"], "{found}");
    let hits = found["hostile"][0]["hits"].as_array().unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h["text"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        ["<img src=x onerror=alert(6)>", "javascript:alert(5)"],
        "{found}"
    );
    assert!(hits.iter().all(|h| h["protocol"] == "file:"), "{found}");
    assert_eq!(found["images"], 0, "{found}");
    // `changed only`: the one case with a change point, and its changed metric.
    assert_eq!(cases("changedOnly"), ["moe/router"], "{found}");
    assert_eq!(
        found["changedMetric"][0]["hits"][0]["text"], "iteration-time",
        "{found}"
    );
    // The link opens the case page with the filter filled in and that metric's plot alone.
    let page = out.join(goldgate_judge::report::site::case_file("gpt/case-05"));
    let opened = checked(
        &browser,
        &profile,
        &page,
        "#filter=rare-bytes-written",
        CASE_FILTER_CHECK,
    );
    assert_eq!(opened["value"], "rare-bytes-written", "{opened}");
    assert_eq!(
        opened["shown"],
        serde_json::json!(["rare-bytes-written"]),
        "{opened}"
    );
    assert_eq!(opened["count"], "1 of 3 plots", "{opened}");
    // And the index itself takes `#filter=`, as a shared link would.
    let shared = checked(
        &browser,
        &profile,
        &index,
        "#filter=rare",
        INDEX_FILTER_CHECK,
    );
    assert_eq!(shared["atLoad"].as_array().unwrap().len(), 3, "{shared}");
    assert_eq!(shared["countAtLoad"], "3 of 31 cases", "{shared}");
    if let Some(dir) = std::env::var_os("GOLDGATE_SITE_SCREENSHOTS") {
        let shot = Path::new(&dir).join("history-site-index.png");
        chromium_run(
            &browser,
            &profile,
            &[
                "--window-size=1000,420",
                "--hide-scrollbars",
                &format!("--screenshot={}", shot.display()),
                &format!("file://{}#filter=rare", index.display()),
            ],
        );
    }
}
