//! The pipeline's shape. Across crates Cargo enforces it: `goldgate-core` (the base and the
//! readers), `goldgate-record` (plan, launch, observe, metrics, run) and `goldgate-judge`
//! (compare, report, github, history) each depend only on the crates below them, and this test
//! checks, with `cargo tree`, that neither core nor judge pulls in NVML, rustix or the
//! recording crate. Within and across crates it is checked on the source: every `crate::`,
//! `goldgate_core::`, `goldgate_record::` and `goldgate_judge::` path in `core/src`,
//! `record/src`, `judge/src` and `runner/src` (test code left out) must point along
//! `case → plan → launch → observe → metrics → compare → report` or to a shared base module;
//! `run` orchestrates (it may use every stage up to `metrics`, and only `cmd` uses it); `github`
//! sits aside (only `cmd` uses it); `cmd` is on top and nothing uses it. The top-level module
//! graph must have no cycle, and neither may the module files of any folder (`page.rs` using
//! `plot.rs` and `plot.rs` using `page.rs`, also through `mod.rs`'s re-exports). No non-test
//! function is longer than 60 lines, and `cmd/run.rs` stays at 200 lines or fewer.

#![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules every stage may use; they use no stage.
const BASE: &[&str] = &["fsio", "duration", "printable", "hash", "redact", "units"];

/// Pipeline stages in order; a stage may use its own rank and earlier ones. `golden` reads
/// and writes the case stage's golden files; `config` is the plan stage's schema and `rules`
/// its metric rules (schema, matching, the `calibrate --write` edit). The base's readers sit
/// at the rank of the stage they read for: `log` and `tensorboard` (what a job wrote) at
/// `observe`'s, `records` (loading `results.json` and `run.json`) at `metrics`'.
const STAGES: &[(&str, u32)] = &[
    ("case", 1),
    ("golden", 1),
    ("config", 2),
    ("rules", 2),
    ("plan", 3),
    ("launch", 4),
    ("observe", 5),
    ("log", 5),
    ("tensorboard", 5),
    ("metrics", 6),
    ("records", 6),
    ("compare", 7),
    ("history", 7),
    ("report", 8),
];

fn rank(module: &str) -> Option<u32> {
    STAGES.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

fn rank_of(module: &str) -> u32 {
    rank(module).unwrap()
}

/// Why `from` may not use `to`, or `None` when it may.
fn violation(from: &str, to: &str) -> Option<&'static str> {
    if BASE.contains(&to) {
        return BASE
            .contains(&from)
            .then_some("a base module uses no other module");
    }
    match (from, to) {
        (_, "cmd") => Some("nothing below the commands uses `cmd`"),
        ("cmd", _) => None,
        (_, "run") => Some("only `cmd` uses the `run` stage"),
        (_, "github") => Some("only `cmd` uses `github`"),
        ("run", to) => (rank_of(to) > rank_of("metrics"))
            .then_some("`run` orchestrates the stages up to `metrics` only"),
        ("github", to) => (rank_of(to) > rank_of("report"))
            .then_some("`github` uses the stages up to `report` only"),
        (from, _) if BASE.contains(&from) => Some("a base module uses no other module"),
        (from, to) => (rank_of(to) > rank_of(from)).then_some("a stage never uses a later one"),
    }
}

/// The workspace's crates with stage code: (folder, package).
const CRATES: &[(&str, &str)] = &[
    ("core", "goldgate-core"),
    ("record", "goldgate-record"),
    ("judge", "goldgate-judge"),
    ("runner", "goldgate"),
];

/// The workspace root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every crate's `src` folder with its Rust files.
fn crate_sources() -> Vec<(PathBuf, Vec<PathBuf>)> {
    CRATES
        .iter()
        .map(|(dir, _)| {
            let root = workspace().join(dir).join("src");
            let mut files = Vec::new();
            rust_files(&root, &mut files);
            (root, files)
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The attributes that make a module test code: tests only, or test helpers other crates'
/// unit tests use too (the `fixtures` feature).
const TEST_CFGS: &[&str] = &["#[cfg(test)]", "#[cfg(any(test, feature = \"fixtures\"))]"];

/// Files that are test code as a whole: declared `#[cfg(test)] mod name;` in their parent.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if TEST_CFGS.contains(&pair[0])
                && let Some(name) = ["mod ", "pub(crate) mod ", "pub mod "]
                    .iter()
                    .find_map(|p| pair[1].strip_prefix(p))
                    .and_then(|r| r.strip_suffix(';'))
            {
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// Where a file's test module starts: its `#[cfg(test)]` line followed, after other
/// attributes, by `mod tests` (the end of the file when it has none).
fn tests_start(text: &str) -> usize {
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim_end() == "#[cfg(test)]" {
            let mut rest = lines.clone().map(str::trim);
            if rest.find(|l| !l.starts_with("#[")) == Some("mod tests {") {
                return at;
            }
        }
        at += line.len();
    }
    text.len()
}

/// The production part of a file: up to its `#[cfg(test)] mod tests`, comments removed.
fn production_code(text: &str) -> String {
    text[..tests_start(text)]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How code names a top-level stage module: its own crate's or another goldgate crate's.
/// (`goldgate_schema::` is the contract below every stage, not a stage.)
const STAGE_ROOTS: &[&str] = &[
    "crate::",
    "goldgate_core::",
    "goldgate_record::",
    "goldgate_judge::",
];

/// The top-level modules a piece of code names through `crate::` or a goldgate crate's name,
/// including `crate::{a, b::c}` groups.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let uses = STAGE_ROOTS
        .iter()
        .flat_map(|root| code.match_indices(root).map(|(i, _)| i + root.len()));
    for start in uses {
        let rest = &code[start..];
        if let Some(group) = rest.strip_prefix('{') {
            for item in group_items(group) {
                let head = item.trim().split("::").next().unwrap_or("");
                if !head.is_empty() {
                    out.insert(head.trim().to_owned());
                }
            }
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !head.is_empty() {
                out.insert(head);
            }
        }
    }
    out
}

/// The items of a `{a, b::{c, d}}` group, given the text after its `{`: split at the commas
/// outside nested groups, up to the group's own `}`.
fn group_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// Top-level module → the modules it uses, with one file that shows each use.
fn module_graph() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (root, files) in crate_sources() {
        crate_graph(&root, &files, &mut graph);
    }
    graph
}

/// One crate's part of [`module_graph`]: its paths to stage modules.
fn crate_graph(
    root: &Path,
    files: &[PathBuf],
    graph: &mut BTreeMap<String, BTreeMap<String, PathBuf>>,
) {
    let tests = test_only_files(files);
    for file in files.iter().filter(|f| !tests.contains(*f)) {
        let rel = file.strip_prefix(root).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.trim_end_matches(".rs").to_owned();
        if top == "lib" || top == "main" {
            continue;
        }
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        for used in crate_modules(&code).into_iter().filter(|m| *m != top) {
            graph
                .entry(top.clone())
                .or_default()
                .entry(used)
                .or_insert_with(|| file.strip_prefix(workspace()).unwrap().to_path_buf());
        }
    }
}

/// The longest a non-test function's body may be, in lines (the style guide's rule).
const MAX_FN_LINES: usize = 60;

/// Every non-test function of `text` (rustfmt-formatted: the body closes with `}` at the
/// `fn` line's indentation) as (first line, name, body lines). A function with a
/// `#[cfg(test)]` or `#[test]` attribute is test code and left out.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text[..tests_start(text)].lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let Some(name) = fn_name(code) else { continue };
        let attrs = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with("#[") || l.starts_with("///"));
        if attrs
            .into_iter()
            .any(|a| a == "#[cfg(test)]" || a == "#[test]")
        {
            continue;
        }
        let Some(open) = (i..lines.len()).find(|&k| {
            let l = lines[k].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue; // a declaration or a one-line body
        }
        let close = (open + 1..lines.len()).find(|&k| lines[k] == format!("{indent}}}"));
        if let Some(close) = close {
            out.push((i + 1, name, close - open - 1));
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(code: &str) -> Option<String> {
    let mut rest = code;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let name: String = rest
        .strip_prefix("fn ")?
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// A cycle through `start`, if any (depth-first).
fn cycle_from(
    graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
    start: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    for next in graph.get(path.last()?).into_iter().flat_map(|m| m.keys()) {
        if next == start {
            let mut cycle = path.clone();
            cycle.push(next.clone());
            return Some(cycle);
        }
        if !path.contains(next) {
            path.push(next.clone());
            if let Some(c) = cycle_from(graph, start, path) {
                return Some(c);
            }
            path.pop();
        }
    }
    None
}

#[test]
fn imports_run_one_way_along_the_pipeline() {
    let graph = module_graph();
    let known: BTreeSet<&str> = BASE
        .iter()
        .chain(STAGES.iter().map(|(m, _)| m))
        .chain(&["run", "github", "cmd"])
        .copied()
        .collect();
    let mut problems = Vec::new();
    for (from, uses) in &graph {
        for (to, file) in uses {
            if !known.contains(from.as_str()) || !known.contains(to.as_str()) {
                problems.push(format!(
                    "{from} -> {to} ({}): a module this test does not place; add it to BASE or STAGES",
                    file.display()
                ));
            } else if let Some(why) = violation(from, to) {
                problems.push(format!("{from} -> {to} ({}): {why}", file.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "backward imports:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    for start in graph.keys() {
        let cycle = cycle_from(&graph, start, &mut vec![start.clone()]);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap().join(" -> ")
        );
    }
}

#[test]
fn no_function_is_longer_than_sixty_lines() {
    let mut long = Vec::new();
    for (_, files) in crate_sources() {
        let tests = test_only_files(&files);
        for file in files.iter().filter(|f| !tests.contains(*f)) {
            let text = std::fs::read_to_string(file).unwrap();
            for (line, name, body) in functions(&text) {
                if body > MAX_FN_LINES {
                    let rel = file.strip_prefix(workspace()).unwrap().display();
                    long.push(format!("{rel}:{line} fn {name}: {body} lines"));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them):\n{}",
        long.join("\n")
    );
}

#[test]
fn cmd_run_stays_small() {
    let text = std::fs::read_to_string(src().join("cmd/run.rs")).unwrap();
    let lines = text.lines().count();
    assert!(lines <= 200, "cmd/run.rs has {lines} lines (at most 200)");
}

/// A crate root's top-level modules (`mod name;` lines of its `lib.rs`).
fn top_level_modules(dir: &str) -> Vec<String> {
    let lib = std::fs::read_to_string(workspace().join(dir).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            ["pub mod ", "pub(crate) mod ", "mod "]
                .iter()
                .find_map(|p| l.trim().strip_prefix(p))
                .and_then(|r| r.strip_suffix(';'))
                .map(str::to_owned)
        })
        .collect()
}

/// One concept, one home: no two crates have a top-level module of the same name (as
/// `observe` and `metrics` once had in core and record, and `exit` in core and schema).
#[test]
fn no_two_crates_have_a_module_of_the_same_name() {
    let mut homes: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let dirs = CRATES.iter().map(|(dir, _)| *dir).chain(["schema"]);
    for dir in dirs {
        for module in top_level_modules(dir) {
            homes.entry(module).or_default().push(dir);
        }
    }
    assert!(homes.len() >= 20, "{homes:?}");
    let split: Vec<_> = homes
        .iter()
        .filter(|(_, crates)| crates.len() > 1)
        .collect();
    assert!(
        split.is_empty(),
        "modules with a home in several crates: {split:?}"
    );
}

#[test]
fn the_checks_catch_what_they_are_for() {
    // The rules themselves, so a test that cannot fail cannot hide here.
    assert!(
        violation("observe", "metrics").is_some(),
        "the old probe → metrics import"
    );
    assert!(violation("compare", "launch").is_none());
    assert!(violation("metrics", "run").is_some());
    assert!(violation("run", "compare").is_some());
    assert!(violation("report", "github").is_some());
    assert!(violation("fsio", "case").is_some());
    assert!(violation("cmd", "run").is_none());
    let code = "use crate::{case::TestCase, plan};\nuse goldgate_judge::{compare::{A, B}, report};\n\
                let x = crate::metrics::build::record(goldgate_core::log::one_line); // crate::run";
    let found: Vec<String> = crate_modules(&production_code(code)).into_iter().collect();
    assert_eq!(
        found,
        ["case", "compare", "log", "metrics", "plan", "report"]
    );
    assert!(
        violation("log", "records").is_some(),
        "the log reader is observe's rank, records metrics'"
    );
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a")] {
        graph
            .entry(a.into())
            .or_default()
            .insert(b.into(), PathBuf::new());
    }
    let cycle = cycle_from(&graph, "a", &mut vec!["a".to_owned()]).unwrap();
    assert_eq!(cycle, ["a", "b", "c", "a"]);
    let body = "    x();\n".repeat(3);
    let code = format!(
        "pub(crate) fn long(\n    a: u32,\n) -> u32 {{\n{body}}}\nfn decl();\nfn one() {{}}\n\
         impl X {{\n    fn m(&self) {{\n    {body}    }}\n}}\n#[cfg(test)]\nfn helper() {{\n{body}}}\n\
         #[cfg(test)]\n#[allow(x)]\nmod tests {{\n    fn t() {{\n{body}    }}\n}}\n"
    );
    let found = functions(&code);
    assert_eq!(
        found,
        [(1, "long".to_owned(), 3), (11, "m".to_owned(), 3)],
        "{code}"
    );
}

/// The packages `package` is built from (`cargo tree -e normal`: what a build of it compiles,
/// without dev- and build-dependencies), by name.
fn normal_dependencies(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", package])
        .current_dir(workspace())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success() && !text.is_empty(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn judging_and_the_base_build_without_nvml_rustix_or_the_recording_crate() {
    let banned = [
        "nvml-wrapper",
        "nvml-wrapper-sys",
        "rustix",
        "goldgate-record",
    ];
    for package in ["goldgate-core", "goldgate-judge"] {
        let deps = normal_dependencies(package);
        assert!(deps.contains(package), "{package}: {deps:?}");
        let found: Vec<&str> = banned
            .iter()
            .copied()
            .filter(|b| deps.contains(*b))
            .collect();
        assert!(found.is_empty(), "{package} is built from {found:?}");
    }
    assert!(!normal_dependencies("goldgate-core").contains("goldgate-judge"));
    assert!(!normal_dependencies("goldgate-record").contains("goldgate-judge"));
    // The check sees what it is for: the recording crate is built from all three.
    let record = normal_dependencies("goldgate-record");
    assert!(
        banned[..3].iter().all(|b| record.contains(*b)),
        "{record:?}"
    );
}

/// A file's module inside its crate: `report/site/page.rs` → `report::site::page`; a
/// `mod.rs`, `lib.rs` or `main.rs` is its folder's module.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every path `code` names through `crate::`, `self::` or `super::` (repeated), made absolute
/// for the module `module`, with `{a, b::c}` groups expanded. A path is cut where its words
/// end (`crate::a::B::new(x)` → a, B, new).
fn absolute_paths(module: &[String], code: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for prefix in ["crate::", "self::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = &code[..at];
            if before.chars().next_back().is_some_and(ident) || before.ends_with("::") {
                continue; // part of a longer word or path (`super::super::`, `a::self::`)
            }
            let mut base: Vec<String> = match prefix {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = &code[at + prefix.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            expand(&base, rest, &mut out);
        }
    }
    out
}

/// `prefix` followed by the path written at the start of `rest` (a group expanded into each
/// of its paths).
fn expand(prefix: &[String], rest: &str, out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = rest.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for item in group_items(group) {
                match item.trim() {
                    "self" => out.push(path.clone()),
                    "" => {}
                    item => expand(&path, item, out),
                }
            }
            return;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        path.push(word.clone());
        match rest[word.len()..].trim_start().strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    out.push(path);
}

/// For a folder's file, the names its `use` statements bring in from its own modules
/// (`pub use page::SitePlot;` → `SitePlot` is `page`'s).
fn names_from_children(
    module: &[String],
    code: &str,
    modules: &BTreeSet<&[String]>,
) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in code.split(';').map(str::trim) {
        let statement = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| statement.strip_prefix(v))
            .unwrap_or(statement);
        let Some(path) = statement.strip_prefix("use ") else {
            continue;
        };
        let mut paths = Vec::new();
        expand(&[], path, &mut paths);
        for p in paths.iter().filter(|p| p.len() >= 2) {
            let child = if p[0] == "self" { &p[1] } else { &p[0] };
            let mut child_path = module.to_vec();
            child_path.push(child.clone());
            if modules.contains(child_path.as_slice()) {
                names.insert(p.last().unwrap().clone(), child.clone());
            }
        }
    }
    names
}

/// The circles among one crate's sibling modules: in every folder, which of its modules use
/// which (a use from inside a module counts for it; a folder and its own modules are left
/// out, as is `crate::` code of another crate). A name the folder's file re-exports
/// (`super::SitePlot` where `mod.rs` says `pub use page::SitePlot`) counts as the module it
/// comes from. `files`: (module, whether it is a folder's file, production code).
fn sibling_circles(files: &[(Vec<String>, bool, String)]) -> Vec<Vec<String>> {
    let modules: BTreeSet<&[String]> = files.iter().map(|(m, _, _)| m.as_slice()).collect();
    let reexports: BTreeMap<&[String], BTreeMap<String, String>> = files
        .iter()
        .filter(|(_, folder, _)| *folder)
        .map(|(m, _, code)| (m.as_slice(), names_from_children(m, code, &modules)))
        .collect();
    let name = |parent: &[String], m: &str| {
        let mut path = parent.to_vec();
        path.push(m.to_owned());
        path.join("/")
    };
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (module, _, code) in files {
        for target in absolute_paths(module, code) {
            let shared = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if shared >= module.len() || shared >= target.len() {
                continue; // the module itself, one of its own, or a folder above it
            }
            let parent = &module[..shared];
            let mut sibling = target[shared].clone();
            if !modules.contains(&target[..=shared]) {
                // An item of the folder's own file, or one it brings in from a module.
                match reexports.get(parent).and_then(|r| r.get(&sibling)) {
                    Some(child) => sibling = child.clone(),
                    None => continue,
                }
            }
            if sibling != module[shared] {
                graph
                    .entry(name(parent, &module[shared]))
                    .or_default()
                    .insert(name(parent, &sibling), PathBuf::new());
            }
        }
    }
    let mut circles: BTreeSet<Vec<String>> = BTreeSet::new();
    for start in graph.keys() {
        if let Some(mut c) = cycle_from(&graph, start, &mut vec![start.clone()]) {
            c.pop();
            let first = c.iter().enumerate().min_by_key(|(_, m)| *m).unwrap().0;
            c.rotate_left(first);
            circles.insert(c);
        }
    }
    circles.into_iter().collect()
}

#[test]
fn sibling_module_files_import_each_other_one_way() {
    let mut circles = Vec::new();
    for ((dir, _), (root, files)) in CRATES.iter().zip(crate_sources()) {
        let tests = test_only_files(&files);
        let modules: Vec<(Vec<String>, bool, String)> = files
            .iter()
            .filter(|f| !tests.contains(*f))
            .map(|file| {
                let folder = matches!(
                    file.file_name().and_then(|n| n.to_str()),
                    Some("mod.rs" | "lib.rs" | "main.rs")
                );
                let code = production_code(&std::fs::read_to_string(file).unwrap());
                (module_of(&root, file), folder, code)
            })
            .collect();
        for c in sibling_circles(&modules) {
            circles.push(format!("{dir}/src: {} -> {}", c.join(" -> "), c[0]));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles between the module files of a folder (move what both need into a \
         module of its own, without a re-export):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_sibling_check_sees_circles_through_super_crate_and_re_exports() {
    let file = |m: &str, folder: bool, code: &str| {
        let module = m.split("::").map(str::to_owned).collect();
        (module, folder, code.to_owned())
    };
    let circle = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    // plot uses page's item through the folder's re-export, page uses plot by `crate::`.
    let files = [
        file(
            "site",
            true,
            "mod page;\nmod plot;\npub use page::{\n    SitePlot,\n    render,\n};",
        ),
        file("site::page", false, "use crate::site::plot::draw;"),
        file("site::plot", false, "use super::{SitePlot, axis::ticks};"),
        file("site::axis", false, "use crate::history::Point;"),
        file("history", true, ""),
    ];
    assert_eq!(
        sibling_circles(&files),
        [circle(&["site/page", "site/plot"])]
    );
    // One way (plot → page only) is no circle; nor is a folder using its own module.
    let files = [
        file(
            "site",
            true,
            "mod page;\nmod plot;\npub use page::SitePlot;\nuse self::plot::draw;",
        ),
        file("site::page", false, "use std::fmt;"),
        file(
            "site::plot",
            false,
            "use super::SitePlot;\nuse super::super::history::P;",
        ),
        file("history", true, ""),
    ];
    assert_eq!(sibling_circles(&files), Vec::<Vec<String>>::new());
    // Three in a ring, one of them a folder with a module of its own.
    let files = [
        file("a", true, ""),
        file("a::x", false, "use super::y::f;"),
        file("a::y", true, "use super::super::a::z::{self, g};"),
        file("a::y::inner", false, "use crate::a::z::k;"),
        file("a::z", false, "fn k() { crate::a::x::h() }"),
    ];
    assert_eq!(sibling_circles(&files), [circle(&["a/x", "a/y", "a/z"])]);
}
