//! Stage "report": the SVG memory timeline of one job — GPU used memory, host RSS and
//! `/dev/shm` over time, checkpoint saves as shaded spans, axes in GiB or MiB and seconds, and a
//! legend.
//!
//! Drawn with plotters' SVG backend without its `ttf` feature (fonts would pull in C
//! libraries). Without it plotters lays text out with a fixed per-character width estimate;
//! that is enough here because the SVG viewer renders the text itself (`font-family` is
//! `sans-serif`) and the labels are short and left/centre aligned with margins to spare.

use plotters::prelude::*;

use crate::report::error::ReportError;
use goldgate_schema::{RunRecord, Timeline};

const WIDTH: u32 = 960;
const HEIGHT: u32 = 440;
/// Width of the legend column right of the plot.
const LEGEND_WIDTH: u32 = 200;
/// Font size of the legend (plotters scales it to about 0.8 of this in the SVG).
const LEGEND_FONT: u32 = 15;
/// Characters of a legend label: what fits beside its swatch at [`LEGEND_FONT`], with a
/// wide sans-serif's 0.6 em per character.
const LEGEND_CHARS: usize = 19;

const GPU: RGBColor = RGBColor(31, 119, 180);
const HOST: RGBColor = RGBColor(44, 160, 44);
const SHM: RGBColor = RGBColor(148, 103, 189);
const HOST_RSS: RGBColor = RGBColor(188, 189, 34);
const SAVE: RGBColor = RGBColor(255, 127, 14);

/// `<run id>__<case slug>__<variant slug>__<repeat>.svg`: the run and the job, so the timelines
/// of several runs (`report --all-runs`) never overwrite each other. Each slug replaces `/`
/// with `-` and every character outside `[A-Za-z0-9._+-]` with `_`, so the name is one path
/// component.
pub fn file_name(r: &RunRecord) -> String {
    let slug = |s: &str| -> String {
        s.chars()
            .map(|c| match c {
                '/' => '-',
                c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') => c,
                _ => '_',
            })
            .collect()
    };
    let name = format!(
        "{}__{}__{}__{}",
        slug(&r.run_id),
        slug(&r.case),
        slug(&r.variant.slug),
        r.repeat
    );
    format!("{}.svg", bounded(&name))
}

/// Bytes of a file name's stem kept whole; a longer one keeps its head and a hash of the
/// whole, so the name stays under the usual 255-byte limit and two long names still differ.
const MAX_STEM: usize = 200;

/// `stem` (ASCII) itself when short, else its first bytes, `-` and its 64-bit FNV-1a hash.
fn bounded(stem: &str) -> String {
    if stem.len() <= MAX_STEM {
        return stem.to_owned();
    }
    let hash = goldgate_core::hash::fnv1a(stem.as_bytes());
    format!("{}-{hash:016x}", &stem[..MAX_STEM - 17])
}

/// The y unit: GiB when the largest value reaches 1 GiB, else MiB.
fn unit(max_bytes: f64) -> (&'static str, f64) {
    const MIB: f64 = 1024.0 * 1024.0;
    if max_bytes >= 1024.0 * MIB {
        ("GiB", 1024.0 * MIB)
    } else {
        ("MiB", MIB)
    }
}

/// Contiguous runs of `(seconds, value in the chart's unit)`.
type Segments = Vec<Vec<(f64, f64)>>;

/// Splits a series with gaps (`None`) into contiguous segments of `(t, value in unit)`.
fn segments(t: &[f64], v: &[Option<u64>], scale: f64) -> Segments {
    let mut out: Segments = vec![Vec::new()];
    for (x, y) in t.iter().zip(v) {
        match y {
            Some(y) if x.is_finite() && *x >= 0.0 => {
                if let Some(last) = out.last_mut() {
                    last.push((*x, *y as f64 / scale));
                }
            }
            _ => out.push(Vec::new()),
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Colours of the nodes' lines in a chart of several nodes.
const NODES: [RGBColor; 6] = [
    GPU,
    HOST,
    SAVE,
    SHM,
    RGBColor(214, 39, 40),
    RGBColor(140, 86, 75),
];

/// The series to draw: for one node its GPU, PSS, RSS and `/dev/shm` lines; for a job of
/// several nodes one line per node (its GPU used memory, else its host PSS, else RSS).
fn all_series(r: &RunRecord, scale: f64) -> Vec<(String, RGBColor, Segments)> {
    if r.nodes.len() < 2 {
        return series(&r.memory.timeline, scale)
            .into_iter()
            .map(|(label, color, segs)| (label.to_owned(), color, segs))
            .collect();
    }
    r.nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let tl = &node.timeline;
            let some = |v: &[u64]| v.iter().map(|b| Some(*b)).collect::<Vec<_>>();
            let (what, values) = if tl.gpu_used_bytes.iter().any(Option::is_some) {
                ("GPU used", tl.gpu_used_bytes.clone())
            } else if !tl.host_pss_bytes.is_empty() {
                ("host PSS", some(&tl.host_pss_bytes))
            } else {
                ("host RSS", some(&tl.host_rss_bytes))
            };
            let label = format!("{} {what}", goldgate_core::log::one_line(&node.host));
            let segs = segments(&tl.t_seconds, &values, scale);
            (label, NODES[i % NODES.len()], segs)
        })
        .collect()
}

/// The series of one node's timeline: label, colour, segments. Series that are all zero or
/// absent are dropped (no `/dev/shm` use is the common case without async saves).
fn series(tl: &Timeline, scale: f64) -> Vec<(&'static str, RGBColor, Segments)> {
    let all_some = |v: &[u64]| v.iter().map(|b| Some(*b)).collect::<Vec<_>>();
    let (pss, rss, shm) = (
        all_some(&tl.host_pss_bytes),
        all_some(&tl.host_rss_bytes),
        all_some(&tl.shm_bytes),
    );
    let all = [
        ("GPU used", GPU, &tl.gpu_used_bytes),
        ("host PSS", HOST, &pss),
        ("host RSS (summed)", HOST_RSS, &rss),
        ("/dev/shm", SHM, &shm),
    ];
    all.into_iter()
        .filter(|(_, _, v)| v.iter().any(|b| b.is_some_and(|b| b > 0)))
        .map(|(label, color, v)| (label, color, segments(&tl.t_seconds, v, scale)))
        .collect()
}

/// The chart's title; names on one line, without the control characters XML cannot hold.
fn title(r: &RunRecord) -> String {
    use goldgate_core::log::one_line;
    format!(
        "{} @ {} #{} — {}",
        one_line(&r.case),
        one_line(&r.variant.name),
        r.repeat,
        r.outcome.label()
    )
}

/// Renders the job's memory timeline. A job without samples gets a chart frame with a note,
/// so every job has a file to link to.
pub fn render(r: &RunRecord) -> Result<String, ReportError> {
    let mut buf = String::new();
    draw(r, &mut buf).map_err(|message| ReportError::Svg {
        job: r.job_id.clone(),
        message,
    })?;
    Ok(buf)
}

/// The chart's scale: the memory unit's name and bytes per unit, and the ends of the time
/// and memory axes (in seconds and units).
struct Axes {
    unit_name: &'static str,
    scale: f64,
    t_max: f64,
    y_max: f64,
}

fn axes(r: &RunRecord) -> Axes {
    let tl = &r.memory.timeline;
    let timelines: Vec<&Timeline> = std::iter::once(tl)
        .chain(r.nodes.iter().map(|n| &n.timeline))
        .collect();
    let max_bytes = timelines
        .iter()
        .flat_map(|tl| {
            tl.gpu_used_bytes
                .iter()
                .flatten()
                .chain(&tl.host_rss_bytes)
                .chain(&tl.host_pss_bytes)
                .chain(&tl.shm_bytes)
        })
        .copied()
        .max()
        .unwrap_or(0) as f64;
    let (unit_name, scale) = unit(max_bytes);
    // Non-finite or negative times (a corrupt results.json) are left out: an infinite axis
    // would never finish laying out its ticks.
    let t_max = timelines
        .iter()
        .flat_map(|tl| tl.t_seconds.iter().copied())
        .chain(tl.saves.iter().filter_map(|s| s.1))
        .filter(|t| t.is_finite())
        .fold(0.0_f64, f64::max);
    // A run shorter than a tenth of a second still gets an axis a person can read.
    let t_max = t_max.max(0.1);
    Axes {
        unit_name,
        scale,
        t_max,
        y_max: (max_bytes / scale * 1.1).max(1.0),
    }
}

/// Decimals a tick label needs so that ticks about a tenth of the axis apart read apart:
/// `0, 5, 10` for 50 s, `0.0, 0.1, 0.2` for 1 s (never `0, 0, 1, 1`).
fn tick_decimals(max: f64) -> usize {
    let step = max / 10.0;
    if !(step.is_finite() && step > 0.0) {
        return 0;
    }
    (-step.log10()).ceil().clamp(0.0, 6.0) as usize
}

/// `label` cut to [`LEGEND_CHARS`] characters (`…` at the end) so it ends inside the canvas.
fn legend_label(label: &str) -> String {
    if label.chars().count() <= LEGEND_CHARS {
        return label.to_owned();
    }
    let cut: String = label.chars().take(LEGEND_CHARS - 1).collect();
    format!("{cut}…")
}

fn draw(r: &RunRecord, buf: &mut String) -> Result<(), String> {
    let tl = &r.memory.timeline;
    let Axes {
        unit_name,
        scale,
        t_max,
        y_max,
    } = axes(r);
    let err = |e: &dyn std::fmt::Display| e.to_string();

    let root = SVGBackend::with_string(buf, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let body = root
        .titled(&title(r), ("sans-serif", 21))
        .map_err(|e| err(&e))?;
    // The legend gets its own column so it never hides a line or a save.
    let (plot, legend_area) = body.split_horizontally(WIDTH - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("time since start (s)")
        .y_desc(format!("memory ({unit_name})"))
        .light_line_style(RGBColor(246, 246, 246))
        .x_label_formatter(&|v| format!("{v:.*}", tick_decimals(t_max)))
        .y_label_formatter(&|v| format!("{v:.*}", tick_decimals(y_max)))
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(|e| err(&e))?;

    let mut legend: Vec<(String, Option<RGBColor>)> = Vec::new();
    if draw_saves(&mut chart, tl, t_max, y_max)? {
        legend.push(("checkpoint save".to_owned(), None));
    }
    for (label, color, segs) in all_series(r, scale) {
        for seg in segs {
            chart
                .draw_series(LineSeries::new(seg, color.stroke_width(2)))
                .map_err(|e| err(&e))?;
        }
        legend.push((label, Some(color)));
    }
    if tl.t_seconds.is_empty() {
        chart
            .draw_series(std::iter::once(Text::new(
                "no memory samples were recorded for this job",
                (t_max * 0.05, y_max * 0.5),
                ("sans-serif", 20),
            )))
            .map_err(|e| err(&e))?;
    }
    draw_legend(&legend_area, &legend).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// Legend entries top-down in the right-hand column: a line swatch per series (`Some`
/// colour), a shaded box for checkpoint saves (`None`).
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(String, Option<RGBColor>)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, (label, color)) in entries.iter().enumerate() {
        let y = 24 + 26 * i as i32;
        match color {
            Some(c) => area.draw(&PathElement::new([(8, y), (32, y)], c.stroke_width(2)))?,
            None => area.draw(&Rectangle::new(
                [(8, y - 7), (32, y + 7)],
                SAVE.mix(0.4).filled(),
            ))?,
        }
        let label = legend_label(label);
        area.draw(&Text::new(label, (40, y - 8), ("sans-serif", LEGEND_FONT)))?;
    }
    Ok(())
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Checkpoint saves as shaded spans (a save still running at the end reaches the right edge;
/// one without an end is drawn as a thin span), each labelled with its iteration. Returns
/// whether any save was drawn.
fn draw_saves(chart: &mut Chart, tl: &Timeline, t_max: f64, y_max: f64) -> Result<bool, String> {
    let min_width = t_max * 0.004;
    let spans: Vec<(f64, f64, u64)> = tl
        .saves
        .iter()
        .filter(|(start, _, _)| start.is_finite() && *start >= 0.0)
        .map(|&(start, end, it)| {
            let end = end.filter(|e| e.is_finite());
            let end = end.unwrap_or(start + min_width).max(start + min_width);
            (start, end.min(t_max), it)
        })
        .collect();
    chart
        .draw_series(
            spans
                .iter()
                .map(|&(s, e, _)| Rectangle::new([(s, 0.0), (e, y_max)], SAVE.mix(0.22).filled())),
        )
        .map_err(|e| e.to_string())?
        .label("checkpoint save")
        .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], SAVE.mix(0.4).filled()));
    chart
        .draw_series(spans.iter().map(|&(s, _, it)| {
            Text::new(
                format!("it {it}"),
                (s, y_max * 0.97),
                ("sans-serif", 15).into_font().color(&SAVE.mix(0.9)),
            )
        }))
        .map_err(|e| e.to_string())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn file_names_stay_under_the_file_system_limit_and_apart() {
        let mut r = async_record();
        r.case = format!("{}/{}", "m".repeat(200), "c".repeat(250));
        let long = file_name(&r);
        assert!(long.len() <= 255, "{} bytes", long.len());
        assert!(
            long.ends_with(".svg") && long.starts_with("20261130-062900-abcd__mmm"),
            "{long}"
        );
        r.case.push('d');
        assert_ne!(file_name(&r), long);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(&long), "x").unwrap();
        let short = file_name(&async_record());
        assert!(
            short.ends_with("__allocator-gc80+checkpoint-async__2.svg"),
            "{short}"
        );
    }

    #[test]
    fn hostile_names_still_give_well_formed_xml() {
        let mut r = async_record();
        r.case = "m/\u{1}\u{1b}[31m<&>\"'\r\n::error::x".into();
        r.variant.name = "v\u{7f}\u{0}".into();
        let svg = render(&r).unwrap();
        // XML 1.0 `Char`: tab, line feed, carriage return and U+0020 up; nothing else.
        let bad = svg
            .chars()
            .find(|c| (*c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'));
        assert_eq!(bad, None, "a control character XML cannot hold");
        let mut reader = quick_xml::Reader::from_str(&svg);
        let mut depth = 0i32;
        loop {
            match reader.read_event().unwrap() {
                quick_xml::events::Event::Start(_) => depth += 1,
                quick_xml::events::Event::End(_) => depth -= 1,
                quick_xml::events::Event::Text(t) => {
                    quick_xml::escape::unescape(&t.decode().unwrap()).unwrap();
                }
                quick_xml::events::Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(depth, 0);
        assert!(texts(&svg).iter().any(|t| t.contains("\\u{1}")), "{svg}");
    }

    /// The text of every `<text>` element, in order: what a reader of the chart sees.
    fn texts(svg: &str) -> Vec<String> {
        let re = regex::Regex::new(r"(?s)<text[^>]*>\s*(.*?)\s*</text>").unwrap();
        re.captures_iter(svg).map(|c| c[1].to_string()).collect()
    }

    fn async_record() -> RunRecord {
        fixtures::record(
            fixtures::variant(&[("allocator", "gc80"), ("checkpoint", "async")]),
            2,
            fixtures::GC80_ASYNC,
            0.0,
        )
    }

    /// A `<text>` as a person sees it: where it is drawn, how it is anchored, at what size.
    struct Placed {
        x: f64,
        anchor: String,
        size: f64,
        rotated: bool,
        text: String,
    }

    fn placed(svg: &str) -> Vec<Placed> {
        let re = regex::Regex::new(r#"(?s)<text x="([-0-9.]+)" y="[-0-9.]+"[^>]*?text-anchor="(\w+)"[^>]*?font-size="([0-9.]+)"([^>]*)>\s*(.*?)\s*</text>"#).unwrap();
        re.captures_iter(svg)
            .map(|c| Placed {
                x: c[1].parse().unwrap(),
                anchor: c[2].to_owned(),
                size: c[3].parse().unwrap(),
                rotated: c[4].contains("rotate"),
                text: c[5].to_owned(),
            })
            .collect()
    }

    /// Every text ends inside the canvas (at a wide 0.6 em per character), and the ticks of
    /// each axis read apart: what a PNG of the chart would show.
    fn assert_readable(svg: &str) {
        let texts = placed(svg);
        for t in texts.iter().filter(|t| !t.rotated) {
            let width = t.text.chars().count() as f64 * 0.6 * t.size;
            let (left, right) = match t.anchor.as_str() {
                "middle" => (t.x - width / 2.0, t.x + width / 2.0),
                "end" => (t.x - width, t.x),
                _ => (t.x, t.x + width),
            };
            assert!(
                left >= 0.0 && right <= f64::from(WIDTH),
                "`{}` spans {left:.0}..{right:.0} of {WIDTH}",
                t.text
            );
        }
        let numeric = |t: &&Placed| t.text.parse::<f64>().is_ok();
        for anchor in ["middle", "end"] {
            let ticks: Vec<&str> = texts
                .iter()
                .filter(|t| t.anchor == anchor)
                .filter(numeric)
                .map(|t| t.text.as_str())
                .collect();
            assert!(ticks.len() >= 3, "{anchor}: {ticks:?}");
            let mut distinct = ticks.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), ticks.len(), "ticks repeat: {ticks:?}");
        }
    }

    #[test]
    fn short_runs_long_labels_and_many_nodes_stay_readable() {
        // A job of a third of a second (the crash demo), then the fixture as it is.
        let mut short = async_record();
        let tl = &mut short.memory.timeline;
        let end = tl.t_seconds.iter().copied().fold(0.0, f64::max);
        let k = 0.35 / end;
        tl.t_seconds.iter_mut().for_each(|t| *t *= k);
        tl.saves.iter_mut().for_each(|s| {
            s.0 *= k;
            s.1 = s.1.map(|e| e * k);
        });
        assert_readable(&render(&short).unwrap());
        assert_readable(&render(&async_record()).unwrap());
        assert_eq!(tick_decimals(0.35), 2);
        assert_eq!(tick_decimals(1.0), 1);
        assert_eq!(tick_decimals(45.0), 0);
        // Host names are cut to fit the legend.
        let mut nodes = async_record();
        nodes.nodes = vec![
            goldgate_schema::NodeMemory {
                host: "a-very-long-compute-node-name.cluster.example".to_owned(),
                timeline: nodes.memory.timeline.clone(),
                ..goldgate_schema::NodeMemory::default()
            };
            2
        ];
        let svg = render(&nodes).unwrap();
        assert_readable(&svg);
        assert!(texts(&svg).iter().any(|t| t.ends_with('…')), "{svg}");
    }

    /// The book's example image (docs/images/memory-timeline-example.svg) is this renderer's
    /// drawing of the fixture, so it never shows an older renderer. `GOLDGATE_BLESS_DOCS=1`
    /// rewrites it.
    #[test]
    fn the_books_example_image_is_what_the_renderer_draws() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/images/memory-timeline-example.svg");
        let svg = render(&async_record()).unwrap();
        if std::env::var_os("GOLDGATE_BLESS_DOCS").is_some() {
            std::fs::write(&path, &svg).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap();
        assert!(
            committed == svg,
            "{} is stale: GOLDGATE_BLESS_DOCS=1 cargo test -p goldgate --lib report::svg",
            path.display()
        );
        assert_readable(&committed);
    }

    #[test]
    fn labels_axes_legend_and_saves() {
        let svg = render(&async_record()).unwrap();
        insta::assert_snapshot!(texts(&svg).join("\n"));
    }

    #[test]
    fn a_job_of_several_nodes_draws_one_line_per_node() {
        let mut r = async_record();
        let node = |host: &str, factor: u64| goldgate_schema::NodeMemory {
            host: host.to_owned(),
            timeline: Timeline {
                gpu_used_bytes: vec![None; r.memory.timeline.t_seconds.len()],
                host_pss_bytes: r
                    .memory
                    .timeline
                    .host_rss_bytes
                    .iter()
                    .map(|b| b * factor)
                    .collect(),
                ..r.memory.timeline.clone()
            },
            ..goldgate_schema::NodeMemory::default()
        };
        r.nodes = vec![node("n1", 1), node("n2", 2)];
        let svg = render(&r).unwrap();
        let texts = texts(&svg);
        assert!(texts.contains(&"n1 host PSS".to_owned()), "{texts:?}");
        assert!(texts.contains(&"n2 host PSS".to_owned()), "{texts:?}");
        assert!(
            !texts.contains(&"host RSS (summed)".to_owned()),
            "{texts:?}"
        );
        let lines = svg.matches("<polyline").count();
        assert!(lines >= 2, "{svg}");
    }

    #[test]
    fn shapes_are_present_and_stable() {
        let r = async_record();
        let svg = render(&r).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.trim_end().ends_with("</svg>"));
        // One filled span per save plus the legend swatch; one line per series plus its legend.
        let spans = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && l.contains(r##"fill="#FF7F0E""##))
            .count();
        assert_eq!(spans, r.memory.timeline.saves.len() + 1, "{svg}");
        for color in ["#1F77B4", "#2CA02C", "#BCBD22", "#9467BD"] {
            let lines = svg.matches(&format!(r#"stroke="{color}""#)).count();
            assert_eq!(lines, 2, "{color}");
        }
        assert_eq!(render(&r).unwrap(), svg, "rendering is deterministic");
    }

    #[test]
    fn gpu_gaps_split_the_line_and_small_jobs_use_mib() {
        let mut r = async_record();
        let tl = &mut r.memory.timeline;
        tl.gpu_used_bytes[10] = None;
        for v in tl
            .host_rss_bytes
            .iter_mut()
            .chain(tl.host_pss_bytes.iter_mut())
        {
            *v /= 1024;
        }
        tl.gpu_used_bytes
            .iter_mut()
            .flatten()
            .for_each(|v| *v /= 1024);
        tl.shm_bytes.iter_mut().for_each(|v| *v /= 1024);
        let svg = render(&r).unwrap();
        assert!(texts(&svg).iter().any(|t| t == "memory (MiB)"));
        assert_eq!(svg.matches(r##"stroke="#1F77B4""##).count(), 2 + 1);
    }

    #[test]
    fn a_job_without_samples_still_renders() {
        let mut r = async_record();
        r.memory.timeline = Timeline::default();
        let svg = render(&r).unwrap();
        assert!(texts(&svg).contains(&"no memory samples were recorded for this job".to_string()));
    }

    #[test]
    fn corrupt_timelines_render_without_panicking() {
        let mut r = async_record();
        let tl = &mut r.memory.timeline;
        tl.t_seconds[3] = f64::NAN;
        tl.t_seconds[4] = f64::INFINITY;
        tl.t_seconds[5] = -2.0;
        tl.gpu_used_bytes.truncate(7);
        tl.shm_bytes.push(u64::MAX);
        tl.saves.push((f64::INFINITY, Some(f64::NAN), 99));
        tl.saves.push((30.0, Some(10.0), 100));
        tl.saves.push((50.0, None, 101));
        let svg = render(&r).unwrap();
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(!texts(&svg).contains(&"it 99".to_string()));
        assert!(texts(&svg).contains(&"it 101".to_string()));
    }

    #[test]
    fn file_names_are_one_path_component() {
        let mut r = async_record();
        assert_eq!(
            file_name(&r),
            "20261130-062900-abcd__gpt-gpt3_mcore_te_tp1_pp1_ckpt_resume__allocator-gc80+checkpoint-async__2.svg"
        );
        r.case = "a/b c/../d".into();
        r.run_id = "../x".into();
        assert_eq!(
            file_name(&r),
            "..-x__a-b_c-..-d__allocator-gc80+checkpoint-async__2.svg"
        );
        let mut other_run = async_record();
        other_run.run_id = "20261201-000000-0000".into();
        assert_ne!(file_name(&other_run), file_name(&async_record()));
    }
}
