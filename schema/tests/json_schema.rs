//! The committed JSON Schema files beside the crate (`schema/*.schema.json`) are what the types
//! generate: a change to a type without regenerating them fails here. Regenerate with
//! `GOLDGATE_SCHEMA_UPDATE=1 cargo test -p goldgate-schema --test json_schema`, then review the
//! diff (a field removed or changed needs a `schema_version` bump; see the crate's doc).

use std::path::Path;

#[test]
fn committed_json_schemas_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var_os("GOLDGATE_SCHEMA_UPDATE").is_some();
    let mut stale = Vec::new();
    for (name, schema) in goldgate_schema::json_schemas() {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(&schema).expect("a schema serialises") + "\n";
        if update {
            std::fs::write(&path, &text).expect("write the schema file");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "out of date: {stale:?} (regenerate: GOLDGATE_SCHEMA_UPDATE=1 cargo test -p goldgate-schema \
         --test json_schema)"
    );
}

#[test]
fn every_schema_names_its_version_field() {
    for (name, schema) in goldgate_schema::json_schemas() {
        let required = schema["required"].as_array().expect("a required list");
        assert!(
            required.iter().any(|f| f == "schema_version"),
            "{name}: {required:?}"
        );
    }
}
