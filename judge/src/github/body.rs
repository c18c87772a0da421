//! Stage "report" (PR comment bot): the comment's wrapper around the markdown report: the
//! hidden sticky marker, the run link and GitHub's size limit.
//!
//! The report itself comes from [`crate::report::markdown::render`], which escapes text from
//! logs, cases and variants with [`crate::report::markdown::escape_md`]; this module only
//! frames it and adds nothing untrusted (the key and the run URL are validated). Cutting
//! happens at line boundaries (a markdown table row is one line), keeps `<details>` blocks
//! and code fences closed, and says what was left out.

use super::error::GithubError;

/// GitHub refuses comment bodies over 65,536 characters. We count bytes, which are never
/// fewer than characters or UTF-16 units, so a body under this is under GitHub's limit.
pub const MAX_COMMENT_BYTES: usize = 65_536;

/// The hidden first line that identifies the bot's comment for `key`.
pub fn marker(key: &str) -> String {
    format!("<!-- goldgate:sticky key={key} -->")
}

/// Checks a comment key: 1 to 100 of `A-Za-z0-9._:/+-`, no `--` (it would end the marker).
pub fn validate_key(key: &str) -> Result<(), GithubError> {
    let ok = !key.is_empty()
        && key.len() <= 100
        && !key.contains("--")
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/+-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(GithubError::BadKey(key.to_string()))
    }
}

/// Whether a comment body is the bot's comment for `key`: it starts with the exact marker.
/// A comment that quotes the marker (`> <!-- ...`) does not start with it.
pub(crate) fn is_sticky(body: &str, key: &str) -> bool {
    body.strip_prefix(&marker(key))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n"))
}

/// The complete comment: marker, the report, the run link, cut to [`MAX_COMMENT_BYTES`].
pub fn compose(key: &str, report: &str, run_url: Option<&str>) -> String {
    compose_within(key, report, run_url, MAX_COMMENT_BYTES)
}

/// [`compose`] with an explicit limit (tests use small ones).
fn compose_within(key: &str, report: &str, run_url: Option<&str>, limit: usize) -> String {
    let head = format!("{}\n", marker(key));
    let tail = match run_url.filter(|u| is_plain_url(u)) {
        Some(url) => format!("\n<sub>[Workflow run]({url}) · posted by `goldgate comment`</sub>\n"),
        None => "\n<sub>posted by `goldgate comment`</sub>\n".to_string(),
    };
    let report = format!("{}\n", report.trim_end());
    if head.len() + report.len() + tail.len() <= limit {
        return format!("{head}{report}{tail}");
    }
    let room = limit.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", cut_report(&report, room))
}

/// A URL that cannot break out of `[..](..)`.
fn is_plain_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() <= 400
        && !url.contains(|c: char| c.is_whitespace() || c.is_control() || "()<>\"'`".contains(c))
}

/// Open blocks at a cut point, so the kept part can be closed properly.
#[derive(Default, Clone)]
struct Open {
    details: usize,
    fence: Option<String>,
}

impl Open {
    fn after(&self, line: &str) -> Open {
        let mut next = self.clone();
        let t = line.trim();
        if let Some(f) = &self.fence {
            if t.starts_with(f.as_str())
                && t.trim_start_matches(f.chars().next().unwrap_or('`'))
                    .is_empty()
            {
                next.fence = None;
            }
            return next;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            let ch = t.chars().next().unwrap_or('`');
            next.fence = Some(t.chars().take_while(|&c| c == ch).collect());
            return next;
        }
        let lower = t.to_ascii_lowercase();
        next.details += lower.matches("<details").count();
        next.details = next
            .details
            .saturating_sub(lower.matches("</details>").count());
        next
    }

    fn closers(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.fence {
            s.push_str(f);
            s.push('\n');
        }
        s.push_str(&"\n</details>\n".repeat(self.details));
        s
    }
}

/// Keeps whole lines of `report` while they, the closers and the note fit in `room` bytes.
fn cut_report(report: &str, room: usize) -> String {
    let lines: Vec<&str> = report.split_inclusive('\n').collect();
    let (mut kept, mut open, mut used) = (0usize, Open::default(), 0usize);
    for line in &lines {
        let next = open.after(line);
        let rest = &lines[kept + 1..];
        let need = used + line.len() + next.closers().len() + cut_note(rest).len();
        if need > room {
            break;
        }
        used += line.len();
        open = next;
        kept += 1;
    }
    let mut out: String = lines[..kept].concat();
    out.push_str(&open.closers());
    out.push_str(&cut_note(&lines[kept..]));
    out
}

/// The note that says what a cut left out.
fn cut_note(omitted: &[&str]) -> String {
    let rows = omitted.iter().filter(|l| is_table_row(l)).count();
    format!(
        "\n> [!NOTE]\n> This comment was cut to stay under GitHub's 65,536-character limit: \
         {} more line(s), {rows} of them table row(s), are left out. \
         The full report is in the workflow run's job summary and artifacts.\n",
        omitted.len()
    )
}

/// A table row that holds data (not the `|---|` separator).
fn is_table_row(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && !t.chars().all(|c| "|-: ".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn composed_body_never_exceeds_the_limit(rows in 0usize..400, width in 1usize..300, limit in 600usize..20_000) {
            let mut report = String::from("## goldgate\n\n<details><summary>rest</summary>\n\n| a | b |\n|---|---|\n");
            for i in 0..rows {
                report.push_str(&format!("| {} | {i} |\n", "x".repeat(width)));
            }
            report.push_str("\n</details>\n");
            let body = compose_within("k", &report, Some("https://github.com/o/r/actions/runs/1"), limit);
            prop_assert!(body.len() <= limit, "{} > {}", body.len(), limit);
            prop_assert!(body.starts_with("<!-- goldgate:sticky key=k -->\n"));
            prop_assert_eq!(body.matches("<details").count(), body.matches("</details>").count());
        }
    }

    #[test]
    fn marker_matching_is_exact() {
        let body = compose("h100", "all good", None);
        assert!(is_sticky(&body, "h100"));
        assert!(!is_sticky(&body, "h10"));
        assert!(!is_sticky(&format!("> {body}"), "h100"));
        assert!(is_sticky(&marker("a100"), "a100"));
        assert!(validate_key("h100/nightly.1").is_ok());
        for bad in ["", "a b", "a-->", "x--y", "<k>"] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cut_keeps_whole_rows_closes_blocks_and_counts_what_is_left_out() {
        let mut report = String::from("# head\n\n<details><summary>s</summary>\n\n```\nlog\n");
        report.push_str("```\n\n| case | value |\n|---|---|\n");
        for i in 0..100 {
            report.push_str(&format!("| case-{i:03} | {i} |\n"));
        }
        report.push_str("\n</details>\n");
        let body = compose_within("k", &report, None, 1200);
        assert!(body.len() <= 1200);
        let kept_rows = body.lines().filter(|l| l.starts_with("| case-")).count();
        assert!(kept_rows > 10 && kept_rows < 100, "{kept_rows}");
        assert!(body.contains(&format!("{} of them table row(s)", 100 - kept_rows)));
        for line in body.lines().filter(|l| l.starts_with("| case-")) {
            assert!(line.ends_with(" |"), "row cut mid-way: {line}");
        }
        assert_eq!(
            body.matches("<details>").count(),
            body.matches("</details>").count()
        );
    }

    #[test]
    fn cut_body_snapshot() {
        let mut report = String::from("## ❌ goldgate: regression\n\n### Regressions (40)\n\n");
        report.push_str("| case | metric | verdict |\n|---|---|---|\n");
        for i in 0..40 {
            report.push_str(&format!(
                "| gpt/case\\_{i:02} | lm loss | **regression** |\n"
            ));
        }
        report.push_str("\n<details><summary>200 passing metrics</summary>\n\n| a |\n|---|\n| b |\n\n</details>\n");
        let url = "https://github.com/o/r/actions/runs/77";
        insta::assert_snapshot!(compose_within("dgx_h100", &report, Some(url), 1200));
    }

    #[test]
    fn cut_inside_a_fence_closes_it() {
        let mut report = String::from("```text\n");
        for i in 0..200 {
            report.push_str(&format!("log line {i}\n"));
        }
        report.push_str("```\n");
        let body = compose_within("k", &report, None, 900);
        assert!(body.len() <= 900);
        assert_eq!(body.matches("```").count() % 2, 0, "{body}");
    }

    #[test]
    fn run_link_only_when_it_is_a_plain_url() {
        let with = compose("k", "r", Some("https://github.com/o/r/actions/runs/9"));
        assert!(with.contains("[Workflow run](https://github.com/o/r/actions/runs/9)"));
        let evil = compose("k", "r", Some("https://x) [click](https://evil"));
        assert!(!evil.contains("evil"));
    }
}
