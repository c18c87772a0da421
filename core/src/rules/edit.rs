//! Stage "plan", rules: writes calibrated tolerances into `goldgate.yaml` as a text edit, so
//! every comment, key order and blank line of the file survives (a serde round trip would
//! drop the comments). Only `rtol:` lines under `rules: <metric>:` are replaced or added; each
//! carries a `# calibrated …` comment saying where the number came from.

use std::collections::BTreeMap;

/// The file cannot be edited safely by line (flow-style `rules:`).
#[derive(Debug, PartialEq)]
pub struct EditError {
    /// 1-based line of the offending text.
    pub line: usize,
    pub message: String,
}

/// Sets `rtol` for each metric in `updates` under the top-level `rules:` mapping of `text`.
pub fn set_rtols(
    text: &str,
    updates: &BTreeMap<String, f64>,
    note: &str,
) -> Result<String, EditError> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let Some(r) = lines.iter().position(|l| is_key_line(l, 0, "rules")) else {
        let mut out = text.trim_end().to_string();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("rules:\n");
        for (metric, rtol) in updates {
            out.push_str(&new_entry(metric, *rtol, 2, note));
        }
        return Ok(out);
    };
    if let Some(v) = value_after_colon(&lines[r]).filter(|v| *v != "{}") {
        return Err(EditError {
            line: r + 1,
            message: format!("`rules: {v}` is not a block mapping; edit the rtol values by hand"),
        });
    }
    lines[r] = "rules:".to_string();
    for (metric, rtol) in updates {
        set_one(&mut lines, r, metric, *rtol, note)?;
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

fn set_one(
    lines: &mut Vec<String>,
    r: usize,
    metric: &str,
    rtol: f64,
    note: &str,
) -> Result<(), EditError> {
    let end = block_end(lines, r, 0);
    let indent = (r + 1..end)
        .find(|&i| is_content(&lines[i]))
        .map_or(2, |i| indent_of(&lines[i]));
    let Some(e) = (r + 1..end).find(|&i| is_key_line(&lines[i], indent, metric)) else {
        // Insert before trailing blank or comment lines that belong to what follows.
        let mut at = end;
        while at > r + 1 && !is_content(&lines[at - 1]) {
            at -= 1;
        }
        let entry = new_entry(metric, rtol, indent, note);
        for (k, l) in entry.lines().enumerate() {
            lines.insert(at + k, l.to_string());
        }
        return Ok(());
    };
    if let Some(v) = value_after_colon(&lines[e]) {
        return Err(EditError {
            line: e + 1,
            message: format!("rule `{metric}: {v}` is written inline; edit its rtol by hand"),
        });
    }
    let sub_end = block_end(lines, e, indent);
    let child = (e + 1..sub_end)
        .find(|&i| is_content(&lines[i]))
        .map_or(indent + 2, |i| indent_of(&lines[i]));
    let rtol_line = format!(
        "{}rtol: {}  # calibrated {note}",
        " ".repeat(child),
        trim(rtol)
    );
    match (e + 1..sub_end).find(|&i| is_key_line_any_value(&lines[i], child, "rtol")) {
        Some(i) => lines[i] = rtol_line,
        None => lines.insert(e + 1, rtol_line),
    }
    Ok(())
}

fn new_entry(metric: &str, rtol: f64, indent: usize, note: &str) -> String {
    let key = serde_json::to_string(metric).unwrap_or_else(|_| format!("\"{metric}\""));
    format!(
        "{}{key}:\n{}rtol: {}  # calibrated {note}\n",
        " ".repeat(indent),
        " ".repeat(indent + 2),
        trim(rtol)
    )
}

fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Not blank and not only a comment.
fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The first line after `start` that is content indented at most `indent` (the block's end).
fn block_end(lines: &[String], start: usize, indent: usize) -> usize {
    (start + 1..lines.len())
        .find(|&i| is_content(&lines[i]) && indent_of(&lines[i]) <= indent)
        .unwrap_or(lines.len())
}

/// `(key, rest after the colon)` of a `key: ...` line; the key unquoted.
fn split_key(line: &str) -> Option<(String, &str)> {
    let t = line.trim_start();
    if let Some(q) = t.strip_prefix('"') {
        let end = q.find('"')?;
        let rest = q[end + 1..].trim_start().strip_prefix(':')?;
        return Some((q[..end].to_string(), rest));
    }
    if let Some(q) = t.strip_prefix('\'') {
        let end = q.find('\'')?;
        let rest = q[end + 1..].trim_start().strip_prefix(':')?;
        return Some((q[..end].to_string(), rest));
    }
    let colon = t
        .find(": ")
        .or_else(|| t.ends_with(':').then(|| t.len() - 1))?;
    Some((t[..colon].trim_end().to_string(), &t[colon + 1..]))
}

/// The value text after `key:` without a trailing comment; `None` when empty.
fn value_after_colon(line: &str) -> Option<&str> {
    let (_, rest) = split_key(line)?;
    let v = rest.split(" #").next().unwrap_or("").trim();
    (!v.is_empty() && !v.starts_with('#')).then_some(v)
}

fn is_key_line_any_value(line: &str, indent: usize, key: &str) -> bool {
    is_content(line) && indent_of(line) == indent && split_key(line).is_some_and(|(k, _)| k == key)
}

/// A `key:` line (block value) at exactly `indent`.
fn is_key_line(line: &str, indent: usize, key: &str) -> bool {
    is_key_line_any_value(line, indent, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# top comment\ndefault_platform: dev_cpu\n\nrules:\n  # iteration time is noisy\n  iteration-time:\n    max_cv: 0.1 # keep\n    rtol: 0.05\n  \"lm loss\":\n    exact: true\n\n# variants below\nvariants: {}\n";

    fn updates(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn replaces_inserts_and_appends_keeping_comments() {
        let out = set_rtols(
            FILE,
            &updates(&[
                ("iteration-time", 0.072),
                ("lm loss", 0.01),
                ("checkpoint-blocking-time", 0.3),
            ]),
            "2026-11-30",
        )
        .unwrap();
        insta::assert_snapshot!(out);
        let v: serde_json::Value = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(v["rules"]["iteration-time"]["rtol"], 0.072);
        assert_eq!(v["rules"]["iteration-time"]["max_cv"], 0.1);
        assert_eq!(v["rules"]["lm loss"]["rtol"], 0.01);
        assert_eq!(v["rules"]["checkpoint-blocking-time"]["rtol"], 0.3);
        assert_eq!(v["default_platform"], "dev_cpu");
    }

    #[test]
    fn adds_a_rules_section_when_absent_and_refuses_flow_style() {
        let out = set_rtols("platforms: {}\n", &updates(&[("mtp_* loss", 0.02)]), "x").unwrap();
        let v: serde_json::Value = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(v["rules"]["mtp_* loss"]["rtol"], 0.02);
        let e = set_rtols(
            "rules: {lm loss: {rtol: 1}}\n",
            &updates(&[("lm loss", 0.1)]),
            "x",
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        let e = set_rtols(
            "rules:\n  lm loss: {rtol: 1}\n",
            &updates(&[("lm loss", 0.1)]),
            "x",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
    }
}
