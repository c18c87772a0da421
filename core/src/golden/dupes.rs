//! Stage "case" (golden): repeated keys in golden JSON. Python's `json` and serde both keep the
//! last of `{"1": 99.0, "1": 7.1}`, and goldgate keeps that meaning; but a reviewer reading the
//! diff sees the first, so `check` and `compare` warn, naming the line. One pass over the text
//! that borrows every key from it (no tree, no copy of the keys).

use std::collections::HashMap;

/// A key that an object holds twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The key's place: the keys of its enclosing objects and itself (`lm loss` › `values` ›
    /// `1`).
    pub key: Vec<String>,
    /// 1-based line of the repeat (the value that counts when it is the last).
    pub line: u32,
    /// 1-based line where the key first appears.
    pub first_line: u32,
}

impl DuplicateKey {
    /// `"lm loss" › "values" › "1" (line 7, first on line 5)`.
    pub fn describe(&self) -> String {
        let path: Vec<String> = self.key.iter().map(|k| format!("{k:?}")).collect();
        format!(
            "duplicate key {} on line {} (first on line {}): the last value counts, as in \
             Megatron's reader, but a reader of the file sees the first",
            path.join(" › "),
            self.line,
            self.first_line
        )
    }
}

/// One open object: the keys seen (text between the quotes → line) and the key whose value is
/// being read.
#[derive(Default)]
struct Frame<'a> {
    keys: HashMap<&'a str, u32>,
    current: Option<&'a str>,
    /// Whether the next string is a key (after `{` or `,`).
    expect_key: bool,
    array: bool,
}

/// Every repeated key of `text` (valid JSON, already parsed elsewhere), in file order. Keys are
/// compared as written between their quotes (`"1"` and `"\u0031"` are told apart).
pub fn duplicate_keys(text: &str) -> Vec<DuplicateKey> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut found = Vec::new();
    let (mut i, mut line) = (0, 1u32);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'{' | b'[' => stack.push(Frame {
                expect_key: bytes[i] == b'{',
                array: bytes[i] == b'[',
                ..Frame::default()
            }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(top) = stack.last_mut().filter(|f| !f.array) {
                    top.expect_key = true;
                }
            }
            b'"' => {
                let end = string_end(bytes, i);
                let key = text.get(i + 1..end.saturating_sub(1)).unwrap_or("");
                if let Some(top) = stack.last_mut().filter(|f| f.expect_key) {
                    top.expect_key = false;
                    top.current = Some(key);
                    if let Some(first) = top.keys.insert(key, line) {
                        let path: Vec<String> = stack
                            .iter()
                            .filter_map(|f| f.current.map(str::to_owned))
                            .collect();
                        found.push(DuplicateKey {
                            key: path,
                            line,
                            first_line: first,
                        });
                    }
                }
                line += count_newlines(&bytes[i..end]);
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The index after the string that starts with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    bytes.len()
}

fn count_newlines(bytes: &[u8]) -> u32 {
    u32::try_from(memchr::memchr_iter(b'\n', bytes).count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_repeated_keys_with_their_lines_and_place() {
        let text = "{\n  \"lm loss\": {\n    \"values\": {\"1\": 99.0,\n      \"1\": 7.1, \"2\": 3}\n  },\n  \"lm loss\": {}\n}";
        let found = duplicate_keys(text);
        assert_eq!(
            found,
            [
                DuplicateKey {
                    key: vec!["lm loss".into(), "values".into(), "1".into()],
                    line: 4,
                    first_line: 3
                },
                DuplicateKey {
                    key: vec!["lm loss".into()],
                    line: 6,
                    first_line: 2
                },
            ]
        );
        assert!(found[0].describe().contains("line 4 (first on line 3)"));
    }

    #[test]
    fn lists_strings_and_escapes_are_not_keys() {
        let text = r#"{"a": ["a", "a", {"a": 1}], "b": "a\"a", "c": {"b": 1}, "s": "{\"a\": 1, \"a\": 2}"}"#;
        assert_eq!(duplicate_keys(text), []);
    }
}
