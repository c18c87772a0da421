//! Stage "report": the site's pages. The index lists every case with its series, runs and
//! latest change point; a case's page shows what changed first — a list of the series with a
//! change point, then the default variant's plots before the other variants', and in each
//! group the plots with a change point before the rest — with a metric filter. Pure: every page
//! is returned as a `String`; names from records reach the page only escaped.

use std::fmt::Write as _;

use super::data::{SiteCase, SiteOptions, SitePlot, short};
use super::file::case_file;
use super::plot::render_plot;
use super::script::{SCRIPT, STYLE, esc, json_in_script};
use crate::history::changes::ChangePoint;
use crate::history::series::Point;

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

/// The index: the filter, then one row per case with its series and the latest change point.
/// Each case's metric names (and those with a change point) are JSON beside the table, so the
/// filter finds a case by a metric it has and links that metric's plots on its page.
pub fn render_index(cases: &[SiteCase], opts: &SiteOptions) -> String {
    let mut body = String::from("<h1>goldgate history</h1>\n");
    body.push_str(&controls("filter cases and metrics"));
    body.push_str("<table class=\"index\">\n");
    body.push_str(
        "<tr><th>case</th><th>series</th><th>runs</th><th>latest change point</th></tr>\n",
    );
    for c in cases {
        let runs = c.plots.iter().map(|p| p.points.len()).max().unwrap_or(0);
        let latest =
            latest_change(&c.plots).map_or_else(|| "none".to_owned(), |(p, cp)| change_text(p, cp));
        let _ = writeln!(
            body,
            "<tr class=\"case\"><td><a href=\"{}\">{}</a><div class=\"hits\" hidden></div></td>\
             <td>{}</td><td>{runs}</td><td>{}</td></tr>",
            esc(&case_file(&c.case)),
            esc(&c.case),
            c.plots.len(),
            esc(&latest)
        );
    }
    body.push_str("</table>\n");
    let _ = writeln!(
        body,
        "<script type=\"application/json\" id=\"cases\">{}</script>",
        index_data(cases)
    );
    page("goldgate history", &body, opts)
}

/// Per case, in the table's order: its name, its metrics and the metrics with a change point
/// (each once, by name, over every variant and platform).
fn index_data(cases: &[SiteCase]) -> String {
    let rows: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            let names = |changed: bool| -> std::collections::BTreeSet<&str> {
                c.plots
                    .iter()
                    .filter(|p| !changed || !p.changes.is_empty())
                    .map(|p| p.key.metric.as_str())
                    .collect()
            };
            serde_json::json!({"case": c.case, "metrics": names(false), "changed": names(true)})
        })
        .collect();
    json_in_script(&serde_json::Value::Array(rows))
}

/// The filter box, `changed only` and the count of what is shown.
fn controls(placeholder: &str) -> String {
    format!(
        "<p class=\"controls\"><input type=\"search\" id=\"filter\" placeholder=\"{placeholder}\" \
         aria-label=\"{placeholder}\"><label><input type=\"checkbox\" id=\"changed-only\"> changed \
         only</label><span id=\"shown\"></span></p>\n"
    )
}

/// The plot whose last change point is the latest run (by start), and that change point.
fn latest_change(plots: &[SitePlot]) -> Option<(&SitePlot, &ChangePoint)> {
    plots
        .iter()
        .filter_map(|p| p.changes.last().map(|cp| (p, cp)))
        .max_by(|a, b| {
            let at = |(p, cp): &(&SitePlot, &ChangePoint)| start(&p.points[cp.index]);
            at(a).cmp(&at(b))
        })
}

/// A run's start as an instant (a start that is not a time sorts first).
fn start(p: &Point) -> Option<jiff::Timestamp> {
    p.started_at.parse().ok()
}

fn change_text(p: &SitePlot, cp: &ChangePoint) -> String {
    let at = &p.points[cp.index];
    let variant = if p.key.variant == "default" {
        String::new()
    } else {
        format!(" @ {}", p.key.variant)
    };
    format!(
        "{}{variant} at {} ({}): {:+.1} %",
        p.key.metric,
        at.run_id,
        short(&at.commit),
        cp.stats.forward_change() * 100.0
    )
}

/// The plots in reading order: the default variant first (then the others by name), by
/// platform, and in each group the plots with a change point first, newest change first.
fn reading_order(plots: &[SitePlot]) -> Vec<&SitePlot> {
    let mut v: Vec<&SitePlot> = plots.iter().collect();
    v.sort_by(|a, b| {
        let group = |p: &SitePlot| (p.key.variant != "default", p.key.variant.clone());
        let change =
            |p: &SitePlot| std::cmp::Reverse(p.changes.last().map(|cp| start(&p.points[cp.index])));
        group(a)
            .cmp(&group(b))
            .then_with(|| a.key.platform.cmp(&b.key.platform))
            .then_with(|| a.changes.is_empty().cmp(&b.changes.is_empty()))
            .then_with(|| change(a).cmp(&change(b)))
            .then_with(|| a.key.metric.cmp(&b.key.metric))
    });
    v
}

/// The line above the plots: how many series changed, each linked to its plot.
fn changed_line(plots: &[&SitePlot]) -> String {
    let links: Vec<String> = plots
        .iter()
        .enumerate()
        .filter_map(|(k, p)| {
            let cp = p.changes.last()?;
            Some(format!(
                "<a href=\"#plot-{k}\">{}</a>",
                esc(&change_text(p, cp))
            ))
        })
        .collect();
    if links.is_empty() {
        return format!(
            "<p class=\"summary\">No change point in its {} series.</p>\n",
            plots.len()
        );
    }
    format!(
        "<p class=\"changed\">{} of {} series changed: {}</p>\n",
        links.len(),
        plots.len(),
        links.join(" · ")
    )
}

/// A case's page: what changed, the filter, and its plots grouped by variant and platform.
pub fn render_case(c: &SiteCase, opts: &SiteOptions) -> String {
    let plots = reading_order(&c.plots);
    let mut body = format!(
        "<p class=\"nav\"><a href=\"../index.html\">all cases</a></p>\n<h1>{}</h1>\n",
        esc(&c.case)
    );
    body.push_str(&changed_line(&plots));
    body.push_str(&controls("filter metrics"));
    body.push_str(
        "<p class=\"legend\">\
         <span class=\"sw\" style=\"border-top:6px dotted #4a7fc1\"></span>a job\
         <span class=\"sw\" style=\"border-top:2px solid #c14a4a\"></span>run median\
         <span class=\"sw\" style=\"border-top:3px solid #e08a00\"></span>change point\
         <span class=\"sw\" style=\"border-top:2px dashed #2a9d5c\"></span>annotation (new baseline)\
         · x: runs oldest first, by start date (UTC) and commit</p>\n",
    );
    let mut group = String::new();
    for (k, plot) in plots.iter().enumerate() {
        let g = format!("{} on {}", plot.key.variant, plot.key.platform);
        if g != group {
            if !group.is_empty() {
                body.push_str("</section>\n");
            }
            let _ = writeln!(body, "<section class=\"group\">\n<h2>{}</h2>", esc(&g));
            group = g;
        }
        body.push_str(&render_plot(k, plot, &c.annotations, opts));
    }
    if !group.is_empty() {
        body.push_str("</section>\n");
    }
    page(&format!("{} · goldgate history", c.case), &body, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::SeriesKey;
    use crate::history::changes::Stats;
    use crate::history::series::Annotation;

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

    fn plot(metric: &str, variant: &str, changed: bool) -> SitePlot {
        let stats = Stats {
            mean_before: 1.05,
            mean_after: 2.05,
            std_before: 0.0,
            std_after: 0.0,
            pvalue: 0.0,
        };
        SitePlot {
            key: SeriesKey {
                case: "gpt/<small>".into(),
                variant: variant.into(),
                platform: "h200".into(),
                metric: metric.into(),
                branch: Some("main".into()),
            },
            changes: if changed {
                vec![ChangePoint {
                    index: 2,
                    qhat: 1.0,
                    stats,
                }]
            } else {
                Vec::new()
            },
            points: vec![
                point(0, &[1.0, 1.1]),
                point(1, &[1.05]),
                point(2, &[2.0, 2.1]),
            ],
        }
    }

    fn case() -> SiteCase {
        SiteCase {
            case: "gpt/<small>".into(),
            plots: vec![plot("checkpoint-blocking-time", "default", true)],
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
        // The change point is drawn after the annotation at the same run, and beside it.
        let note = html.find("<line class=\"note\"").unwrap();
        let change = html.find("<line class=\"change\"").unwrap();
        assert!(note < change);
    }

    #[test]
    fn changed_metrics_and_the_default_variant_come_first() {
        let c = SiteCase {
            plots: vec![
                plot("a-unchanged", "async", false),
                plot("b-changed", "async", true),
                plot("a-unchanged", "default", false),
                plot("z-changed", "default", true),
            ],
            ..case()
        };
        let html = render_case(&c, &opts());
        let at = |s: &str| html.find(s).unwrap();
        let order = [
            "data-metric=\"z-changed\"",
            "data-metric=\"a-unchanged\"",
            "data-metric=\"b-changed\"",
        ];
        assert!(
            at(order[0]) < at(order[1]) && at(order[1]) < at(order[2]),
            "{html}"
        );
        assert!(html.contains("2 of 4 series changed"), "{html}");
        assert!(html.contains("id=\"filter\""));
    }

    #[test]
    fn without_a_run_url_no_job_is_a_dead_link() {
        let html = render_case(
            &case(),
            &SiteOptions {
                run_url: None,
                ..opts()
            },
        );
        assert!(html.contains(r#""run-2/results.json"]"#), "{html}");
        assert!(html.contains(r#"null,"run-2/results.json""#), "{html}");
    }

    #[test]
    fn the_index_links_each_case_page_and_names_the_latest_change() {
        let html = render_index(&[case()], &opts());
        assert!(
            html.contains("href=\"cases/gpt_2F_3Csmall_3E.html\""),
            "{html}"
        );
        assert!(html.contains("checkpoint-blocking-time at run-2"));
    }

    #[test]
    fn the_index_has_a_filter_and_each_cases_metrics_as_inert_json() {
        let c = SiteCase {
            plots: vec![
                plot("checkpoint-blocking-time", "default", true),
                plot("checkpoint-blocking-time", "async", false),
                plot("</script><!--x", "default", false),
            ],
            ..case()
        };
        let html = render_index(&[c], &opts());
        assert!(html.contains("id=\"filter\""), "{html}");
        assert!(html.contains("<tr class=\"case\">"), "{html}");
        let at = html
            .find("<script type=\"application/json\" id=\"cases\">")
            .unwrap();
        let rest = &html[at..];
        let json = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
        // Each metric once, over variants; a name that would end the element stays inside it.
        let data: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            data,
            serde_json::json!([{
                "case": "gpt/<small>",
                "metrics": ["</script><!--x", "checkpoint-blocking-time"],
                "changed": ["checkpoint-blocking-time"],
            }])
        );
        assert!(!json.contains('<'), "{json}");
    }

    #[test]
    fn the_index_renders_as_its_snapshot() {
        let c = SiteCase {
            plots: vec![
                plot("checkpoint-blocking-time", "default", true),
                plot("lm loss", "async", false),
            ],
            ..case()
        };
        let other = SiteCase {
            case: "moe/quiet".into(),
            plots: vec![plot("lm loss", "default", false)],
            annotations: Vec::new(),
        };
        let html = render_index(&[c, other], &opts());
        let body = &html[html.find("<body>").unwrap()..html.find("<div id=\"tip\"").unwrap()];
        insta::assert_snapshot!(body);
    }

    #[test]
    fn a_case_page_renders_as_its_snapshot() {
        let c = SiteCase {
            plots: vec![
                plot("checkpoint-blocking-time", "default", true),
                plot("lm loss", "async", false),
            ],
            ..case()
        };
        let html = render_case(&c, &opts());
        // The page's body without the shared style and script.
        let body = &html[html.find("<body>").unwrap()..html.find("<div id=\"tip\"").unwrap()];
        insta::assert_snapshot!(body);
    }
}
