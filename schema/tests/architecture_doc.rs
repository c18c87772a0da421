//! The book's architecture page (`docs/book/src/reference/architecture.md`) lists the fields
//! of goldgate's boundary types in `rust` blocks. For every `pub struct` written there that is
//! a type of this crate, its fields must be the type's fields, neither more nor fewer: read
//! from the type's JSON Schema, so a field added here and not there (or the reverse) fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `pub struct Name { ... }` blocks of the page's `rust` code blocks: name → field names.
fn documented_structs(page: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut code = String::new();
    let mut inside = false;
    for line in page.lines() {
        match (inside, line.trim_start().starts_with("```")) {
            (false, true) => inside = line.trim() == "```rust",
            (true, true) => inside = false,
            (true, false) => {
                code.push_str(line);
                code.push('\n');
            }
            (false, false) => {}
        }
    }
    let mut out = BTreeMap::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub struct ") {
        rest = &rest[at + "pub struct ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = rest.find('{') else { break };
        let body_end = closing(&rest[open..]).map_or(rest.len(), |e| open + e);
        let body = &rest[open + 1..body_end];
        out.insert(name, fields(body));
        rest = &rest[body_end..];
    }
    out
}

/// The offset of the `}` that closes the `{` at offset 0.
fn closing(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `pub name:` fields of a struct body, comments left out.
fn fields(body: &str) -> BTreeSet<String> {
    let code: String = body
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub ") {
        rest = &rest[at + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if rest[name.len()..].trim_start().starts_with(':') {
            out.insert(name);
        }
    }
    out
}

/// Every object type of the crate's schemas: name → property names.
fn schema_structs() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for (_, schema) in goldgate_schema::json_schemas() {
        let mut add = |name: &str, s: &serde_json::Value| {
            if let Some(props) = s["properties"].as_object() {
                out.insert(name.to_owned(), props.keys().cloned().collect());
            }
        };
        add(schema["title"].as_str().unwrap_or_default(), &schema);
        for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
            add(name, def);
        }
    }
    out
}

#[test]
fn the_architecture_pages_type_tables_name_every_field_of_the_schema_types() {
    let page =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/book/src/reference/architecture.md");
    let page = std::fs::read_to_string(&page).expect("docs/book/src/reference/architecture.md");
    let documented = documented_structs(&page);
    let schema = schema_structs();
    let mut checked = Vec::new();
    let mut wrong = Vec::new();
    for (name, fields) in &documented {
        let Some(real) = schema.get(name) else {
            continue;
        };
        checked.push(name.as_str());
        if fields != real {
            let missing: Vec<_> = real.difference(fields).collect();
            let extra: Vec<_> = fields.difference(real).collect();
            wrong.push(format!(
                "{name}: missing {missing:?}, not in the type {extra:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/book/src/reference/architecture.md:\n{}",
        wrong.join("\n")
    );
    for must in [
        "RunRecord",
        "Attempt",
        "Judging",
        "RunIndex",
        "JobEntry",
        "Comparison",
        "JobComparison",
        "MetricResult",
    ] {
        assert!(
            checked.contains(&must),
            "{must} is not documented: checked {checked:?}"
        );
    }
}

#[test]
fn the_check_sees_a_missing_field() {
    let page = "```rust\npub struct Judging { pub metrics: Vec<String> }\n```\n";
    let documented = documented_structs(page);
    assert_eq!(
        documented["Judging"],
        BTreeSet::from(["metrics".to_owned()])
    );
    assert_ne!(&documented["Judging"], &schema_structs()["Judging"]);
}
