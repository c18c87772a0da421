//! Stage "plan": which of the discovered cases a command takes — names or globs
//! (`gpt/*`, `*resume*`), a regular expression (`--filter`), and a share of them for one of N
//! CI runners (`--partition hash:K/N` or `count:K/N`, as in `cargo nextest run --partition`).
//!
//! Partitions split cases, not jobs: the variants and repeats of a case stay on one runner, so
//! each runner's comparison judges whole jobs. `hash:` puts a case in the same partition
//! whatever else is added or removed (FNV-1a of its name, stable across versions and
//! machines); `count:` deals the selected cases out in name order, evenly.

use std::fmt;
use std::str::FromStr;

use goldgate_core::case::CaseRef;
use goldgate_core::hash::fnv1a;
use goldgate_core::rules::glob_match;

/// One share of the cases: the `k`-th (1-based) of `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// Cases whose name hashes to `k` of `n`.
    Hash { k: u32, n: u32 },
    /// Every `n`-th case of the selection, starting at the `k`-th.
    Count { k: u32, n: u32 },
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(text: &str) -> Result<Partition, String> {
        let bad = || format!("`{text}` is not a partition (e.g. hash:1/4 or count:2/3)");
        let (kind, share) = text.split_once(':').ok_or_else(bad)?;
        let (k, n) = share.split_once('/').ok_or_else(bad)?;
        let (k, n): (u32, u32) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if n == 0 || k == 0 || k > n {
            return Err(format!("`{text}`: K must be between 1 and N in K/N"));
        }
        match kind {
            "hash" => Ok(Partition::Hash { k, n }),
            "count" => Ok(Partition::Count { k, n }),
            other => Err(format!(
                "unknown partition kind `{other}` (use hash or count)"
            )),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Hash { k, n } => write!(f, "hash:{k}/{n}"),
            Partition::Count { k, n } => write!(f, "count:{k}/{n}"),
        }
    }
}

/// What a command asked for.
#[derive(Clone, Debug, Default)]
pub struct CaseFilter {
    /// Case names or globs (`*`, `?`); none = every case.
    pub patterns: Vec<String>,
    /// Only names this regular expression matches.
    pub regex: Option<regex::Regex>,
    /// Only this share of what the rest selects.
    pub partition: Option<Partition>,
}

/// A pattern or filter that selects nothing.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum FilterError {
    #[error("no case `{pattern}` under {root}")]
    #[diagnostic(help(
        "{did_you_mean}`goldgate list --root {root}` shows the cases; `*` and `?` match any text"
    ))]
    NoMatch {
        pattern: String,
        root: String,
        /// `did you mean `demo/ckpt-demo`? ` when a case name is close to the pattern, else empty.
        did_you_mean: String,
    },
    #[error("--filter: invalid regular expression: {message}")]
    Regex { message: String },
}

impl CaseFilter {
    /// A filter from the command line's words; `regex` is compiled here.
    pub fn new(
        patterns: &[String],
        regex: Option<&str>,
        partition: Option<Partition>,
    ) -> Result<CaseFilter, FilterError> {
        let regex = regex
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| FilterError::Regex {
                message: e.to_string(),
            })?;
        Ok(CaseFilter {
            patterns: patterns
                .iter()
                .map(|p| p.trim_end_matches('/').to_owned())
                .collect(),
            regex,
            partition,
        })
    }

    /// Whether the names and the regular expression pick `name` (whether or not such a case
    /// exists). Under a partition, only the shard that `--partition hash:` puts the name in
    /// (and shard 1 of `count:`, which numbers existing cases only) says yes.
    pub fn names(&self, name: &str) -> bool {
        let by_name = (self.patterns.is_empty()
            || self.patterns.iter().any(|p| glob_match(p, name)))
            && self.regex.as_ref().is_none_or(|re| re.is_match(name));
        by_name
            && match self.partition {
                None => true,
                Some(Partition::Hash { k, n }) => {
                    fnv1a(name.as_bytes()) % u64::from(n) == u64::from(k - 1)
                }
                Some(Partition::Count { k, .. }) => k == 1,
            }
    }

    /// The selected cases of `found` (sorted by name, as discovered), in that order. Each pattern
    /// must match a case: a typo is an error, never an empty run.
    pub fn select<'a>(
        &self,
        found: &'a [CaseRef],
        root: &str,
    ) -> Result<Vec<&'a CaseRef>, FilterError> {
        for pattern in &self.patterns {
            if !found.iter().any(|c| glob_match(pattern, &c.name)) {
                return Err(FilterError::NoMatch {
                    pattern: pattern.clone(),
                    root: root.to_owned(),
                    did_you_mean: closest(pattern, found)
                        .map_or(String::new(), |name| format!("did you mean `{name}`? ")),
                });
            }
        }
        let picked = found.iter().filter(|c| {
            (self.patterns.is_empty() || self.patterns.iter().any(|p| glob_match(p, &c.name)))
                && self.regex.as_ref().is_none_or(|re| re.is_match(&c.name))
        });
        Ok(match self.partition {
            None => picked.collect(),
            Some(Partition::Hash { k, n }) => picked
                .filter(|c| fnv1a(c.name.as_bytes()) % u64::from(n) == u64::from(k - 1))
                .collect(),
            Some(Partition::Count { k, n }) => picked
                .enumerate()
                .filter(|(i, _)| *i as u64 % u64::from(n) == u64::from(k - 1))
                .map(|(_, c)| c)
                .collect(),
        })
    }
}

/// The case name nearest to a mistyped `pattern`: the fewest single-character edits, at most a
/// third of the pattern's length (and at least one), so `demo/ckpt-dmeo` finds `demo/ckpt-demo`
/// and `gpt` suggests nothing.
fn closest<'a>(pattern: &str, found: &'a [CaseRef]) -> Option<&'a str> {
    let limit = (pattern.chars().count() / 3).max(1);
    found
        .iter()
        .map(|c| (edit_distance(pattern, &c.name), c.name.as_str()))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Levenshtein distance over characters, one row at a time.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn cases(names: &[&str]) -> Vec<CaseRef> {
        names
            .iter()
            .map(|n| CaseRef {
                name: (*n).to_owned(),
                dir: PathBuf::from(n),
                config_path: PathBuf::from(n).join("model_config.yaml"),
            })
            .collect()
    }

    fn names(filter: &CaseFilter, found: &[CaseRef]) -> Vec<String> {
        let picked = filter.select(found, "root").unwrap();
        picked.iter().map(|c| c.name.clone()).collect()
    }

    const CASES: [&str; 5] = [
        "demo/ckpt-demo",
        "demo/crash-demo",
        "gpt/a_resume",
        "gpt/b",
        "moe/c_resume",
    ];

    #[test]
    fn names_globs_and_the_regex_combine() {
        let found = cases(&CASES);
        let f = |pats: &[&str], re: Option<&str>| {
            let pats: Vec<String> = pats.iter().map(|p| (*p).to_owned()).collect();
            names(&CaseFilter::new(&pats, re, None).unwrap(), &found)
        };
        assert_eq!(f(&[], None).len(), 5);
        assert_eq!(f(&["gpt/b/"], None), ["gpt/b"]);
        assert_eq!(f(&["demo/*"], None), ["demo/ckpt-demo", "demo/crash-demo"]);
        assert_eq!(
            f(&["*resume", "gpt/b"], None),
            ["gpt/a_resume", "gpt/b", "moe/c_resume"]
        );
        assert_eq!(f(&["*resume"], Some("^gpt/")), ["gpt/a_resume"]);
        assert_eq!(f(&["g?t/*"], None), ["gpt/a_resume", "gpt/b"]);
        let by_name = CaseFilter::new(&["gpt/*".into()], Some("perf"), None).unwrap();
        assert!(by_name.names("gpt/gpt_16b_perf"), "a name no case has");
        assert!(!by_name.names("gpt/gpt_16b") && !by_name.names("moe/x_perf"));
        let err = CaseFilter::new(&["gpt/nope*".into()], None, None)
            .unwrap()
            .select(&found, "test_cases")
            .unwrap_err();
        assert_eq!(err.to_string(), "no case `gpt/nope*` under test_cases");
        let bad = CaseFilter::new(&[], Some("("), None)
            .unwrap_err()
            .to_string();
        assert!(
            bad.starts_with("--filter: invalid regular expression"),
            "{bad}"
        );
    }

    #[test]
    fn partitions_cover_every_case_exactly_once() {
        let many: Vec<String> = (0..200).map(|i| format!("m{}/case_{i}", i % 7)).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let found = cases(&refs);
        for kind in ["hash", "count"] {
            let mut seen = Vec::new();
            let mut sizes = Vec::new();
            for k in 1..=4 {
                let p: Partition = format!("{kind}:{k}/4").parse().unwrap();
                let part = names(&CaseFilter::new(&[], None, Some(p)).unwrap(), &found);
                sizes.push(part.len());
                seen.extend(part);
            }
            seen.sort();
            let mut all = many.clone();
            all.sort();
            assert_eq!(seen, all, "{kind}");
            assert!(sizes.iter().all(|s| *s >= 30), "{kind}: {sizes:?}");
        }
    }

    #[test]
    fn hash_partitions_do_not_move_when_other_cases_come_and_go() {
        let p: Partition = "hash:2/3".parse().unwrap();
        let filter = CaseFilter::new(&[], None, Some(p)).unwrap();
        let few = names(&filter, &cases(&CASES));
        let more = names(
            &filter,
            &cases(&[&CASES[..], &["zzz/new", "aaa/new"]].concat()),
        );
        assert!(few.iter().all(|n| more.contains(n)), "{few:?} {more:?}");
        // Pinned: a change of hash would silently reshuffle every CI shard.
        assert_eq!(fnv1a(b"demo/ckpt-demo") % 3, 0);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn partition_syntax() {
        assert_eq!(
            "hash:1/4".parse::<Partition>(),
            Ok(Partition::Hash { k: 1, n: 4 })
        );
        assert_eq!(
            "count:3/3".parse::<Partition>().unwrap().to_string(),
            "count:3/3"
        );
        for (text, want) in [
            ("hash:0/4", "`hash:0/4`: K must be between 1 and N in K/N"),
            ("hash:5/4", "`hash:5/4`: K must be between 1 and N in K/N"),
            (
                "slice:1/2",
                "unknown partition kind `slice` (use hash or count)",
            ),
            (
                "1/2",
                "`1/2` is not a partition (e.g. hash:1/4 or count:2/3)",
            ),
            (
                "hash:a/2",
                "`hash:a/2` is not a partition (e.g. hash:1/4 or count:2/3)",
            ),
        ] {
            assert_eq!(text.parse::<Partition>().unwrap_err(), want);
        }
    }

    #[test]
    fn a_mistyped_case_names_the_closest_one() {
        let found = cases(&CASES);
        let err = |pattern: &str| {
            let filter = CaseFilter::new(&[pattern.to_owned()], None, None).unwrap();
            let e = filter.select(&found, "test_cases").unwrap_err();
            let help = miette::Diagnostic::help(&e).map(|h| h.to_string());
            format!("error: {e}\nhelp: {}", help.unwrap_or_default())
        };
        insta::assert_snapshot!(err("demo/ckpt-dmeo"));
        assert!(!err("nothing/like-it").contains("did you mean"));
        assert_eq!(edit_distance("gpt/b", "gpt/b"), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
