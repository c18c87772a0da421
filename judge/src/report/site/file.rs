//! Stage "report": the file name of a case's page. Names come from test cases and records (a
//! job may plant any of them), so the mapping is an escape, not a clean-up: letters, digits,
//! `-` and `.` stay, every other byte becomes `_XX` (its hex), so distinct cases get distinct
//! files (`m/a_b`, `m/a?b`, `m/a b`, `m__a/b` are four pages). A name whose escape is longer
//! than [`MAX_STEM`] keeps its first part and ends in `~` and a hash of the whole name: file
//! systems refuse names over 255 bytes, and `~` is never part of an escape.

/// Longest file name stem before `.html` (ext4, XFS and APFS take 255 bytes).
const MAX_STEM: usize = 200;

/// `cases/<escaped case>.html`: relative to the site's folder, and safe in an `href`.
pub fn case_file(case: &str) -> String {
    format!("cases/{}.html", stem(case))
}

fn stem(case: &str) -> String {
    let mut out = String::with_capacity(case.len());
    for (i, b) in case.bytes().enumerate() {
        // A leading `.` would hide the file.
        if b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && i > 0) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    if out.len() <= MAX_STEM {
        return out;
    }
    // Cut at a whole escape: `_XX` is never split.
    let mut cut = MAX_STEM - 17;
    while !out.is_char_boundary(cut) || out[..cut].ends_with('_') || out[..cut - 1].ends_with('_') {
        cut -= 1;
    }
    format!(
        "{}~{:016x}",
        &out[..cut],
        goldgate_core::hash::fnv1a(case.as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_cases_get_distinct_files() {
        let names = [
            "m/a_b", "m/a?b", "m/a b", "m__a/b", "m/ü", "m/é", "m/a/b", "m_a/b", "../x", ".x",
        ];
        let files: std::collections::BTreeSet<String> =
            names.iter().map(|n| case_file(n)).collect();
        assert_eq!(files.len(), names.len(), "{files:?}");
        assert_eq!(case_file("gpt/site-demo"), "cases/gpt_2Fsite-demo.html");
        assert_eq!(case_file("../x"), "cases/_2E._2Fx.html");
        for f in &files {
            let name = f.strip_prefix("cases/").unwrap();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)),
                "{name}"
            );
        }
    }

    #[test]
    fn a_long_name_stays_within_file_name_limits_and_distinct() {
        let long = format!("gpt/{}", "x".repeat(248));
        let other = format!("gpt/{}y", "x".repeat(247));
        let a = case_file(&long);
        let b = case_file(&other);
        assert_ne!(a, b);
        for f in [&a, &b] {
            let name = f.strip_prefix("cases/").unwrap();
            assert!(name.len() <= 255, "{} bytes", name.len());
        }
        // Escapes are never cut in half.
        let escaped = case_file(&"/".repeat(120));
        let stem = escaped
            .strip_prefix("cases/")
            .unwrap()
            .split('~')
            .next()
            .unwrap();
        assert_eq!(stem.len() % 3, 0, "{stem}");
    }
}
