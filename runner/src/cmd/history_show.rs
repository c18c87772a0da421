//! `goldgate history show` and `history changes`: what the store holds, one series of it
//! as a table, and the change points of a stored series or of the series in a JSON file —
//! with the names near a case or metric that names nothing stored.

use std::path::Path;

use super::error::AppError;
use super::history_args::{ChangesArgs, SeriesArgs, ShowArgs};
use super::output::{out, outln};
use goldgate_judge::history::{HistoryError, SeriesKey, Store};
use goldgate_schema::Exit;

pub(crate) fn show(store: &mut Store, a: &ShowArgs) -> Result<Exit, AppError> {
    let (Some(case), Some(metric)) = (&a.case, &a.metric) else {
        let series = store.series_runs()?;
        if series.is_empty() {
            return Err(
                HistoryError::NotFound(format!("{} holds no runs", store.location())).into(),
            );
        }
        if let Some(case) = &a.case {
            check_case(&series, case)?;
        }
        out!(
            "{}",
            goldgate_judge::report::history::stored_table(&series, a.case.as_deref())
        );
        return Ok(Exit::Pass);
    };
    let key = series_key(store, case, &a.series, metric)?;
    let mut points = store.series(&key)?;
    if points.is_empty() {
        return Err(no_points(store, &key)?.into());
    }
    if let Some(n) = a.last {
        points.drain(..points.len().saturating_sub(n));
    }
    let notes = store.annotations(&key.case)?;
    let changes = goldgate_judge::history::changes::of_points(&points, &key.metric);
    out!(
        "{}",
        goldgate_judge::report::history::series_table(&key, &points, &changes, &notes)
    );
    Ok(Exit::Pass)
}

/// Why a series has no points: a metric the case never recorded (with the names near it and
/// every metric it has), else no passed job of it.
fn no_points(store: &mut Store, key: &SeriesKey) -> Result<HistoryError, AppError> {
    let metrics: Vec<String> = store
        .series_names()?
        .into_iter()
        .filter(|(c, v, p, _)| (c, v, p) == (&key.case, &key.variant, &key.platform))
        .map(|(_, _, _, m)| m)
        .collect();
    let of = format!("{} @ {} on {}", key.case, key.variant, key.platform);
    if metrics.contains(&key.metric) {
        return Ok(HistoryError::NotFound(format!(
            "no passed job of {of} recorded {}",
            key.metric
        )));
    }
    let near = goldgate_judge::history::series::near(&key.metric, &metrics);
    let mut text = format!("{of} has no metric `{}`", key.metric);
    if !near.is_empty() {
        text.push_str(&format!("; did you mean {}?", quoted(&near)));
    }
    text.push_str(&format!("\nits metrics: {}", metrics.join(", ")));
    Ok(HistoryError::NotFound(text))
}

/// The series key of `case`, `a` and `metric`; the platform defaults to the only one recorded.
fn series_key(
    store: &mut Store,
    case: &str,
    a: &SeriesArgs,
    metric: &str,
) -> Result<SeriesKey, AppError> {
    let platform = match &a.platform {
        Some(p) => p.clone(),
        None => only_platform(store, case, &a.variant)?,
    };
    Ok(SeriesKey {
        case: case.to_owned(),
        variant: a.variant.clone(),
        platform,
        metric: metric.to_owned(),
        branch: a.branch.clone(),
    })
}

fn only_platform(store: &mut Store, case: &str, variant: &str) -> Result<String, AppError> {
    let series = store.series_runs()?;
    let mut platforms: Vec<&str> = series
        .iter()
        .filter(|((c, v, _, _), _)| c == case && v == variant)
        .map(|((_, _, p, _), _)| p.as_str())
        .collect();
    platforms.dedup();
    match platforms.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => {
            check_case(&series, case)?;
            let mut variants: Vec<&str> = series
                .iter()
                .filter(|(s, _)| s.0 == case)
                .map(|(s, _)| s.1.as_str())
                .collect();
            variants.dedup();
            Err(HistoryError::NotFound(format!(
                "the history store holds no run of {case} @ {variant}; its variants: {}",
                variants.join(", ")
            ))
            .into())
        }
        many => Err(HistoryError::Usage(format!(
            "{case} @ {variant} was recorded on several platforms ({}): name one with --platform",
            many.join(", ")
        ))
        .into()),
    }
}

/// An error when `case` names nothing stored, with the cases near it.
fn check_case(
    series: &[(goldgate_judge::history::SeriesName, i64)],
    case: &str,
) -> Result<(), AppError> {
    let mut cases: Vec<String> = series.iter().map(|(s, _)| s.0.clone()).collect();
    cases.dedup();
    if cases.iter().any(|c| c == case) {
        return Ok(());
    }
    let near = goldgate_judge::history::series::near(case, &cases);
    let mut text = format!("the history store holds no run of {case}");
    if !near.is_empty() {
        text.push_str(&format!("; did you mean {}?", quoted(&near)));
    }
    Err(HistoryError::NotFound(text).into())
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// `history changes --input FILE`: the change points of the series in a JSON file.
pub(crate) fn changes_of_file(path: &Path, a: &ChangesArgs) -> Result<Exit, AppError> {
    let series: Vec<ChangesInput> = input_series(path)?
        .into_iter()
        .map(|(name, values)| ChangesInput {
            name,
            key: None,
            values,
            runs: Vec::new(),
        })
        .collect();
    print_changes(&series, a)
}

/// The series of `--input`: one unnamed array, or named arrays in file order.
fn input_series(path: &Path) -> Result<Vec<(String, Vec<f64>)>, AppError> {
    let bad = |message: String| HistoryError::Usage(format!("{}: {message}", path.display()));
    let text = goldgate_core::fsio::read_text(path, 256 << 20).map_err(|e| bad(e.to_string()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let numbers = |name: &str, v: &serde_json::Value| -> Result<Vec<f64>, HistoryError> {
        let items = v
            .as_array()
            .ok_or_else(|| bad(format!("series `{name}` is not an array of numbers")))?;
        items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .or(x.is_null().then_some(f64::NAN))
                    .ok_or_else(|| bad(format!("series `{name}`, item {i}: `{x}` is not a number")))
            })
            .collect()
    };
    match &json {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(name, v)| Ok((name.clone(), numbers(name, v)?)))
            .collect(),
        other => Ok(vec![("series".to_owned(), numbers("series", other)?)]),
    }
}

/// The JSON line of one series: its change points, the weak ones, the search's own time and,
/// for a stored series, its key and the runs where the change points start.
fn changes_json(
    s: &ChangesInput,
    found: &goldgate_judge::history::changes::Detection,
    seconds: f64,
) -> serde_json::Value {
    let mut line = serde_json::json!({
        "series": s.name,
        "points": s.values.len(),
        "change_points": found.indices(),
        "weak": found.weak.iter().map(|c| c.index).collect::<Vec<_>>(),
        "seconds": seconds,
    });
    if let Some(k) = &s.key {
        line["case"] = k.case.clone().into();
        line["variant"] = k.variant.clone().into();
        line["platform"] = k.platform.clone().into();
        line["metric"] = k.metric.clone().into();
        line["change_runs"] = found
            .points
            .iter()
            .map(|cp| s.runs[cp.index].0.clone())
            .collect::<Vec<_>>()
            .into();
    }
    line
}

/// One series `history changes` searches: from `--input` (a name and values) or the store
/// (its key and each run's id and commit).
struct ChangesInput {
    name: String,
    key: Option<SeriesKey>,
    values: Vec<f64>,
    runs: Vec<(String, String)>,
}

pub(crate) fn changes(store: &mut Store, a: &ChangesArgs) -> Result<Exit, AppError> {
    let (Some(case), Some(metric)) = (&a.case, &a.metric) else {
        return Err(HistoryError::Usage(
            "history changes needs --input FILE, or --case and --metric (`history show` lists \
             what the store holds)"
                .into(),
        )
        .into());
    };
    let key = series_key(store, case, &a.series, metric)?;
    let points = store.series(&key)?;
    if points.is_empty() {
        return Err(no_points(store, &key)?.into());
    }
    let input = ChangesInput {
        name: format!(
            "{} @ {} on {}: {}",
            key.case, key.variant, key.platform, key.metric
        ),
        values: points
            .iter()
            .map(goldgate_judge::history::Point::median)
            .collect(),
        runs: points
            .iter()
            .map(|p| (p.run_id.clone(), p.commit.clone()))
            .collect(),
        key: Some(key),
    };
    print_changes(&[input], a)
}

/// The change points of each series: a table, or with `--json` one JSON line per series (its
/// change points, the weak ones and the search's own time).
fn print_changes(series: &[ChangesInput], a: &ChangesArgs) -> Result<Exit, AppError> {
    use goldgate_judge::history::changes::{Options, detect};
    use goldgate_judge::report::history::ChangesRow;
    if a.window < 2
        || !(0.0..=1.0).contains(&a.max_pvalue)
        || a.min_magnitude.is_some_and(|m| m < 0.0)
    {
        return Err(HistoryError::Usage(
            "--window takes 2 or more, --max-pvalue 0 to 1, --min-magnitude 0 or more".into(),
        )
        .into());
    }
    let mut rows = Vec::new();
    for s in series {
        let defaults = s
            .key
            .as_ref()
            .map_or_else(Options::default, |k| Options::for_metric(&k.metric));
        let opts = Options {
            window: a.window,
            max_pvalue: a.max_pvalue,
            min_magnitude: a.min_magnitude.unwrap_or(defaults.min_magnitude),
        };
        let started = std::time::Instant::now();
        let found = detect(&s.values, &opts);
        let seconds = started.elapsed().as_secs_f64();
        let weak: Vec<usize> = found.weak.iter().map(|c| c.index).collect();
        if a.json {
            outln!("{}", changes_json(s, &found, seconds));
        } else {
            rows.push(ChangesRow {
                series: s.name.clone(),
                points: s.values.len(),
                changes: found
                    .points
                    .iter()
                    .map(|cp| {
                        let at = s.runs.get(cp.index).cloned();
                        (cp.index, at, cp.stats.forward_change())
                    })
                    .collect(),
                weak,
            });
        }
    }
    if !a.json {
        out!("{}", goldgate_judge::report::history::changes_table(&rows));
    }
    Ok(Exit::Pass)
}
