//! `goldgate extract`: runs the Megatron log parser over existing logs (each streamed, never
//! read whole) and prints a table per log or the [`LogSummary`] of each as JSON; with
//! `--tensorboard DIR`, also each TensorBoard folder's scalars (every event file, checksums
//! verified).

use std::fmt::Write as _;
use std::path::PathBuf;

use super::error::AppError;
use super::output::{errln, out};
use goldgate_core::log::{CheckpointSave, LogSummary, summarize_file_with_tail};
use goldgate_core::printable::escaped;
use goldgate_schema::Exit;

/// Arguments of `goldgate extract`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files (e.g. downloaded from CI).
    #[arg(required_unless_present = "tensorboard")]
    pub logs: Vec<PathBuf>,
    /// A TensorBoard folder (Megatron's --tensorboard-dir) to read as well (repeatable): its
    /// scalars per tag and step, under the names results.json gives them.
    #[arg(long, value_name = "DIR")]
    pub tensorboard: Vec<PathBuf>,
    /// Output format (`json`: `{"schema_version", "logs": [...]}`, one `{"log", "summary"}`
    /// object per log file).
    #[arg(long, value_enum, default_value_t = super::list::Format::Table)]
    pub format: super::list::Format,
}

/// One parsed log, as printed.
#[derive(Debug, serde::Serialize)]
pub struct Extracted {
    /// The path as given on the command line.
    pub log: String,
    /// What the parser kept.
    pub summary: LogSummary,
    /// The exception line of the log's last Python traceback (a crash no failure marker
    /// names, as `goldgate run` reports it); absent when the log has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let mut out = Vec::with_capacity(args.logs.len());
    for path in &args.logs {
        let (summary, tail) = summarize_file_with_tail(path)?;
        if let Some(w) = no_steps_warning(&summary) {
            errln!("warning: {}: {w}", path.display());
        }
        out.push(Extracted {
            log: path.display().to_string(),
            summary,
            exception: tail.exception,
        });
    }
    let folders = args
        .tensorboard
        .iter()
        .map(|dir| {
            goldgate_core::tensorboard::job_scalars(dir).map(|s| tensorboard_extract(dir, s))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let text = match args.format {
        super::list::Format::Table => {
            let mut t = render_table(&out);
            for f in &folders {
                if !t.is_empty() {
                    t.push('\n');
                }
                t.push_str(&render_tensorboard_table(f));
            }
            t
        }
        super::list::Format::Json => render_json(&out, &folders)?,
    };
    out!("{text}");
    Ok(Exit::Pass)
}

/// One TensorBoard folder, as printed.
#[derive(Debug, serde::Serialize)]
pub struct TensorboardExtract {
    /// The folder as given on the command line.
    pub dir: String,
    /// Its event files, oldest first (names).
    pub files: Vec<String>,
    /// Tag → step → value, tags in first-seen order.
    pub scalars: serde_json::Map<String, serde_json::Value>,
}

fn tensorboard_extract(
    dir: &std::path::Path,
    s: goldgate_core::tensorboard::JobScalars,
) -> TensorboardExtract {
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    TensorboardExtract {
        dir: dir.display().to_string(),
        files: s.files.iter().map(name).collect(),
        scalars: s
            .series
            .into_iter()
            .map(|(tag, values)| {
                let steps = goldgate_schema::StepValues(values);
                (tag, serde_json::to_value(steps).unwrap_or_default())
            })
            .collect(),
    }
}

/// A block per folder: its files, then a row per tag (steps, first and last step, last value).
pub fn render_tensorboard_table(f: &TensorboardExtract) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} (TensorBoard, {} event file(s))",
        escaped(&f.dir),
        f.files.len()
    );
    for file in &f.files {
        let _ = writeln!(s, "  {}", escaped(file));
    }
    for (tag, values) in &f.scalars {
        let steps: Vec<(u64, String)> = values
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.parse().ok()?, v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
            continue;
        };
        let _ = writeln!(
            s,
            "  {:<28} {:>6} step(s) {}..{}  last {}",
            escaped(tag),
            steps.len(),
            first.0,
            last.0,
            last.1
        );
    }
    s
}

/// Why a log gave no per-step metrics, when it gave none.
pub fn no_steps_warning(summary: &LogSummary) -> Option<String> {
    (summary.steps_seen == 0).then(|| {
        format!(
            "no iteration lines (`iteration N/M | ...`) in {} line(s): no per-step metrics",
            summary.lines
        )
    })
}

/// Version of `extract --format json`'s layout; raised when a field changes meaning or goes
/// away.
pub const EXTRACT_SCHEMA_VERSION: u32 = 1;

/// The summaries as pretty JSON: `schema_version` and `logs`, one `{"log", "summary"}` object
/// per log, and `tensorboard`, one `{"dir", "files", "scalars"}` object per folder (absent
/// without `--tensorboard`).
pub fn render_json(logs: &[Extracted], folders: &[TensorboardExtract]) -> Result<String, AppError> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        logs: &'a [Extracted],
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        tensorboard: &'a [TensorboardExtract],
    }
    let doc = Doc {
        schema_version: EXTRACT_SCHEMA_VERSION,
        logs,
        tensorboard: folders,
    };
    let mut s = serde_json::to_string_pretty(&doc)
        .map_err(|source| super::error::CmdError::Encode { source })?;
    s.push('\n');
    Ok(s)
}

/// A block per log: steps, final losses, median iteration time, memory peaks, checkpoint
/// saves (blocking time, async latency) and failures.
pub fn render_table(logs: &[Extracted]) -> String {
    let mut s = String::new();
    for (i, e) in logs.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = writeln!(s, "{}", e.log);
        table_body(&mut s, &e.summary);
        failures(&mut s, &e.summary, e.exception.as_deref());
    }
    s
}

fn table_body(s: &mut String, m: &LogSummary) {
    let row = |s: &mut String, k: &str, v: &str| {
        let _ = writeln!(s, "  {k:<16} {v}");
    };
    let steps = match (m.first_step, m.last_step) {
        (Some(a), Some(b)) => {
            let of = m
                .train_iters
                .map(|n| format!(" of {n}"))
                .unwrap_or_default();
            format!(
                "{a}..{b}{of} ({} iteration lines, {} lines read)",
                m.steps_seen, m.lines
            )
        }
        _ => format!("none ({} lines read)", m.lines),
    };
    row(s, "steps", &steps);
    if !m.ranks.is_empty() {
        let ranks: Vec<String> = m.ranks.iter().map(u32::to_string).collect();
        row(s, "ranks", &ranks.join(", "));
    }
    row(s, "final losses", &final_losses(m));
    row(s, "iteration time", &iteration_time(m));
    row(s, "memory peak", &memory_peak(m));
    if m.long_lines > 0 {
        row(s, "long lines", &format!("{} cut to 64 KiB", m.long_lines));
    }
    checkpoints(s, m);
}

fn final_losses(m: &LogSummary) -> String {
    let losses: Vec<String> = m
        .metrics
        .iter()
        .filter(|(k, _)| k.contains("loss") && k.as_str() != "loss-scale")
        .filter_map(|(k, steps)| steps.last().map(|(step, v)| format!("{k} {v} @{step}")))
        .collect();
    if losses.is_empty() {
        "-".to_owned()
    } else {
        losses.join(", ")
    }
}

fn iteration_time(m: &LogSummary) -> String {
    let mut t: Vec<f64> = m
        .metrics
        .get(goldgate_schema::metric_names::ITERATION_TIME)
        .map(|s| s.values().collect())
        .unwrap_or_default();
    t.retain(|v| v.is_finite());
    let n = t.len();
    let Some(median) = goldgate_judge::compare::stats::summary::median(&t) else {
        return "-".to_owned();
    };
    format!("median {median:.4} s over {n} steps")
}

fn memory_peak(m: &LogSummary) -> String {
    if m.memory.is_empty() {
        return "-".to_owned();
    }
    let alloc = m
        .memory
        .iter()
        .map(|r| r.mb.max_allocated)
        .fold(f64::MIN, f64::max);
    let reserved = m
        .memory
        .iter()
        .map(|r| r.mb.max_reserved)
        .fold(f64::MIN, f64::max);
    let n = m.memory.len();
    format!("max allocated {alloc:.2} MB, max reserved {reserved:.2} MB ({n} reports)")
}

fn checkpoints(s: &mut String, m: &LogSummary) {
    if m.checkpoints.is_empty() {
        let _ = writeln!(s, "  {:<16} -", "checkpoints");
        return;
    }
    let _ = writeln!(s, "  checkpoints");
    let _ = writeln!(
        s,
        "    {:>9}  {:<5}  {:>19}  {:>14}  {:>15}",
        "iteration", "mode", "blocking min/max s", "saving→saved s", "async latency s"
    );
    for c in &m.checkpoints {
        let _ = writeln!(s, "    {}", checkpoint_row(c));
    }
    if m.overlapping_saves > 0 {
        let _ = writeln!(
            s,
            "    {} save(s) started before the previous one finished",
            m.overlapping_saves
        );
    }
}

fn checkpoint_row(c: &CheckpointSave) -> String {
    let secs = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    let blocking = match (c.blocking_min_s, c.blocking_max_s) {
        (Some(a), Some(b)) => format!("{a:.3} / {b:.3}"),
        _ => "-".to_owned(),
    };
    let mode = if c.is_async { "async" } else { "sync" };
    let done = if c.completed { "" } else { "  (not completed)" };
    format!(
        "{:>9}  {:<5}  {:>19}  {:>14}  {:>15}{done}",
        c.iteration,
        mode,
        blocking,
        secs(c.wall_s),
        secs(c.async_latency_s)
    )
}

/// Failure markers by kind and, for a log that ends in a traceback, its exception: a crash
/// with no marker (`RuntimeError: ...`) is a failure too.
fn failures(s: &mut String, m: &LogSummary, exception: Option<&str>) {
    if m.failure_counts.is_empty() {
        let what = exception.map_or("none".to_owned(), |e| format!("crash: {e}"));
        let _ = writeln!(s, "  {:<16} {what}", "failures");
        return;
    }
    let _ = writeln!(s, "  failures");
    for (kind, n) in &m.failure_counts {
        let retry = if kind.flaky() {
            "Megatron CI would retry"
        } else {
            "not retried"
        };
        let _ = writeln!(s, "    {:<22} {n} line(s), {retry}", kind.name());
    }
    if let Some(first) = m.failures.first() {
        let _ = writeln!(s, "    first: {}", first.line);
    }
    if let Some(e) = exception {
        let _ = writeln!(s, "    traceback: {e}");
    }
}
