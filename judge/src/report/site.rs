//! Stage "report": `goldgate history site` — a static site of the history store, no server and
//! nothing fetched: an index of cases and one page per case with a plot per metric over the
//! runs (each job's value, the run median, change points, annotations). The SVG and the few
//! lines of script that show a run's commit, values and link on hover or click are written
//! here; no third-party code. Pure: every page is returned as a `String`.

use std::fmt::Write as _;

use crate::history::SeriesKey;
use crate::history::changes::ChangePoint;
use crate::history::series::{Annotation, Point};
use crate::report::units::value;
use goldgate_schema::Unit;

/// One plot: a series, its points and change points.
#[derive(Clone, Debug, PartialEq)]
pub struct SitePlot {
    pub key: SeriesKey,
    pub points: Vec<Point>,
    pub changes: Vec<ChangePoint>,
}

/// One page: every series of a case.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteCase {
    pub case: String,
    pub plots: Vec<SitePlot>,
    pub annotations: Vec<Annotation>,
}

/// What every page shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteOptions {
    /// A run's link: `{run}` is replaced by its run id and `{path}` by its results.json path;
    /// `None` links the results.json path as stored.
    pub run_url: Option<String>,
    /// The store it was made from, as shown (passwords hidden).
    pub source: String,
    /// When it was made (RFC 3339).
    pub generated: String,
}

const W: f64 = 880.0;
const H: f64 = 240.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// The page file of a case: `cases/<case with / as __>.html`, other characters made safe.
pub fn case_file(case: &str) -> String {
    let safe: String = case
        .replace('/', "__")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("cases/{}.html", safe.trim_start_matches('.'))
}

/// `&`, `<`, `>`, `"` and `'` escaped for HTML text and attributes.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(title: &str, body: &str, opts: &SiteOptions) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\
         <footer>goldgate history · {} · generated {}</footer>\n\
         <div id=\"tip\" hidden></div>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        esc(title),
        esc(&opts.source),
        esc(&opts.generated)
    )
}

/// The index: one row per case with its series and the latest change point.
pub fn render_index(cases: &[SiteCase], opts: &SiteOptions) -> String {
    let mut body = String::from("<h1>goldgate history</h1>\n<table class=\"index\">\n");
    body.push_str(
        "<tr><th>case</th><th>series</th><th>runs</th><th>latest change point</th></tr>\n",
    );
    for c in cases {
        let runs = c.plots.iter().map(|p| p.points.len()).max().unwrap_or(0);
        let latest = c
            .plots
            .iter()
            .filter_map(|p| p.changes.last().map(|cp| (p, cp)))
            .max_by(|a, b| {
                a.0.points[a.1.index]
                    .started_at
                    .cmp(&b.0.points[b.1.index].started_at)
            })
            .map_or_else(|| "none".to_owned(), |(p, cp)| change_text(p, cp));
        let _ = writeln!(
            body,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{runs}</td><td>{}</td></tr>",
            esc(&case_file(&c.case)),
            esc(&c.case),
            c.plots.len(),
            esc(&latest)
        );
    }
    body.push_str("</table>\n");
    page("goldgate history", &body, opts)
}

fn change_text(p: &SitePlot, cp: &ChangePoint) -> String {
    let at = &p.points[cp.index];
    format!(
        "{} at {} ({}): {:+.1} %",
        p.key.metric,
        at.run_id,
        short(&at.commit),
        cp.stats.forward_change() * 100.0
    )
}

fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}

/// A case's page: its plots grouped by variant and platform.
pub fn render_case(c: &SiteCase, opts: &SiteOptions) -> String {
    let mut body = format!(
        "<p class=\"nav\"><a href=\"../index.html\">all cases</a></p>\n<h1>{}</h1>\n",
        esc(&c.case)
    );
    let mut group = String::new();
    for (k, plot) in c.plots.iter().enumerate() {
        let g = format!("{} on {}", plot.key.variant, plot.key.platform);
        if g != group {
            let _ = writeln!(body, "<h2>{}</h2>", esc(&g));
            group = g;
        }
        body.push_str(&render_plot(k, plot, &c.annotations, opts));
    }
    page(&format!("{} · goldgate history", c.case), &body, opts)
}

/// The y range of every job value, padded by 5 % (a flat series gets ±1 % or ±1).
fn y_range(points: &[Point]) -> (f64, f64) {
    let values = points.iter().flat_map(|p| p.jobs.iter().map(|j| j.1));
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        (lo.abs() * 0.01).max(1.0)
    };
    (lo - pad, hi + pad)
}

fn render_plot(k: usize, plot: &SitePlot, notes: &[Annotation], opts: &SiteOptions) -> String {
    let unit = Unit::of_metric(&plot.key.metric);
    let n = plot.points.len().max(1);
    let step = (W - LEFT - RIGHT) / n as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let (lo, hi) = y_range(&plot.points);
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo));
    let mut svg = format!(
        "<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{} over {} runs\">\n",
        esc(&plot.key.metric),
        plot.points.len()
    );
    axes(&mut svg, unit, lo, hi, &y);
    lines(&mut svg, plot, notes, &x, step);
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
        let _ = writeln!(
            svg,
            "<rect class=\"hit\" data-i=\"{i}\" x=\"{:.1}\" y=\"{TOP}\" width=\"{step:.1}\" height=\"{}\"/>",
            x(i) - step / 2.0,
            H - TOP - BOTTOM
        );
    }
    svg.push_str("</svg>\n");
    format!(
        "<figure class=\"plot\" id=\"plot-{k}\">\n<figcaption>{} <span class=\"sub\">{} runs, {} change points</span></figcaption>\n{svg}\
         <script type=\"application/json\" class=\"data\">{}</script>\n</figure>\n",
        esc(&plot.key.metric),
        plot.points.len(),
        plot.changes.len(),
        plot_data(plot, unit, opts)
    )
}

/// The change points (dashed) and the annotations (a line and its note) of a plot.
fn lines(
    svg: &mut String,
    plot: &SitePlot,
    notes: &[Annotation],
    x: &dyn Fn(usize) -> f64,
    step: f64,
) {
    for cp in &plot.changes {
        let cx = x(cp.index) - step / 2.0;
        let _ = writeln!(
            svg,
            "<line class=\"change\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{}\"><title>change point: {:+.1} %</title></line>",
            H - BOTTOM,
            cp.stats.forward_change() * 100.0
        );
    }
    for (i, p) in plot.points.iter().enumerate() {
        for a in notes
            .iter()
            .filter(|a| a.covers(&plot.key.metric) && a.commit == p.commit)
        {
            let cx = x(i) - step / 2.0;
            let _ = writeln!(
                svg,
                "<line class=\"note\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{}\"><title>baseline: {}</title></line>\
                 <text class=\"note\" x=\"{:.1}\" y=\"{}\">{}</text>",
                H - BOTTOM,
                esc(&a.note),
                cx + 3.0,
                TOP + 10.0,
                esc(&a.note)
            );
        }
    }
}

fn axes(svg: &mut String, unit: Unit, lo: f64, hi: f64, y: &dyn Fn(f64) -> f64) {
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
    for t in 0..=4 {
        let v = lo + (hi - lo) * f64::from(t) / 4.0;
        let _ = writeln!(
            svg,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            LEFT - 6.0,
            y(v) + 4.0,
            esc(&value(unit, v))
        );
    }
    let _ = writeln!(
        svg,
        "<text class=\"xlabel\" x=\"{:.1}\" y=\"{}\">runs, oldest first</text>",
        (LEFT + W - RIGHT) / 2.0,
        H - 8.0
    );
}

/// The tooltip data of a plot: per run its id, commit, branch, start, median and jobs, as
/// JSON safe inside a `<script>` element.
fn plot_data(plot: &SitePlot, unit: Unit, opts: &SiteOptions) -> String {
    let runs: Vec<serde_json::Value> = plot
        .points
        .iter()
        .map(|p| {
            let jobs: Vec<serde_json::Value> = p
                .jobs
                .iter()
                .map(|(id, v, path)| {
                    serde_json::json!([id, value(unit, *v), link(opts, &p.run_id, path)])
                })
                .collect();
            serde_json::json!({
                "run": p.run_id, "commit": p.commit, "branch": p.branch,
                "started": p.started_at, "median": value(unit, p.median()), "jobs": jobs,
            })
        })
        .collect();
    serde_json::Value::Array(runs)
        .to_string()
        .replace("</", "<\\/")
        .replace("<!--", "<\\!--")
}

fn link(opts: &SiteOptions, run: &str, path: &str) -> String {
    match &opts.run_url {
        Some(t) => t.replace("{run}", run).replace("{path}", path),
        None => path.to_owned(),
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:940px;color:#222}\
h1{font-size:22px}h2{font-size:16px;margin-top:28px;color:#555}\
table.index{border-collapse:collapse;width:100%}table.index td,table.index th{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left}\
figure.plot{margin:12px 0 20px}figcaption{font-weight:600}.sub{font-weight:400;color:#777;margin-left:8px}\
svg{width:100%;height:auto;background:#fafafa;border:1px solid #eee}\
.axis{stroke:#999}.tick{font-size:11px;fill:#666;text-anchor:end}.xlabel{font-size:11px;fill:#888;text-anchor:middle}\
circle.job{fill:#4a7fc1;fill-opacity:.55}polyline.median{fill:none;stroke:#c14a4a;stroke-width:2}\
line.change{stroke:#e08a00;stroke-width:2;stroke-dasharray:6 3}line.note{stroke:#2a9d5c;stroke-width:2}\
text.note{font-size:11px;fill:#2a9d5c}rect.hit{fill:transparent;cursor:pointer}rect.hit:hover{fill:#0001}\
#tip{position:absolute;background:#fff;border:1px solid #bbb;box-shadow:0 2px 6px #0002;padding:6px 10px;font-size:12px;max-width:420px}\
#tip a{color:#2458a6}footer{margin-top:32px;color:#999;font-size:12px}";

/// Hover shows a run, a click pins it (so its links can be followed); the body records how
/// many plots have data (`data-plots-with-data`) for the browser test.
const SCRIPT: &str = r#"
(function () {
  var tip = document.getElementById('tip');
  var pinned = false;
  var withData = 0;
  function add(parent, tag, text) {
    var e = document.createElement(tag);
    if (text !== undefined) { e.textContent = text; }
    parent.appendChild(e);
    return e;
  }
  function show(run, event, pin) {
    if (pinned && !pin) { return; }
    pinned = pin;
    tip.textContent = '';
    add(tip, 'b', run.commit.slice(0, 12) + ' (' + run.branch + ')');
    add(tip, 'div', run.run + ', ' + run.started);
    add(tip, 'div', 'median ' + run.median);
    var list = add(tip, 'ul');
    run.jobs.forEach(function (job) {
      var li = add(list, 'li');
      var a = add(li, 'a', job[0] + ': ' + job[1]);
      a.href = job[2];
    });
    var left = Math.min(event.pageX + 12, window.scrollX + window.innerWidth - 440);
    tip.style.left = Math.max(left, 0) + 'px';
    tip.style.top = (event.pageY + 12) + 'px';
    tip.hidden = false;
  }
  document.querySelectorAll('figure.plot').forEach(function (fig) {
    var data = JSON.parse(fig.querySelector('script.data').textContent);
    if (data.length > 0 && fig.querySelectorAll('circle.job').length > 0) { withData += 1; }
    fig.querySelectorAll('rect.hit').forEach(function (rect) {
      var run = data[Number(rect.getAttribute('data-i'))];
      rect.addEventListener('mouseenter', function (e) { show(run, e, false); });
      rect.addEventListener('click', function (e) { show(run, e, true); e.stopPropagation(); });
    });
    fig.addEventListener('mouseleave', function () { if (!pinned) { tip.hidden = true; } });
  });
  document.addEventListener('click', function (e) {
    if (!tip.contains(e.target)) { pinned = false; tip.hidden = true; }
  });
  document.body.setAttribute('data-plots-with-data', String(withData));
  // `#show=K`: pin the tooltip of plot K's newest run (a link can point at it; the browser
  // test and the screenshot use it).
  var m = /^#show=(\d+)$/.exec(location.hash);
  var figs = document.querySelectorAll('figure.plot');
  if (m && figs[Number(m[1])]) {
    var hits = figs[Number(m[1])].querySelectorAll('rect.hit');
    var last = hits[hits.length - 1];
    if (last) {
      var box = last.getBoundingClientRect();
      last.dispatchEvent(new MouseEvent('click', {
        bubbles: true, clientX: box.left, clientY: box.top + box.height / 2
      }));
    }
  }
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::changes::Stats;

    fn point(i: usize, v: &[f64]) -> Point {
        Point {
            run_id: format!("run-{i}"),
            commit: format!("{i}abcdef{i:0>33}"),
            branch: "main".into(),
            started_at: format!("2026-12-{:02}T00:00:00Z", i + 1),
            jobs: v
                .iter()
                .enumerate()
                .map(|(j, x)| {
                    (
                        format!("m/c@default#{}", j + 1),
                        *x,
                        format!("run-{i}/results.json"),
                    )
                })
                .collect(),
        }
    }

    fn case() -> SiteCase {
        let points = vec![
            point(0, &[1.0, 1.1]),
            point(1, &[1.05]),
            point(2, &[2.0, 2.1]),
        ];
        let stats = Stats {
            mean_before: 1.05,
            mean_after: 2.05,
            std_before: 0.0,
            std_after: 0.0,
            pvalue: 0.0,
        };
        SiteCase {
            case: "gpt/<small>".into(),
            plots: vec![SitePlot {
                key: SeriesKey {
                    case: "gpt/<small>".into(),
                    variant: "default".into(),
                    platform: "h200".into(),
                    metric: "checkpoint-blocking-time".into(),
                    branch: Some("main".into()),
                },
                changes: vec![ChangePoint {
                    index: 2,
                    qhat: 1.0,
                    stats,
                }],
                points,
            }],
            annotations: vec![Annotation {
                case: "gpt/<small>".into(),
                metric: "*".into(),
                commit: point(2, &[]).commit,
                note: "bigger </script> saves".into(),
                created_at: String::new(),
            }],
        }
    }

    fn opts() -> SiteOptions {
        SiteOptions {
            run_url: Some("https://ci.example/runs/{run}".into()),
            source: "h.sqlite".into(),
            generated: "now".into(),
        }
    }

    #[test]
    fn a_case_page_has_every_job_the_median_the_change_point_and_the_annotation() {
        let html = render_case(&case(), &opts());
        assert_eq!(html.matches("<circle class=\"job\"").count(), 5);
        assert_eq!(html.matches("<rect class=\"hit\"").count(), 3);
        assert!(html.contains("<polyline class=\"median\""));
        assert!(html.contains("change point: +95.2 %"));
        // Text from the store never closes the script or opens a tag.
        assert!(html.contains("bigger &lt;/script&gt; saves"));
        assert!(html.contains("gpt/&lt;small&gt;"));
        assert!(html.contains("https://ci.example/runs/run-1"));
    }

    #[test]
    fn the_index_links_each_case_page_and_names_the_latest_change() {
        let html = render_index(&[case()], &opts());
        assert!(html.contains("href=\"cases/gpt___small_.html\""), "{html}");
        assert!(html.contains("checkpoint-blocking-time at run-2"));
        assert_eq!(case_file("gpt/<small>"), "cases/gpt___small_.html");
        assert_eq!(case_file("../x"), "cases/__x.html");
    }
}
