//! `goldgate report`: renders recorded runs without judging them — the variant comparison on
//! the terminal, and optionally a markdown report and one SVG memory timeline per job.

use std::path::{Path, PathBuf};

use super::error::AppError;
use super::output::{out, outln};
use goldgate_core::fsio::write_atomic;
use goldgate_judge::report::{ReportError, summary, svg, variants};
use goldgate_schema::Comparison;
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

/// Arguments of `goldgate report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several (then the newest run is
    /// shown; see `--all-runs` and `--run`). Default `results`, where `goldgate run` puts runs.
    #[arg(long, default_value = "results")]
    pub results: std::path::PathBuf,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    /// Write one SVG memory timeline per job into this folder.
    #[arg(long)]
    pub svg: Option<std::path::PathBuf>,
    /// Write the markdown report here.
    #[arg(long)]
    pub markdown: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
}

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    write_atomic(path, text.as_bytes()).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// [`write`] of a file in the folder `dir` goldgate owns (`--svg DIR`): no link on the way.
fn write_in(dir: &Path, path: &Path, text: &str) -> Result<(), ReportError> {
    goldgate_core::fsio::write_under(dir, path, text.as_bytes()).map_err(|source| {
        ReportError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Writes `<dir>/<run id>__<case slug>__<variant slug>__<repeat>.svg` for every record (atomically) and
/// returns the paths in record order. `goldgate run`/`compare` call this to fill
/// `JobComparison::svg`.
fn write_svgs(dir: &Path, records: &[&RunRecord]) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    records
        .iter()
        .map(|r| {
            let path = dir.join(svg::file_name(r));
            write_in(dir, &path, &svg::render(r)?)?;
            Ok(path)
        })
        .collect()
}

/// Writes the timeline of each job's first repeat into `dir` and records it in
/// `JobComparison::svg`, so the markdown links it. `records` are the loaded results
/// (`records::load_results`); a job is matched by its `records` paths. For
/// `goldgate compare --svg DIR` / `goldgate run`, which the integrator wires.
pub fn attach_svgs(
    comparison: &mut Comparison,
    records: &[(PathBuf, RunRecord)],
    dir: &Path,
) -> Result<(), ReportError> {
    for job in &mut comparison.jobs {
        let first = job
            .records
            .iter()
            .find_map(|p| records.iter().find(|(path, _)| path == p));
        if let Some((_, record)) = first {
            let written = write_svgs(dir, &[record])?;
            job.svg = written.into_iter().next();
        }
    }
    Ok(())
}

/// The SVG folder as a link prefix relative to the markdown file's folder when it lies
/// inside it, else as given.
fn svg_link_prefix(svg_dir: &Path, markdown: &Path) -> String {
    let md_dir = markdown.parent().unwrap_or(Path::new(""));
    let rel = svg_dir.strip_prefix(md_dir).unwrap_or(svg_dir);
    rel.to_string_lossy().replace('\\', "/")
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let loaded = args.pick.load(&args.results, "showing")?;
    let records: Vec<&RunRecord> = loaded.iter().map(|(_, r)| r).collect();
    let order = variants::VariantOrder::from_config(&args.config.load()?);
    out!(
        "{}",
        variants::render_terminal(&variants::build(records.iter().copied(), &order))
    );
    if let Some(dir) = &args.svg {
        let written = write_svgs(dir, &records)?;
        outln!("wrote {} SVG timelines to {}", written.len(), dir.display());
    }
    if let Some(md) = &args.markdown {
        let prefix = args.svg.as_deref().map(|d| svg_link_prefix(d, md));
        write(md, &summary::render(&records, &order, prefix.as_deref()))?;
        outln!("wrote {}", md.display());
    }
    Ok(Exit::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_svgs_links_each_job_to_its_first_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let mut records = Vec::new();
        for repeat in [1, 2] {
            let v = goldgate_judge::report::fixtures::variant(&[]);
            let r = goldgate_judge::report::fixtures::record(
                v,
                repeat,
                goldgate_judge::report::fixtures::SYNC,
                0.0,
            );
            records.push((dir.path().join(r.rel_dir()).join("results.json"), r));
        }
        let job = goldgate_schema::JobComparison {
            case: goldgate_judge::report::fixtures::CASE.into(),
            variant: "default".into(),
            variant_slug: "default".into(),
            job_ids: vec![],
            outcome: "passed".into(),
            failure_line: None,
            log_tail: Vec::new(),
            log: None,
            verdict: goldgate_schema::Verdict::Pass,
            golden_path: None,
            config_path: None,
            metrics: vec![],
            records: records.iter().map(|(p, _)| p.clone()).collect(),
            svg: None,
            wall_seconds: None,
        };
        let mut orphan = job.clone();
        orphan.records = vec![dir.path().join("elsewhere/results.json")];
        let mut c = Comparison::new("dev_cpu".into(), vec![job, orphan], vec![]);
        let svg_dir = dir.path().join("svg");
        attach_svgs(&mut c, &records, &svg_dir).unwrap();
        let want = svg_dir
            .join("20261130-062900-abcd__gpt-gpt3_mcore_te_tp1_pp1_ckpt_resume__default__1.svg");
        assert_eq!(c.jobs[0].svg.as_ref(), Some(&want));
        assert!(want.is_file());
        assert_eq!(c.jobs[1].svg, None);
    }

    #[test]
    fn svg_links_are_relative_to_the_markdown_file() {
        let cases = [
            ("out/svg", "out/report.md", "svg"),
            ("svg", "report.md", "svg"),
            ("/tmp/a/svg", "/tmp/b/report.md", "/tmp/a/svg"),
        ];
        for (svg, md, want) in cases {
            assert_eq!(svg_link_prefix(Path::new(svg), Path::new(md)), want);
        }
    }
}
