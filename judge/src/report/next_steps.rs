//! Stage "report": what a reviewer can do next about a failing comparison, for the markdown
//! report: a `goldgate repro` command per failed, regressed or incomplete job, and a `goldgate
//! bless` command per regressed case for when the change is intended.

use std::path::{Path, PathBuf};

use goldgate_schema::{Comparison, JobComparison, Verdict};

/// Whether a job gets a `repro` line: it failed, regressed or lost a metric.
fn reproducible(v: Verdict) -> bool {
    matches!(
        v,
        Verdict::Regression | Verdict::MissingMetric | Verdict::JobFailed
    )
}

/// A word as a shell argument: bare when it holds only safe characters, else single-quoted.
/// Control characters are dropped, so a name cannot end the line.
fn shell_word(word: &str) -> String {
    let clean: String = word.chars().filter(|c| !c.is_control()).collect();
    let safe = !clean.is_empty()
        && clean
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./=,:+%-".contains(c));
    if safe {
        clean
    } else {
        format!("'{}'", clean.replace('\'', r"'\''"))
    }
}

/// `goldgate repro <case> --platform P [--variant AXIS=VALUE]...` for one job.
fn repro_line(job: &JobComparison, platform: &str) -> String {
    let mut words = vec![
        "goldgate repro".to_string(),
        shell_word(&job.case),
        "--platform".into(),
        shell_word(platform),
    ];
    if job.variant != "default" {
        for choice in job.variant.split(',') {
            words.push("--variant".into());
            words.push(shell_word(choice));
        }
    }
    words.join(" ")
}

/// The run folder (`OUT/<run-id>`) of a job's record `OUT/<run-id>/<case>/<slug>/<n>/results.json`,
/// when the path has that shape.
fn run_dir(job: &JobComparison) -> Option<PathBuf> {
    let record = job.records.first()?;
    let below = format!("{}/{}", job.case, job.variant_slug);
    let repeat = record.parent()?;
    let variant = repeat.parent()?;
    let depth = below.split('/').count();
    let run = variant.ancestors().nth(depth)?;
    (variant.strip_prefix(run).ok()? == Path::new(&below)).then(|| run.to_path_buf())
}

/// `goldgate bless --from <run> <case>` for one regressed case.
fn bless_line(job: &JobComparison, platform: &str) -> String {
    let from = run_dir(job).map_or_else(
        || "<results>".to_string(),
        |p| shell_word(&p.to_string_lossy()),
    );
    format!(
        "goldgate bless --from {from} --platform {} {}",
        shell_word(platform),
        shell_word(&job.case)
    )
}

/// A fenced code block around `lines`, its fence longer than any backtick run inside.
fn fenced(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}sh\n{}\n{fence}\n", lines.join("\n"))
}

/// The "Reproduce locally" and "If the regression is intended" sections; empty when every job
/// passed.
pub(crate) fn render(c: &Comparison) -> String {
    let repro: Vec<String> = c
        .jobs
        .iter()
        .filter(|j| reproducible(j.verdict))
        .map(|j| repro_line(j, &c.platform))
        .collect();
    let mut bless: Vec<String> = c
        .jobs
        .iter()
        .filter(|j| j.verdict == Verdict::Regression)
        .map(|j| bless_line(j, &c.platform))
        .collect();
    bless.dedup();
    let mut out = String::new();
    if !repro.is_empty() {
        out.push_str(
            "\n**Reproduce locally** (`goldgate repro` prints a bash script that runs the job \
             as the gate ran it):\n\n",
        );
        out.push_str(&fenced(&repro));
    }
    if !bless.is_empty() {
        out.push_str(
            "\n**If the regression is intended**, bless the new values into the golden file \
             (`--dry-run` shows the diff first):\n\n",
        );
        out.push_str(&fenced(&bless));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn a_line_per_failing_job_and_a_bless_per_regressed_case() {
        let out = render(&fixtures::comparison());
        assert!(
            out.contains(
                "goldgate repro gpt/gpt3_mcore_te_tp1_pp1_ckpt_resume --platform dgx_h100 \
                 --variant allocator=gc80 --variant checkpoint=async\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("goldgate repro moe/mixtral_8x7b_tp4_ep8 --platform dgx_h100\n"),
            "{out}"
        );
        assert!(
            out.contains(
                "goldgate bless --from results/20261130-062900-abcd --platform dgx_h100 \
                 gpt/gpt3_mcore_te_tp1_pp1_ckpt_resume\n"
            ),
            "{out}"
        );
        // Passing, improved, unstable and golden-less jobs get no repro line.
        let lines = out
            .lines()
            .filter(|l| l.starts_with("goldgate repro "))
            .count();
        assert_eq!(lines, 2, "{out}");
    }

    #[test]
    fn all_pass_has_no_next_steps() {
        let mut c = fixtures::comparison();
        c.jobs.truncate(1);
        assert_eq!(render(&c), "");
    }

    #[test]
    fn hostile_names_are_quoted_and_cannot_close_the_fence() {
        let mut c = fixtures::comparison();
        c.jobs[5].case = "moe/x y'``` @team\n`rm`".into();
        let out = render(&c);
        assert!(out.contains(r"'moe/x y'\''``` @team`rm`'"), "{out}");
        let fence_lines = out.lines().filter(|l| l.starts_with("````")).count();
        assert_eq!(fence_lines, 2, "{out}");
    }

    #[test]
    fn a_record_outside_the_usual_layout_gives_a_placeholder() {
        let mut c = fixtures::comparison();
        c.jobs[1].records = vec!["elsewhere/results.json".into()];
        assert!(render(&c).contains("bless --from <results> "));
    }
}
