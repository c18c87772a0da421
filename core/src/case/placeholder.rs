//! Stage "case": finding `${VAR}` and `$VAR` placeholders in text (resolving them is `plan`'s job).
//!
//! Megatron runs `envsubst` over the whole `model_config.yaml`; envsubst recognises exactly
//! these two forms, with names `[A-Za-z_][A-Za-z0-9_]*`. Anything else (`$1`, `${a-b}`, `$$`)
//! is left alone, as envsubst leaves it.

use std::ops::Range;

/// Every placeholder in `text`: its variable name and the byte range of the whole `${NAME}`
/// or `$NAME`, in order.
pub fn placeholders(text: &str) -> Vec<(String, Range<usize>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(pos) = memchr::memchr(b'$', &bytes[i..]) {
        let start = i + pos;
        let (name_start, braced) = match bytes.get(start + 1) {
            Some(b'{') => (start + 2, true),
            _ => (start + 1, false),
        };
        let name_end = name_end(bytes, name_start);
        let closed = !braced || bytes.get(name_end) == Some(&b'}');
        if name_end > name_start && closed {
            let end = if braced { name_end + 1 } else { name_end };
            out.push((text[name_start..name_end].to_string(), start..end));
            i = end;
        } else {
            i = start + 1;
        }
    }
    out
}

/// End of a name `[A-Za-z_][A-Za-z0-9_]*` starting at `start` (== `start` when there is none).
fn name_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
        _ => return start,
    }
    let rest = &bytes[start..];
    start
        + rest
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_both_forms_with_ranges() {
        let text = "${DATA_PATH}/x/$LOG_DIR/y-${REPEAT}";
        let found = placeholders(text);
        let names: Vec<_> = found
            .iter()
            .map(|(n, r)| (n.as_str(), &text[r.clone()]))
            .collect();
        assert_eq!(
            names,
            [
                ("DATA_PATH", "${DATA_PATH}"),
                ("LOG_DIR", "$LOG_DIR"),
                ("REPEAT", "${REPEAT}")
            ]
        );
    }

    #[test]
    fn ignores_what_envsubst_ignores() {
        for text in ["$1", "${a-b}", "$$", "cost: 5$", "${}", "${UNCLOSED", "$-x"] {
            assert_eq!(placeholders(text), [], "{text}");
        }
    }

    #[test]
    fn name_stops_at_first_non_name_byte() {
        assert_eq!(placeholders("$HOME.bak"), [("HOME".to_string(), 0..5)]);
        assert_eq!(placeholders("a$$B"), [("B".to_string(), 2..4)]);
    }
}
