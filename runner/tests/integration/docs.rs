//! The documentation holds together: every relative link in README.md, CHANGELOG.md and the
//! Markdown under `docs/` names a file that exists (and, for a `#fragment` into a Markdown
//! file, a heading it has); every page of the book under `docs/book/src/` is in its
//! `SUMMARY.md` and every entry there exists; README stays a short front page whose layout
//! names every crate, whose exit codes are `--help`'s and whose tour runs real commands.
//!
//! mdBook renders the book in `.ci/run`; this test is the link check that runs everywhere
//! `cargo test` does, and it reads links as GitHub resolves them (relative to the file).

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The repository root (the workspace folder above `runner/`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let ticks: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        if ticks.len() >= 3 {
            match &fence {
                None => fence = Some(ticks),
                Some(open) if ticks.starts_with(open.as_str()) && trimmed.len() == ticks.len() => {
                    fence = None
                }
                Some(_) => {}
            }
            out.push('\n');
            continue;
        }
        if fence.is_none() {
            let mut in_code = false;
            for c in line.chars() {
                if c == '`' {
                    in_code = !in_code;
                } else if !in_code {
                    out.push(c);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// `[text](target)` targets, in order.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("](") {
        let start = i + at + 2;
        let mut depth = 1;
        let mut end = start;
        while end < bytes.len() && depth > 0 {
            match bytes[end] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b'\n' => break,
                _ => {}
            }
            end += 1;
        }
        if depth == 0 {
            let target = text[start..end - 1].split_whitespace().next().unwrap_or("");
            out.push(target.to_string());
        }
        i = end.max(start);
    }
    out
}

/// GitHub's (and mdBook's) id for a heading: lowercase, punctuation dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(text: &str) -> BTreeSet<String> {
    let prose_lines = prose_headings(text);
    prose_lines.iter().map(|h| slug(h)).collect()
}

/// Heading texts outside code blocks (inline code kept: GitHub slugs its text).
fn prose_headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if !fence && line.starts_with('#') {
            let text = line.trim_start_matches('#');
            if text.starts_with(' ') {
                out.push(text.replace('`', ""));
            }
        }
    }
    out
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken relative link in `file`, as `file: target (why)`.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    let mut out = Vec::new();
    for target in links(&prose(&text)) {
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalize(&dir.join(path))
        };
        let name = file
            .strip_prefix(repo())
            .unwrap_or(file)
            .display()
            .to_string();
        if !resolved.exists() {
            out.push(format!("{name}: {target} (no such file)"));
            continue;
        }
        if let Some(fragment) = fragment
            && resolved.extension().is_some_and(|e| e == "md")
        {
            let ids = headings(&std::fs::read_to_string(&resolved).unwrap());
            if !ids.contains(fragment) {
                out.push(format!("{name}: {target} (no heading with that id)"));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let root = repo();
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    markdown_files(&root.join("docs"), &mut files);
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_book_page_is_in_the_summary_and_every_entry_exists() {
    let src = repo().join("docs/book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|t| normalize(&src.join(t)))
        .collect();
    let mut pages = Vec::new();
    markdown_files(&src, &mut pages);
    let pages: BTreeSet<PathBuf> = pages
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "SUMMARY.md"))
        .collect();
    let missing: Vec<_> = pages.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "book pages not in SUMMARY.md: {missing:?}"
    );
    let absent: Vec<_> = listed.iter().filter(|p| !p.exists()).collect();
    assert!(
        absent.is_empty(),
        "SUMMARY.md entries without a page: {absent:?}"
    );
}

/// The text of README's `## <name>` section, up to the next `## ` heading.
fn readme_section<'a>(readme: &'a str, name: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {name}\n"))
        .unwrap_or_else(|| panic!("README.md has no `## {name}` section"));
    let body = &readme[start + name.len() + 5..];
    &body[..body.find("\n## ").unwrap_or(body.len())]
}

/// Every workspace member as (folder, package name), from the root `Cargo.toml` and each
/// member's own.
fn workspace_members() -> Vec<(String, String)> {
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let line = root.lines().find(|l| l.starts_with("members = [")).unwrap();
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .map(|dir| {
            let manifest = std::fs::read_to_string(repo().join(&dir).join("Cargo.toml")).unwrap();
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .unwrap()
                .trim_matches('"')
                .to_owned();
            (dir, name)
        })
        .collect()
}

#[test]
fn readme_opens_with_the_two_commands_and_stays_a_front_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let first_block = readme.split("```").nth(1).unwrap();
    assert!(
        first_block.contains("goldgate run demo/ckpt-demo"),
        "{first_block}"
    );
    assert!(
        first_block.contains("cargo test --workspace --locked"),
        "{first_block}"
    );
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: move detail into the book"
    );
}

#[test]
fn readme_layout_names_every_crate_with_its_folder_and_package() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let layout = readme_section(&readme, "Layout");
    let members = workspace_members();
    assert!(members.len() >= 5, "{members:?}");
    for (dir, package) in members {
        let folder = format!("`{dir}/`");
        let row = layout
            .lines()
            .find(|l| l.starts_with(&format!("| {folder} |")));
        match row {
            Some(row) => assert!(
                row.contains(&format!("`{package}`")),
                "README's Layout row for {folder} does not name its crate `{package}`: {row}"
            ),
            // The workloads are named in the text after the table, not as crates of goldgate.
            None => assert!(
                dir.starts_with("workloads/") && layout.contains(&folder),
                "README's Layout does not name the workspace member {folder} ({package})"
            ),
        }
    }
}

#[test]
fn readme_exit_codes_are_the_documented_ones() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let rows: Vec<String> = readme_section(&readme, "Exit codes")
        .lines()
        .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
        .map(|l| l.replace('`', ""))
        .collect();
    let documented = goldgate_schema::Exit::ALL;
    assert_eq!(rows.len(), documented.len(), "{rows:?}");
    for (row, exit) in rows.iter().zip(documented) {
        let expected = format!("| {} | {}", exit.code(), exit.meaning());
        assert!(
            row.starts_with(&expected),
            "README's exit-code row\n  {row}\nsays otherwise than --help:\n  {expected}"
        );
    }
}

#[test]
fn every_command_in_the_readme_tour_exists() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let tour = readme_section(&readme, "A five-minute tour");
    let block = tour.split("```").nth(1).unwrap();
    let commands: BTreeSet<&str> = block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("goldgate "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert!(commands.len() >= 5, "{commands:?}");
    for command in commands {
        let out = crate::common::cli::goldgate()
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README's tour runs `goldgate {command}`, which `goldgate {command} --help` does not know:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The commands page names every command `goldgate --help` lists.
#[test]
fn the_commands_page_names_every_command() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_goldgate"))
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    let page = std::fs::read_to_string(repo().join("docs/book/src/reference/cli.md")).unwrap();
    let missing: Vec<&&str> = (commands.iter())
        .filter(|c| !page.contains(&format!("| `goldgate {c}")))
        .collect();
    assert!(missing.is_empty(), "cli.md lacks {missing:?}");
}

/// `goldgate.yaml`'s comments point at pages that exist, not at README sections (README is a
/// front page and keeps none of them).
#[test]
fn the_shipped_configs_comments_point_at_pages_that_exist() {
    let config = std::fs::read_to_string(repo().join("goldgate.yaml")).unwrap();
    let mut named = 0;
    for (n, line) in config.lines().enumerate() {
        let Some(comment) = line.split_once('#').map(|(_, c)| c) else {
            continue;
        };
        assert!(
            !comment.contains("README"),
            "goldgate.yaml:{}: {line}",
            n + 1
        );
        for word in comment.split(|c: char| c.is_whitespace() || "(),;\"".contains(c)) {
            let path = word.trim_end_matches(['.', ':']);
            if path.starts_with("docs/") {
                named += 1;
                assert!(
                    repo().join(path).exists(),
                    "goldgate.yaml:{}: {path}",
                    n + 1
                );
            }
        }
    }
    assert!(named >= 2, "the comments name {named} pages");
}

#[test]
fn the_checks_catch_what_they_are_for() {
    assert_eq!(
        links("see [a](x.md#y) and [b](<z>) `[c](no.md)`"),
        ["x.md#y", "<z>", "no.md"]
    );
    assert_eq!(links(&prose("see `[c](no.md)` and [d](d.md)")), ["d.md"]);
    assert_eq!(
        slug("Statistics: the two-sample test (`test: two-sample`)"),
        "statistics-the-two-sample-test-test-two-sample"
    );
    assert_eq!(
        normalize(Path::new("a/b/../c/./d.md")),
        PathBuf::from("a/c/d.md")
    );
}

/// The Megatron guide's commands work pasted in the order written: the placeholders the cases
/// name (`MEGATRON_LM_DIR`, `DATA_PATH`) are exported before the first `goldgate` command, so
/// no case is checked, listed or planned with them unset.
#[test]
fn the_megatron_guide_exports_the_placeholders_before_any_goldgate_command() {
    let page = std::fs::read_to_string(repo().join("docs/book/src/guide/megatron.md")).unwrap();
    let block = page
        .split("```bash\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let lines: Vec<&str> = block.lines().map(str::trim_start).collect();
    let first_goldgate = lines.iter().position(|l| l.starts_with("goldgate "));
    for name in ["MEGATRON_LM_DIR", "DATA_PATH"] {
        let export = lines
            .iter()
            .position(|l| l.starts_with("export ") && l.contains(&format!(" {name}=")));
        assert!(
            export.is_some() && export < first_goldgate,
            "{name} is exported after the first goldgate command:\n{block}"
        );
    }
}

/// The gating and blessing guides say the same of where a variant's golden file lives: each
/// variant has its own, under `<model>/<case>/variants/<non-default choices>/`, the folder
/// `bless` writes and `compare` reads (`golden::VARIANTS_DIR`).
#[test]
fn gating_and_bless_agree_that_each_variant_has_its_own_golden_file() {
    let folder = format!(
        "<model>/<case>/{}/<non-default choices>/",
        goldgate_core::golden::VARIANTS_DIR
    );
    for page in ["gating.md", "bless.md"] {
        let path = repo().join("docs/book/src/guide").join(page);
        let text = std::fs::read_to_string(&path).unwrap().replace('\n', " ");
        assert!(text.contains(&folder), "{page} does not name {folder}");
    }
}
