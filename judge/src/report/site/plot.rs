//! Stage "report": one plot of the site — a metric of a case over the runs, as SVG: each job's
//! value a dot, the run median a line, change points solid orange with their relative change,
//! annotations dashed green (drawn first, and beside a change point at the same run, so they
//! never hide it), y ticks that read distinct ([`super::axis`]) and the x axis labelled with
//! runs' dates and commits. The tooltip data goes in a JSON element beside it.

use std::fmt::Write as _;

use super::axis::{x_labels, y_range, y_ticks};
use super::data::{SiteOptions, SitePlot, short};
use super::script::{esc, json_in_script, percent_encode, safe_href};
use crate::history::series::Annotation;
use crate::report::units::value;
use goldgate_schema::Unit;

const W: f64 = 900.0;
const H: f64 = 260.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 40.0;

/// The plot's `<figure>`: caption, SVG and tooltip data.
pub(crate) fn render_plot(
    k: usize,
    plot: &SitePlot,
    notes: &[Annotation],
    opts: &SiteOptions,
) -> String {
    let unit = Unit::of_metric(&plot.key.metric);
    let n = plot.points.len().max(1);
    let step = (W - LEFT - RIGHT) / n as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let (lo, hi) = y_range(&plot.points, matches!(unit, Unit::Bytes | Unit::Count));
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo));
    let mut svg = format!(
        "<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{} over {} runs\">\n\
         <rect class=\"area\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\"/>\n",
        esc(&plot.key.metric),
        plot.points.len(),
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
    y_axis(&mut svg, unit, lo, hi, &y);
    x_axis(&mut svg, plot, &x);
    marks(&mut svg, plot, notes, &x, step);
    values(&mut svg, plot, &x, &y, step);
    svg.push_str("</svg>\n");
    let changed = !plot.changes.is_empty();
    let flag = plot.changes.last().map_or(String::new(), |cp| {
        format!(
            "<span class=\"flag\">changed {:+.1} % at {}</span>",
            cp.stats.forward_change() * 100.0,
            esc(&short(&plot.points[cp.index].commit))
        )
    });
    format!(
        "<figure class=\"plot\" id=\"plot-{k}\" data-metric=\"{}\" data-changed=\"{}\">\n\
         <figcaption>{}{flag} <span class=\"sub\">{} runs, {} change points</span></figcaption>\n{svg}\
         <script type=\"application/json\" class=\"data\">{}</script>\n</figure>\n",
        esc(&plot.key.metric),
        u8::from(changed),
        esc(&plot.key.metric),
        plot.points.len(),
        plot.changes.len(),
        plot_data(plot, unit, opts)
    )
}

/// The run medians (a line), each job's value (a dot) and, last, each run's hit area: hover
/// and click reach it over everything drawn.
fn values(
    svg: &mut String,
    plot: &SitePlot,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
    step: f64,
) {
    let median: Vec<String> = plot
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.median())))
        .collect();
    let _ = writeln!(
        svg,
        "<polyline class=\"median\" points=\"{}\"/>",
        median.join(" ")
    );
    for (i, p) in plot.points.iter().enumerate() {
        for j in &p.jobs {
            let _ = writeln!(
                svg,
                "<circle class=\"job\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"/>",
                x(i),
                y(j.1)
            );
        }
    }
    for i in 0..plot.points.len() {
        let _ = writeln!(
            svg,
            "<rect class=\"hit\" data-i=\"{i}\" x=\"{:.1}\" y=\"{TOP}\" width=\"{step:.1}\" height=\"{}\"/>",
            x(i) - step / 2.0,
            H - TOP - BOTTOM
        );
    }
}

/// The annotations (dashed green, drawn first; 4 px before a change point at the same run)
/// and the change points (solid orange, on top, labelled with their change).
fn marks(
    svg: &mut String,
    plot: &SitePlot,
    notes: &[Annotation],
    x: &dyn Fn(usize) -> f64,
    step: f64,
) {
    let edge = |i: usize| x(i) - step / 2.0;
    for (i, p) in plot.points.iter().enumerate() {
        let shared = plot.changes.iter().any(|cp| cp.index == i);
        for a in notes
            .iter()
            .filter(|a| a.covers(&plot.key.metric) && a.commit == p.commit)
        {
            let cx = edge(i) - if shared { 4.0 } else { 0.0 };
            let _ = writeln!(
                svg,
                "<line class=\"note\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{}\"><title>baseline: {}</title></line>\
                 <text class=\"note\" x=\"{:.1}\" y=\"{}\">{}</text>",
                H - BOTTOM,
                esc(&a.note),
                cx + 4.0,
                H - BOTTOM - 5.0,
                esc(&a.note)
            );
        }
    }
    for cp in &plot.changes {
        let cx = edge(cp.index);
        let change = cp.stats.forward_change() * 100.0;
        let _ = writeln!(
            svg,
            "<line class=\"change\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{}\"><title>change point: {change:+.1} %</title></line>\
             <text class=\"change\" x=\"{:.1}\" y=\"{}\">{change:+.1} %</text>",
            H - BOTTOM,
            cx + 4.0,
            TOP + 11.0,
        );
    }
}

fn y_axis(svg: &mut String, unit: Unit, lo: f64, hi: f64, y: &dyn Fn(f64) -> f64) {
    for (v, label) in y_ticks(unit, lo, hi) {
        let _ = writeln!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            W - RIGHT,
            y(v),
            y(v),
            LEFT - 6.0,
            y(v) + 4.0,
            esc(&label)
        );
    }
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{}\"/>",
        H - BOTTOM
    );
}

/// The x axis: a few runs named by start date (UTC) and commit.
fn x_axis(svg: &mut String, plot: &SitePlot, x: &dyn Fn(usize) -> f64) {
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
    for (i, date, commit) in x_labels(&plot.points) {
        let _ = writeln!(
            svg,
            "<line class=\"axis\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\"/>\
             <text class=\"xtick\" x=\"{0:.1}\" y=\"{3}\">{4}</text>\
             <text class=\"xcommit\" x=\"{0:.1}\" y=\"{5}\">{6}</text>",
            x(i),
            H - BOTTOM,
            H - BOTTOM + 4.0,
            H - BOTTOM + 16.0,
            esc(&date),
            H - BOTTOM + 29.0,
            esc(&commit)
        );
    }
}

/// The tooltip data of a plot: per run its id, commit, branch, start, median and jobs
/// (`[job id, value, link or null, results path]`), as JSON inert inside a `<script>`.
fn plot_data(plot: &SitePlot, unit: Unit, opts: &SiteOptions) -> String {
    let runs: Vec<serde_json::Value> = plot
        .points
        .iter()
        .map(|p| {
            let jobs: Vec<serde_json::Value> = p
                .jobs
                .iter()
                .map(|(id, v, path)| {
                    serde_json::json!([id, value(unit, *v), link(opts, &p.run_id, path), path])
                })
                .collect();
            serde_json::json!({
                "run": p.run_id, "commit": p.commit, "branch": p.branch,
                "started": p.started_at, "median": value(unit, p.median()), "jobs": jobs,
            })
        })
        .collect();
    json_in_script(&serde_json::Value::Array(runs))
}

/// A job's link: `--run-url` with `{run}` and `{path}` filled in (percent-encoded), when it is
/// a link that may be followed ([`safe_href`]); none without `--run-url` (the stored path is
/// relative to a results folder the site does not have: the tooltip shows it as text).
fn link(opts: &SiteOptions, run: &str, path: &str) -> Option<String> {
    let url = opts
        .run_url
        .as_ref()?
        .replace("{run}", &percent_encode(run, false))
        .replace("{path}", &percent_encode(path, true));
    safe_href(&url).then_some(url)
}
