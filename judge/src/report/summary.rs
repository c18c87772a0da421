//! Stage "report": the markdown of `goldgate report` — the variant comparison followed by a
//! per-job summary (outcome, wall time, memory peaks, checkpoint saves, link to the memory
//! timeline). Renders recorded runs without judging them.

use crate::report::markdown::escape_md;
use crate::report::units;
use crate::report::{svg, variants};
use goldgate_schema::Unit;
use goldgate_schema::metric_names as names;
use goldgate_schema::{CheckpointRecord, RunRecord};

/// Longest failure line shown (characters).
const MAX_LINE: usize = 300;

fn peak(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), goldgate_core::units::bytes)
}

fn gpu_peak(r: &RunRecord) -> Option<f64> {
    r.gpu_peak_bytes()
}

/// `it 20: 18.20 s` or, for async saves, `it 40: 342 ms (async 4.60 s)`: the blocking time is
/// the record's `checkpoint-blocking-time` at that save.
fn save_text(r: &RunRecord, c: &CheckpointRecord) -> String {
    let blocking = (r.metrics.get(names::CHECKPOINT_BLOCKING))
        .and_then(|s| s.0.get(&c.iteration).copied())
        .map_or_else(|| "?".into(), goldgate_core::units::seconds);
    match c.async_latency_seconds {
        Some(l) => format!(
            "it {}: {blocking} (async {})",
            c.iteration,
            goldgate_core::units::seconds(l)
        ),
        None => format!("it {}: {blocking}", c.iteration),
    }
}

fn saves(r: &RunRecord) -> String {
    if r.checkpoints.is_empty() {
        return "—".into();
    }
    r.checkpoints
        .iter()
        .map(|c| save_text(r, c))
        .collect::<Vec<_>>()
        .join("<br>")
}

fn outcome(r: &RunRecord) -> String {
    let mut text = format!("**{}**", escape_md(&r.outcome.label()));
    let line = r.attempts.last().and_then(|a| a.failure_line.as_deref());
    if let (false, Some(line)) = (r.outcome.passed(), line) {
        let short: String = line.trim().chars().take(MAX_LINE).collect();
        text.push_str(&format!("<br>{}", escape_md(&short)));
    }
    if r.attempts.len() > 1 {
        text.push_str(&format!("<br>{} attempts", r.attempts.len()));
    }
    text
}

/// The per-job table. `svg_dir` is the link prefix of the timelines (relative to the markdown
/// file), `None` when no SVGs were written. Records of several runs (`report --all-runs`) get
/// a `run` column; each row links to its own run's timeline.
fn jobs_markdown(records: &[&RunRecord], svg_dir: Option<&str>) -> String {
    let runs: std::collections::BTreeSet<&str> =
        records.iter().map(|r| r.run_id.as_str()).collect();
    let several = runs.len() > 1;
    let mut out = String::from("## Jobs\n\n|");
    if several {
        out.push_str(" run |");
    }
    out.push_str(
        " case | variant | repeat | outcome | wall | GPU peak | host peak PSS | /dev/shm peak | checkpoint saves (blocking) | timeline |\n|",
    );
    out.push_str(&"---|".repeat(if several { 11 } else { 10 }));
    out.push('\n');
    for r in records {
        if several {
            out.push_str(&format!("| {} ", escape_md(&r.run_id)));
        }
        let timeline = svg_dir.map_or_else(
            || "—".to_string(),
            |dir| {
                let name = svg::file_name(r);
                let sep = if dir.is_empty() || dir.ends_with('/') {
                    ""
                } else {
                    "/"
                };
                format!("[svg]({dir}{sep}{name})")
            },
        );
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {timeline} |\n",
            escape_md(&r.case),
            escape_md(&r.variant.name),
            r.repeat,
            outcome(r),
            units::value(Unit::Seconds, r.wall_seconds),
            peak(gpu_peak(r)),
            peak(
                r.last_value(goldgate_schema::metric_names::HOST_PEAK)
                    .or(r.memory.host_peak_pss_bytes.map(|b| b as f64))
            ),
            peak(
                r.last_value(goldgate_schema::metric_names::SHM_PEAK)
                    .or(r.memory.shm_peak_bytes.map(|b| b as f64))
            ),
            saves(r),
        ));
    }
    out
}

/// The whole markdown of `goldgate report`.
pub fn render(
    records: &[&RunRecord],
    order: &variants::VariantOrder,
    svg_dir: Option<&str>,
) -> String {
    let table = variants::build(records.iter().copied(), order);
    format!(
        "# goldgate report\n\n{}\n{}",
        variants::render_markdown(&table),
        jobs_markdown(records, svg_dir)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;
    use goldgate_schema::{Attempt, Outcome};

    fn sweep() -> Vec<RunRecord> {
        let mut records = fixtures::variant_sweep();
        let oom = records
            .iter_mut()
            .find(|r| r.outcome == Outcome::OutOfMemory)
            .unwrap();
        oom.attempts = vec![Attempt {
            number: 1,
            started_at: "2026-11-30T06:29:00Z".into(),
            wall_seconds: 41.0,
            outcome: Outcome::OutOfMemory,
            failure_line: Some(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB".into(),
            ),
            log_tail: vec!["[rank0]: torch.OutOfMemoryError: CUDA out of memory.".into()],
            log: "logs/attempt-1.log".into(),
            queued_seconds: None,
        }];
        records
    }

    #[test]
    fn snapshot() {
        let records = sweep();
        let refs: Vec<&RunRecord> = records.iter().collect();
        insta::assert_snapshot!(render(
            &refs,
            &variants::VariantOrder::default(),
            Some("svg")
        ));
    }

    #[test]
    fn rows_of_two_runs_link_to_their_own_timelines() {
        let mut records = sweep();
        let older: Vec<RunRecord> = records
            .iter()
            .cloned()
            .map(|mut r| {
                r.run_id = "20261129-000000-0000".into();
                r
            })
            .collect();
        records.extend(older);
        let refs: Vec<&RunRecord> = records.iter().collect();
        let md = jobs_markdown(&refs, Some("svg"));
        let links: std::collections::BTreeSet<&str> = md
            .lines()
            .filter_map(|l| l.split("[svg](").nth(1))
            .collect();
        assert_eq!(links.len(), records.len(), "{md}");
        insta::assert_snapshot!(md);
    }

    #[test]
    fn no_svg_dir_means_no_links() {
        let records = sweep();
        let refs: Vec<&RunRecord> = records.iter().collect();
        let md = jobs_markdown(&refs, None);
        assert!(!md.contains("[svg]"), "{md}");
        assert!(jobs_markdown(&refs, Some("")).contains("](20261130-062900-abcd__gpt-gpt3"));
    }
}
