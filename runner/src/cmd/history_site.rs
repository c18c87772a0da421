//! `goldgate history site` and the trend lines of `compare`/`comment --trend-db`: what the
//! history store shows people — the static site (pages rendered by `report::site`) and one
//! line per regressed metric against main's recent runs (`report::history::trend_section`).

use std::path::Path;

use super::error::AppError;
use super::history_args::SiteArgs;
use super::history_store::now;
use super::output::outln;
use goldgate_judge::history::ingest;
use goldgate_judge::history::{HistoryError, Location, SeriesKey, Store};
use goldgate_judge::report::site::{SiteCase, SiteOptions, SitePlot};
use goldgate_schema::Exit;

/// Every series of the store, by case, as the site shows them.
fn site_cases(store: &mut Store, a: &SiteArgs) -> Result<Vec<SiteCase>, AppError> {
    use goldgate_judge::history::changes::{Options, detect};
    let mut cases: Vec<SiteCase> = Vec::new();
    for (case, variant, platform, metric) in store.series_names()? {
        if !a.metrics.is_empty() && !a.metrics.contains(&metric) {
            continue;
        }
        let key = SeriesKey {
            case,
            variant,
            platform,
            metric,
            branch: a.branch.clone(),
        };
        let mut points = store.series(&key)?;
        if points.is_empty() {
            continue;
        }
        if let Some(n) = a.last {
            points.drain(..points.len().saturating_sub(n));
        }
        let medians: Vec<f64> = points
            .iter()
            .map(goldgate_judge::history::Point::median)
            .collect();
        let changes = detect(&medians, &Options::for_metric(&key.metric)).points;
        let plot = SitePlot {
            key,
            points,
            changes,
        };
        match cases.last_mut() {
            Some(c) if c.case == plot.key.case => c.plots.push(plot),
            _ => {
                let annotations = store.annotations(&plot.key.case)?;
                cases.push(SiteCase {
                    case: plot.key.case.clone(),
                    plots: vec![plot],
                    annotations,
                });
            }
        }
    }
    Ok(cases)
}

/// Writes one page under `out`: no folder between them, nor the page, may be a symbolic link
/// (a link planted at `OUT/cases` would lead the site anywhere).
fn write_page(out: &Path, path: &Path, html: &str) -> Result<(), HistoryError> {
    goldgate_core::fsio::write_under(out, path, html.as_bytes()).map_err(|source| {
        HistoryError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Writes the site (`goldgate history site`).
pub(crate) fn site(store: &mut Store, a: &SiteArgs) -> Result<Exit, AppError> {
    use goldgate_judge::report::site::{case_file, render_case, render_index};
    if let Some(url) = &a.run_url
        && !goldgate_judge::report::site::safe_href(
            &url.replace("{run}", "r").replace("{path}", "p"),
        )
    {
        return Err(HistoryError::Usage(format!(
            "--run-url `{url}` is not an http(s) URL or a relative path: the site links nothing \
             else"
        ))
        .into());
    }
    let cases = site_cases(store, a)?;
    if cases.is_empty() {
        return Err(
            HistoryError::NotFound(format!("{} holds no passed job", store.location())).into(),
        );
    }
    let opts = SiteOptions {
        run_url: a.run_url.clone(),
        source: store.location().to_string(),
        generated: now(),
    };
    let pages = a.out.join("cases");
    let folder_error = |source| HistoryError::Folder {
        path: pages.clone(),
        source,
    };
    std::fs::create_dir_all(&a.out).map_err(folder_error)?;
    goldgate_core::fsio::check_no_links(&a.out, &pages).map_err(folder_error)?;
    std::fs::create_dir_all(&pages).map_err(folder_error)?;
    for c in &cases {
        let page = a.out.join(case_file(&c.case));
        write_page(&a.out, &page, &render_case(c, &opts))?;
    }
    let index = a.out.join("index.html");
    write_page(&a.out, &index, &render_index(&cases, &opts))?;
    outln!(
        "wrote {} ({} case pages, {} plots)",
        index.display(),
        cases.len(),
        cases.iter().map(|c| c.plots.len()).sum::<usize>()
    );
    Ok(Exit::Pass)
}

/// The trend section of `compare --trend-db` and `comment --trend-db` for `c` (empty without
/// `--trend-db`).
pub(crate) fn trend(
    args: &super::args::TrendArgs,
    c: &goldgate_schema::Comparison,
) -> Result<String, AppError> {
    match &args.trend_db {
        Some(db) => trend_markdown(db, args.trend_runs.max(1), c),
        None => Ok(String::new()),
    }
}

/// The `Trend on main` section for the regressed metrics of `c`: main's last `runs` runs of
/// each in the store `db` (a URL or a file), on the comparison's platform.
fn trend_markdown(
    db: &str,
    runs: usize,
    c: &goldgate_schema::Comparison,
) -> Result<String, AppError> {
    use goldgate_judge::history::changes::{Options, detect};
    use goldgate_schema::{Unit, Verdict};
    let cwd = std::env::current_dir().map_err(|source| super::error::CmdError::Cwd { source })?;
    // A read: a store on a read-only mount is read as it is; only a SQLite file that does not
    // exist yet is created (a first PR before any main run has been stored).
    let location = Location::parse(db, &cwd);
    let mut store = match &location {
        Location::Sqlite(path) if !path.exists() => Store::open(&location, &now())?,
        _ => Store::open_read(&location)?,
    };
    let mut trends = Vec::new();
    for job in &c.jobs {
        for m in job
            .metrics
            .iter()
            .filter(|m| m.verdict == Verdict::Regression)
        {
            let key = SeriesKey {
                case: job.case.clone(),
                variant: job.variant.clone(),
                platform: c.platform.clone(),
                metric: m.metric.clone(),
                branch: Some("main".to_owned()),
            };
            let mut points = store.series(&key)?;
            points.drain(..points.len().saturating_sub(runs));
            let values: Vec<f64> = points.iter().flat_map(|p| p.values()).collect();
            let medians: Vec<f64> = points
                .iter()
                .map(goldgate_judge::history::Point::median)
                .collect();
            let latest_change = detect(&medians, &Options::for_metric(&m.metric))
                .points
                .last()
                .map(|cp| {
                    let p = &points[cp.index];
                    (
                        p.run_id.clone(),
                        p.commit.clone(),
                        cp.stats.forward_change(),
                    )
                });
            trends.push(goldgate_judge::report::history::Trend {
                label: format!("{} @ {}: {}", job.case, job.variant, m.metric),
                unit: Unit::of_metric(&m.metric),
                runs: points.len(),
                lo: values.iter().copied().fold(f64::INFINITY, f64::min),
                hi: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                median: ingest::median(&values).unwrap_or(f64::NAN),
                latest_change,
                now: m.now,
            });
        }
    }
    Ok(goldgate_judge::report::history::trend_section(&trends))
}
