//! Stage "report": the variant comparison. For a case run under several variants, one row per
//! metric and one column per variant (median over the passed repeats, their range, and the
//! difference to the baseline variant), in markdown and terminal form. No goldens are involved:
//! this is how a user sees "gc80 + async cut checkpoint blocking from X to Y at the cost of Z GiB".
//!
//! The spread shown is the min–max range over repeats, not a confidence interval: with the 2–5
//! repeats a variant sweep usually has, the range is the honest summary (the gate's bootstrap CI
//! lives in `compare`).
//!
//! Rows of figures no rule gates (summed RSS, the system's MemAvailable drop, the probe's
//! allocator snapshots) are *diagnostic*: other processes, shared pages and the page cache move
//! them, so their differences are mostly noise. They come last, under their own heading, and
//! without a Δ, so they never read as the loudest result.

use goldgate_core::log::one_line;
use std::collections::BTreeMap;

use super::variant_rows::{FIXED, Role, RowRules, extra_metric_keys, is_gated};
use crate::compare::stats::summary::median_sorted;
use crate::report::markdown::escape_md;
use crate::report::units;
use goldgate_core::config::Config;
use goldgate_core::rules::Rules;
use goldgate_schema::RunRecord;
use goldgate_schema::Unit;

/// All cases of a results folder, each with its variants side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantTable {
    /// Cases sorted by name.
    pub cases: Vec<CaseVariants>,
}

/// One case: its variants (baseline first) and one row per metric.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseVariants {
    /// `<model>/<case>`.
    pub case: String,
    /// Columns; `[0]` is the baseline (`default` when it ran, else the first by name).
    pub variants: Vec<VariantColumn>,
    /// Metrics with a value in at least one variant.
    pub rows: Vec<MetricRow>,
}

/// One variant of a case.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantColumn {
    /// `allocator=gc80,checkpoint=async`, or `default`.
    pub name: String,
    /// Repeats that passed (only these contribute values).
    pub passed: usize,
    /// Repeats recorded.
    pub total: usize,
}

/// One metric across the variants of a case.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricRow {
    /// What the row shows, e.g. `checkpoint blocking, saves after the first`.
    pub label: String,
    /// How to format it.
    pub kind: Unit,
    /// A context figure no rule gates: shown after the gated rows, without a Δ.
    pub diagnostic: bool,
    /// One per variant column; `None` where no passed repeat had the value.
    pub cells: Vec<Option<Cell>>,
}

/// A metric of one variant over its passed repeats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Median over repeats.
    pub median: f64,
    /// Smallest repeat.
    pub min: f64,
    /// Largest repeat.
    pub max: f64,
    /// Repeats with a value.
    pub n: usize,
}

/// What the table takes from `goldgate.yaml`: the order of variant columns and the rules the
/// gate judges with (the iteration-time window, the saves the blocking rule leaves out).
///
/// Columns: the baseline (every axis at its default) first, then by how many axes differ from
/// their default, then by the axes' and values' order in `goldgate.yaml` (the first axis
/// varying first). Variants that tie keep the order they were run in, so a table built from
/// several runs reads the same as one built from a single `--matrix` run. Without a
/// configuration ([`VariantOrder::default`]) every chosen axis counts as away from its default
/// and the rules are the built-in ones.
#[derive(Clone, Debug)]
pub struct VariantOrder {
    axes: Vec<(String, Vec<String>)>,
    rows: RowRules,
}

impl Default for VariantOrder {
    fn default() -> VariantOrder {
        VariantOrder {
            axes: Vec::new(),
            rows: RowRules::of(&Rules::default()),
        }
    }
}

impl VariantOrder {
    /// The axes and values of a configuration, in the order they are written there, and its
    /// rules.
    pub fn from_config(config: &Config) -> VariantOrder {
        VariantOrder {
            axes: config
                .axes
                .iter()
                .map(|a| {
                    let values = a.values.iter().map(|v| v.name.clone()).collect();
                    (a.name.clone(), values)
                })
                .collect(),
            rows: RowRules::of(&config.rules),
        }
    }

    /// Sort key: (axes away from their default, each axis's value index). An axis that is
    /// not chosen counts as its default; a value the configuration does not know sorts last.
    fn key(&self, choices: &BTreeMap<String, String>) -> (usize, Vec<usize>) {
        let indices: Vec<usize> = self
            .axes
            .iter()
            .map(|(axis, values)| match choices.get(axis) {
                None => 0,
                Some(v) => values.iter().position(|x| x == v).unwrap_or(values.len()),
            })
            .collect();
        let unknown_axes = choices
            .keys()
            .filter(|k| !self.axes.iter().any(|(axis, _)| axis == *k))
            .count();
        let away = indices.iter().filter(|&&i| i > 0).count() + unknown_axes;
        // Among variants as far from the baseline, the first axis varies first: all the
        // allocator values before an opt-in axis written after it.
        let mut indices = indices;
        indices.reverse();
        (away, indices)
    }
}

/// Groups records by case and variant and computes every row. Failed repeats are counted but
/// contribute no values (a crashed job's peaks and timings describe a different run).
pub fn build<'a>(
    records: impl IntoIterator<Item = &'a RunRecord>,
    order: &VariantOrder,
) -> VariantTable {
    // Variants start in the order they were run in, then `order` sorts them (stably); cases
    // are sorted.
    let mut grouped: BTreeMap<&str, Vec<(&str, Vec<&RunRecord>)>> = BTreeMap::new();
    for r in records {
        let variants = grouped.entry(r.case.as_str()).or_default();
        match variants
            .iter_mut()
            .find(|(name, _)| *name == r.variant.name)
        {
            Some((_, rs)) => rs.push(r),
            None => variants.push((r.variant.name.as_str(), vec![r])),
        }
    }
    let cases = grouped
        .into_iter()
        .map(|(case, mut variants)| {
            variants.sort_by_cached_key(|(_, rs)| order.key(&rs[0].variant.choices));
            build_case(case, variants, &order.rows)
        })
        .collect();
    VariantTable { cases }
}

fn build_case(
    case: &str,
    variants: Vec<(&str, Vec<&RunRecord>)>,
    rules: &RowRules,
) -> CaseVariants {
    let mut ordered = variants;
    if let Some(pos) = ordered.iter().position(|(name, _)| *name == "default") {
        let default = ordered.remove(pos);
        ordered.insert(0, default);
    }
    let passed: Vec<Vec<&RunRecord>> = ordered
        .iter()
        .map(|(_, rs)| rs.iter().copied().filter(|r| r.outcome.passed()).collect())
        .collect();
    let columns = ordered
        .iter()
        .zip(&passed)
        .map(|((name, all), ok)| VariantColumn {
            name: (*name).to_string(),
            passed: ok.len(),
            total: all.len(),
        })
        .collect();
    let mut rows: Vec<MetricRow> = FIXED
        .iter()
        .map(|(label, kind, role, extract)| {
            let statistic = rules
                .window
                .as_ref()
                .map_or("median", |w| w.statistic.name());
            let label = label
                .replace("{statistic}", statistic)
                .replace("{saves}", &rules.saves_label());
            let cells = passed
                .iter()
                .map(|rs| cell(rs.iter().filter_map(|r| finite(extract(r, rules)))))
                .collect();
            MetricRow {
                label,
                kind: *kind,
                diagnostic: *role == Role::Diagnostic,
                cells,
            }
        })
        .collect();
    for key in extra_metric_keys(&passed) {
        let cells = passed
            .iter()
            .map(|rs| cell(rs.iter().filter_map(|r| finite(r.last_value(&key)))))
            .collect();
        rows.push(MetricRow {
            kind: Unit::of_metric(&key),
            diagnostic: !is_gated(&key),
            label: format!("{key} (final)"),
            cells,
        });
    }
    rows.retain(|r| r.cells.iter().any(Option::is_some));
    // Gated rows first, each group in its own order.
    rows.sort_by_key(|r| r.diagnostic);
    CaseVariants {
        case: case.to_string(),
        variants: columns,
        rows,
    }
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn cell(values: impl Iterator<Item = f64>) -> Option<Cell> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    let median = median_sorted(&v)?;
    Some(Cell {
        median,
        min: v.first().copied()?,
        max: v.last().copied()?,
        n: v.len(),
    })
}

impl Cell {
    /// `4.10 s (4.06 – 4.15 s)`; the range only when repeats differ, `n=` only when some
    /// passed repeat lacked the value.
    fn text(&self, kind: Unit, passed: usize) -> String {
        let mut text = units::value(kind, self.median);
        if self.n >= 2 && self.min != self.max {
            text.push_str(&format!(" ({})", units::interval(kind, self.min, self.max)));
        }
        if self.n < passed {
            text.push_str(&format!(" n={}", self.n));
        }
        text
    }

    /// Difference to the baseline: `-3.58 s (-87.32 %)`; percentages only for plain values.
    fn delta(&self, base: &Cell, kind: Unit) -> String {
        let diff = self.median - base.median;
        let pct = if base.median != 0.0 {
            Some(diff / base.median.abs() * 100.0)
        } else {
            None
        };
        match (kind, pct) {
            (Unit::Plain, Some(p)) => units::pct(p),
            (_, Some(p)) => format!("{} ({})", units::signed(kind, diff), units::pct(p)),
            (_, None) => units::signed(kind, diff),
        }
    }
}

/// The text of one cell: value and range, plus `Δ` to the baseline for non-baseline columns
/// of gated rows.
fn cell_text(row: &MetricRow, col: usize, passed: usize, delta_sep: &str) -> String {
    let Some(Some(c)) = row.cells.get(col) else {
        return "—".into();
    };
    let mut text = c.text(row.kind, passed);
    if col > 0
        && !row.diagnostic
        && let Some(Some(base)) = row.cells.first()
    {
        text.push_str(delta_sep);
        text.push_str("Δ ");
        text.push_str(&c.delta(base, row.kind));
    }
    text
}

fn jobs_text(v: &VariantColumn) -> String {
    format!("{} of {} passed", v.passed, v.total)
}

/// The heading of the diagnostic rows, and what it means under the table.
const DIAGNOSTIC_HEADING: &str = "diagnostic (not gated, no Δ)";
const DIAGNOSTIC_NOTE: &str = "diagnostic rows: context figures no rule gates (shared pages, \
     other processes and the page cache move them); compare their values, not their difference";

/// The baseline column's header: `default (baseline)`.
fn column_name(case: &CaseVariants, col: usize) -> String {
    let name = &case.variants[col].name;
    if col == 0 && case.variants.len() > 1 {
        format!("{name} (baseline)")
    } else {
        name.clone()
    }
}

/// What the table of a case shows: `median over the passed repeats (range), Δ against default`.
fn caption(case: &CaseVariants, baseline: &str) -> String {
    let mut text = "median over the passed repeats (range over repeats)".to_owned();
    if case.variants.len() > 1 {
        text.push_str(&format!(", Δ against {baseline}"));
    }
    text
}

fn has_diagnostic(case: &CaseVariants) -> bool {
    case.rows.iter().any(|r| r.diagnostic)
}

/// Markdown: one `###` section and table per case. All names are escaped.
pub fn render_markdown(table: &VariantTable) -> String {
    let mut out = String::from("## Variant comparison\n\n");
    if table.cases.is_empty() {
        out.push_str("No results.\n");
        return out;
    }
    for case in &table.cases {
        out.push_str(&format!("### {}\n\n", escape_md(&case.case)));
        let baseline = format!("**{}**", escape_md(&case.variants[0].name));
        out.push_str(&format!(
            "{}.\n\n| metric |",
            capitalised(&caption(case, &baseline))
        ));
        for col in 0..case.variants.len() {
            out.push_str(&format!(" {} |", escape_md(&column_name(case, col))));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(case.variants.len()));
        out.push_str("\n| jobs |");
        for v in &case.variants {
            out.push_str(&format!(" {} |", jobs_text(v)));
        }
        out.push('\n');
        let mut heading = false;
        for row in &case.rows {
            if row.diagnostic && !std::mem::replace(&mut heading, true) {
                out.push_str(&format!("| *{DIAGNOSTIC_HEADING}* |"));
                out.push_str(&" |".repeat(case.variants.len()));
                out.push('\n');
            }
            out.push_str(&format!("| {} |", escape_md(&row.label)));
            for (col, v) in case.variants.iter().enumerate() {
                out.push_str(&format!(" {} |", cell_text(row, col, v.passed, "<br>")));
            }
            out.push('\n');
        }
        if heading {
            out.push_str(&format!("\n{}.\n", capitalised(DIAGNOSTIC_NOTE)));
        }
        out.push('\n');
    }
    out
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// Terminal: one table per case, headed by the case name; no colour.
pub fn render_terminal(table: &VariantTable) -> String {
    let mut out = String::new();
    for case in &table.cases {
        let mut b = tabled::builder::Builder::default();
        let mut header = vec!["metric".to_string()];
        header.extend((0..case.variants.len()).map(|col| one_line(&column_name(case, col))));
        b.push_record(header);
        let mut jobs = vec!["jobs".to_string()];
        jobs.extend(case.variants.iter().map(jobs_text));
        b.push_record(jobs);
        let mut heading = false;
        for row in &case.rows {
            if row.diagnostic && !std::mem::replace(&mut heading, true) {
                let mut rec = vec![format!("── {DIAGNOSTIC_HEADING} ──")];
                rec.extend(case.variants.iter().map(|_| String::new()));
                b.push_record(rec);
            }
            let mut rec = vec![row.label.clone()];
            rec.extend(
                case.variants
                    .iter()
                    .enumerate()
                    .map(|(col, v)| cell_text(row, col, v.passed, "\n")),
            );
            b.push_record(rec);
        }
        let mut t = b.build();
        t.with(tabled::settings::Style::sharp());
        // One variant has no Δ: its name alone heads the table, as a run of one case shows it.
        let mut head = one_line(&case.case);
        if case.variants.len() > 1 {
            let baseline = one_line(&case.variants[0].name);
            head.push_str(&format!(": {}", caption(case, &baseline)));
        }
        out.push_str(&format!("{head}\n{t}\n"));
        if has_diagnostic(case) {
            out.push_str(&format!("{DIAGNOSTIC_NOTE}\n"));
        }
    }
    if out.is_empty() {
        out.push_str("no results\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;
    use goldgate_schema::metric_names::CHECKPOINT_BLOCKING;

    #[test]
    fn baseline_is_default_and_failed_repeats_give_no_values() {
        let records = fixtures::variant_sweep();
        let t = build(&records, &VariantOrder::default());
        let case = &t.cases[0];
        let names: Vec<_> = case.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "default",
                "allocator=gc80",
                "allocator=gc80,checkpoint=async"
            ]
        );
        assert_eq!(case.variants[1].passed, 1);
        assert_eq!(case.variants[1].total, 2);
        let blocking = &case.rows[0];
        assert_eq!(blocking.cells[0].unwrap().n, 3);
        assert_eq!(blocking.cells[1].unwrap().n, 1);
    }

    #[test]
    fn iteration_time_uses_the_window_and_statistic_of_goldgate_yaml() {
        let mut records = vec![fixtures::variant_sweep().remove(0)];
        let series = &mut records[0].metrics.get_mut("iteration-time").unwrap().0;
        series.insert(2, 9.0);
        let row = |order: &VariantOrder| {
            let t = build(&records, order);
            let row = t.cases[0]
                .rows
                .iter()
                .find(|r| r.label.starts_with("iteration time"))
                .unwrap()
                .clone();
            (row.label, row.cells[0].unwrap().median)
        };
        let builtin = row(&VariantOrder::default());
        assert_eq!(builtin.0, "iteration time (median)");
        let config = Config::parse(
            "rules:\n  iteration-time:\n    window: {statistic: max, steps: 1-3}\n",
            std::path::Path::new("goldgate.yaml"),
        )
        .unwrap();
        let configured = row(&VariantOrder::from_config(&config));
        assert_eq!(configured, ("iteration time (max)".to_owned(), 9.0));
        assert!(
            builtin.1 < 9.0,
            "the built-in window (30-45) leaves step 2 out"
        );
    }

    #[test]
    fn the_blocking_row_is_over_the_saves_the_rule_judges_and_reads_the_metric() {
        let mut records = vec![fixtures::variant_sweep().remove(0)];
        // Saves of 18.2 s, 6 s, 4.1 s; the record's raw observations say otherwise, and the
        // row must not read them.
        let blocking = &mut records[0].metrics.get_mut(CHECKPOINT_BLOCKING).unwrap().0;
        blocking.insert(40, 6.0);
        for c in &mut records[0].checkpoints {
            c.saving_to_saved_seconds = Some(100.0);
        }
        let row = |order: &VariantOrder| {
            let t = build(&records, order);
            let row = t.cases[0].rows[0].clone();
            (row.label, row.cells[0].unwrap().median)
        };
        let (label, median) = row(&VariantOrder::default());
        assert_eq!(label, "checkpoint blocking, saves after the first (median)");
        assert!(
            (median - 5.05).abs() < 1e-9,
            "the median of 6, 4.1: {median}"
        );
        let config = Config::parse(
            "rules:\n  checkpoint-blocking-time:\n    skip_first_saves: 0\n",
            std::path::Path::new("goldgate.yaml"),
        )
        .unwrap();
        let (label, median) = row(&VariantOrder::from_config(&config));
        assert_eq!(label, "checkpoint blocking, every save (median)");
        assert!(
            (median - 6.0).abs() < 1e-9,
            "the median of 18.2, 6, 4.1: {median}"
        );
        let config = Config::parse(
            "rules:\n  checkpoint-blocking-time:\n    skip_first_saves: 2\n",
            std::path::Path::new("goldgate.yaml"),
        )
        .unwrap();
        let (label, median) = row(&VariantOrder::from_config(&config));
        assert_eq!(
            label,
            "checkpoint blocking, saves after the first 2 (median)"
        );
        assert!((median - 4.1).abs() < 1e-9, "the last save alone: {median}");
    }

    #[test]
    fn configured_order_puts_the_baseline_first_whatever_the_run_order() {
        // As when `report` reads several runs whose folders sort gc80 before the default.
        let mut records = fixtures::variant_sweep();
        records.reverse();
        let run_order = build(&records, &VariantOrder::default());
        assert_eq!(
            run_order.cases[0].variants[1].name, "allocator=gc80",
            "without a configuration every chosen axis counts as away from its default"
        );
        let config = Config::parse(
            "variants:\n  allocator: {values: {default: {}, expandable: {}, gc80: {}}}\n  \
             checkpoint: {values: {sync: {}, async: {}}}\n",
            std::path::Path::new("goldgate.yaml"),
        )
        .unwrap();
        let mut explicit = fixtures::variant_sweep();
        for r in &mut explicit {
            if r.variant.choices.is_empty() {
                r.variant.name = "allocator=default,checkpoint=sync".into();
                r.variant.choices = [("allocator", "default"), ("checkpoint", "sync")]
                    .map(|(a, v)| (a.to_string(), v.to_string()))
                    .into();
            }
        }
        explicit.reverse();
        let t = build(&explicit, &VariantOrder::from_config(&config));
        let names: Vec<_> = t.cases[0]
            .variants
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "allocator=default,checkpoint=sync",
                "allocator=gc80",
                "allocator=gc80,checkpoint=async"
            ]
        );
    }

    #[test]
    fn median_and_range_over_repeats() {
        let c = cell([3.0, 1.0, 2.0, 10.0].into_iter()).unwrap();
        assert_eq!((c.median, c.min, c.max, c.n), (2.5, 1.0, 10.0, 4));
        assert!(cell(std::iter::empty()).is_none());
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(render_markdown(&build(
            &fixtures::variant_sweep(),
            &VariantOrder::default()
        )));
    }

    #[test]
    fn terminal_snapshot() {
        insta::assert_snapshot!(render_terminal(&build(
            &fixtures::variant_sweep(),
            &VariantOrder::default()
        )));
    }

    #[test]
    fn names_from_logs_are_escaped_in_markdown() {
        let mut records = fixtures::variant_sweep();
        records[0].case = "gpt/a|b<script>@team".into();
        let md = render_markdown(&build(&records, &VariantOrder::default()));
        assert!(md.contains(r"a\|b&lt;script&gt;@&#8203;team"), "{md}");
    }
}
