//! Stage "compare": a comparison read back from the JSON `compare --json` saved, and the merge of
//! several (one per CI shard) into one.
//!
//! The PR comment is rendered from what the check itself decided — its saved comparison — and
//! never judges again: a second judgement, with another checkout's goldens or rules, could
//! contradict the check it comments on.

use std::path::{Path, PathBuf};

use super::error::CompareError;
use goldgate_schema::Exit;
use goldgate_schema::{Comparison, GateDecision, READABLE_COMPARISON_VERSIONS};

/// Parses a saved comparison; a file from another schema version is refused, naming both.
pub fn parse_saved(path: &Path, text: &str) -> Result<Comparison, CompareError> {
    read_versioned(text, &READABLE_COMPARISON_VERSIONS, "comparison").map_err(|message| {
        CompareError::SavedComparison {
            path: path.to_path_buf(),
            message,
        }
    })
}

/// Reads a JSON file goldgate wrote (`what`: "comparison", "A/B result") whose
/// `schema_version` must be one of `versions`; the message says what is wrong, the caller names
/// the file.
pub(crate) fn read_versioned<T: serde::de::DeserializeOwned>(
    text: &str,
    versions: &[u32],
    what: &str,
) -> Result<T, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if versions.iter().any(|r| u64::from(*r) == v) => {}
        Some(v) => {
            let readable: Vec<String> = versions.iter().map(u32::to_string).collect();
            return Err(format!(
                "schema_version {v}, but this goldgate reads {}",
                readable.join(" and ")
            ));
        }
        None => return Err(format!("no schema_version: not a goldgate {what}")),
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// One comparison of every part's jobs (sorted by case and variant name, the order `compare`
/// gives), warnings and gate: the
/// worst part's exit code, and a flag set when any part had it. Parts must share a platform (a
/// comment holds one platform; each has its own sticky comment).
pub fn merge(parts: Vec<(PathBuf, Comparison)>) -> Result<Comparison, CompareError> {
    let Some(platform) = parts.first().map(|(_, c)| c.platform.clone()) else {
        return Err(CompareError::NoComparison);
    };
    if let Some((path, other)) = parts.iter().find(|(_, c)| c.platform != platform) {
        return Err(CompareError::SavedComparison {
            path: path.clone(),
            message: format!(
                "its platform is {}, the first file's {platform}; one comment holds one platform",
                other.platform
            ),
        });
    }
    let mut jobs = Vec::new();
    let mut warnings = Vec::new();
    let mut gate: Option<GateDecision> = None;
    for (_, part) in parts {
        jobs.extend(part.jobs);
        warnings.extend(part.warnings);
        gate = match (gate, part.gate) {
            (Some(a), Some(b)) => Some(GateDecision {
                strict: a.strict || b.strict,
                fail_on_improvement: a.fail_on_improvement || b.fail_on_improvement,
                exit_code: worst_code(a.exit_code, b.exit_code),
            }),
            (a, b) => a.or(b),
        };
    }
    jobs.sort_by(|a, b| (&a.case, &a.variant).cmp(&(&b.case, &b.variant)));
    let mut merged = Comparison::new(platform, jobs, warnings);
    merged.gate = gate;
    Ok(merged)
}

fn worst_code(a: u8, b: u8) -> u8 {
    let exit = |code| match code {
        0 => Exit::Pass,
        1 => Exit::Regression,
        2 => Exit::Usage,
        _ => Exit::Failure,
    };
    exit(a).worst(exit(b)).code()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    fn saved(c: &Comparison) -> String {
        crate::report::json::render(c).unwrap()
    }

    #[test]
    fn a_saved_comparison_reads_back_with_its_gate() {
        let c = fixtures::comparison().gated(true, false);
        let back = parse_saved(Path::new("c.json"), &saved(&c)).unwrap();
        assert_eq!(back.gate, c.gate);
        assert_eq!(back.counts, c.counts);
        assert_eq!(back.jobs.len(), c.jobs.len());
    }

    #[test]
    fn other_schemas_and_other_files_are_refused_naming_the_file() {
        let cases = [
            (
                "{",
                "c.json: invalid JSON: EOF while parsing an object at line 1 column 1",
            ),
            (
                r#"{"schema_version": 99}"#,
                "c.json: schema_version 99, but this goldgate reads 1 and 2",
            ),
            (
                r#"{"jobs": []}"#,
                "c.json: no schema_version: not a goldgate comparison",
            ),
            (
                r#"{"schema_version": 1, "platform": 3}"#,
                "c.json: invalid type: integer `3`, expected a string",
            ),
        ];
        for (text, want) in cases {
            let err = parse_saved(Path::new("c.json"), text).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn shards_merge_into_one_sorted_comparison_with_the_worst_gate() {
        let all = fixtures::comparison();
        let (first, second) = all.jobs.split_at(all.jobs.len() / 2);
        let part = |jobs: &[goldgate_schema::JobComparison], strict| {
            Comparison::new(all.platform.clone(), jobs.to_vec(), vec![]).gated(strict, false)
        };
        let (a, b) = (part(second, false), part(first, true));
        let merged = merge(vec![
            ("a.json".into(), a.clone()),
            ("b.json".into(), b.clone()),
        ]);
        let merged = merged.unwrap();
        let mut sorted = all.jobs.clone();
        sorted.sort_by(|a, b| (&a.case, &a.variant).cmp(&(&b.case, &b.variant)));
        assert_eq!(merged.jobs, sorted);
        assert_eq!(merged.counts, all.counts);
        let gate = merged.gate.unwrap();
        assert!(gate.strict);
        let codes = [a.gate.unwrap().exit_code, b.gate.unwrap().exit_code];
        assert_eq!(gate.exit_code, codes.into_iter().max().unwrap());
        let mut other = b;
        other.platform = "h200".into();
        let err = merge(vec![("a.json".into(), a), ("b.json".into(), other)]).unwrap_err();
        assert!(
            err.to_string().starts_with("b.json: its platform is h200"),
            "{err}"
        );
        assert!(matches!(merge(vec![]), Err(CompareError::NoComparison)));
    }
}
