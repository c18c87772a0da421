//! Stage "case": a small YAML tree that keeps every scalar's original text and position.
//!
//! Why not `serde_saphyr::from_str` into structs: serde picks a scalar's type from the target
//! type, so a float arrives as `f64` and `1e-8`, `.01` or `1.0e-5` would be re-formatted, and
//! `Spanned<T>` gives positions but not the source text. Megatron hands MODEL_ARGS to argv as
//! written, so the tree is built here from the event parser serde-saphyr itself runs on
//! (`serde_saphyr::granit_parser`, re-exported: no new dependency). Plain scalars arrive with
//! their text untouched and every event carries a line and column. Anchors, aliases, `<<:`
//! merge keys are resolved here as yq's `explode` and PyYAML agree; a map without merge keys
//! keeps repeated keys (yq, which prints MODEL_ARGS for Megatron, passes each of them on).
//!
//! Hostile input stays cheap: the parser's nesting limits are lowered, and alias expansion
//! is charged against a node budget before anything is copied (an "alias bomb" fails fast).

use std::collections::HashMap;
use std::ops::Range;

use serde_saphyr::granit_parser::{
    ErrorKind, Event, Options, Parser, ScalarStyle, Span as ParserSpan,
};

use super::types::{Scalar, ScalarKind, Span};

/// Deepest nesting of block or flow collections accepted.
pub(crate) const MAX_NESTING: usize = 64;
/// Most nodes a document may hold once aliases are expanded.
pub(crate) const MAX_NODES: usize = 200_000;

/// One YAML node with its position and byte range in the source.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    pub(crate) span: Span,
    /// Byte range of the node's own text in the source (empty for aliases' copies' origin).
    pub(crate) range: Range<usize>,
}

/// What a node holds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NodeKind {
    Scalar(Scalar),
    Seq(Vec<Node>),
    /// Keys are scalars (complex keys are rejected); repeated keys are kept unless the map
    /// has merge keys.
    Map(Vec<(Scalar, Node)>),
}

impl Node {
    /// A short name of the node's type for "expected X, found Y" messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Scalar(s) if s.kind == ScalarKind::Null => "null",
            NodeKind::Scalar(_) => "a scalar",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a map",
        }
    }
}

/// A YAML syntax or limit error at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct YamlError {
    pub(crate) span: Span,
    pub(crate) message: String,
    /// Whether a resource limit (nesting, alias budget) was hit rather than bad syntax.
    pub(crate) limit: bool,
}

/// Parses one YAML document. An empty document (only comments) gives a null scalar.
pub(crate) fn parse(text: &str) -> Result<Node, YamlError> {
    let mut options = Options::default();
    options.emit_comments = false;
    options.block_nesting_limit = MAX_NESTING;
    options.flow_nesting_limit = MAX_NESTING;
    let mut builder = Builder::default();
    for item in Parser::new_from_str_with_options(text, options) {
        let (event, span) = item.map_err(|e| {
            let limit = matches!(e.kind(), ErrorKind::RecursionLimitExceeded);
            YamlError {
                span: span_of(e.marker().line(), e.marker().col()),
                message: if limit {
                    format!("nesting deeper than {MAX_NESTING} levels")
                } else {
                    e.kind().to_string()
                },
                limit,
            }
        })?;
        builder.event(event, &span)?;
    }
    Ok(builder.root.unwrap_or(Node {
        kind: NodeKind::Scalar(Scalar {
            text: String::new(),
            kind: ScalarKind::Null,
            span: None,
        }),
        span: Span { line: 1, column: 1 },
        range: 0..0,
    }))
}

fn span_of(line: usize, col0: usize) -> Span {
    Span {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(col0.saturating_add(1)).unwrap_or(u32::MAX),
    }
}

fn start_of(span: &ParserSpan) -> Span {
    span_of(span.start.line(), span.start.col())
}

/// A collection being built.
enum Frame {
    Seq {
        items: Vec<Node>,
        span: Span,
        start: usize,
        anchor: usize,
        size: usize,
    },
    Map {
        entries: Vec<(Scalar, Node)>,
        merges: Vec<Node>,
        key: Option<Node>,
        span: Span,
        start: usize,
        anchor: usize,
        size: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, usize)>,
    root: Option<Node>,
    documents: usize,
    nodes: usize,
}

impl Builder {
    /// Feeds one event.
    fn event(&mut self, event: Event<'_>, span: &ParserSpan) -> Result<(), YamlError> {
        let at = start_of(span);
        let offset = span.start.byte_offset().unwrap_or(0);
        match event {
            Event::DocumentStart(..) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(err(at, "more than one YAML document in the file", false));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let plain = style == ScalarStyle::Plain && tag.is_none();
                let kind = if plain {
                    resolve(&value)
                } else {
                    ScalarKind::Str
                };
                let scalar = Scalar {
                    text: value.into_owned(),
                    kind,
                    span: Some(at),
                };
                let end = span.end.byte_offset().unwrap_or(offset);
                let node = Node {
                    kind: NodeKind::Scalar(scalar),
                    span: at,
                    range: offset..end,
                };
                self.finish(node, anchor, 1)?;
            }
            Event::Alias(id) => {
                let Some((node, size)) = self.anchors.get(&id).cloned() else {
                    return Err(err(at, "alias to an unknown anchor", false));
                };
                self.finish(node, 0, size)?;
            }
            Event::SequenceStart(_, anchor, _) => {
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    span: at,
                    start: offset,
                    anchor,
                    size: 1,
                });
            }
            Event::MappingStart(_, anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                merges: Vec::new(),
                key: None,
                span: at,
                start: offset,
                anchor,
                size: 1,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let end = span.end.byte_offset().unwrap_or(offset);
                self.close(end)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, end: usize) -> Result<(), YamlError> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let (node, anchor, size) = match frame {
            Frame::Seq {
                items,
                span,
                start,
                anchor,
                size,
            } => (
                Node {
                    kind: NodeKind::Seq(items),
                    span,
                    range: start..end,
                },
                anchor,
                size,
            ),
            Frame::Map {
                entries,
                merges,
                span,
                start,
                anchor,
                size,
                ..
            } => {
                let entries = merge_entries(merges, entries, span)?;
                (
                    Node {
                        kind: NodeKind::Map(entries),
                        span,
                        range: start..end,
                    },
                    anchor,
                    size,
                )
            }
        };
        self.finish(node, anchor, size)
    }

    /// Places a complete node into its parent (or as the root), charging `size` to the budget.
    fn finish(&mut self, node: Node, anchor: usize, size: usize) -> Result<(), YamlError> {
        self.nodes = self.nodes.saturating_add(size);
        if self.nodes > MAX_NODES {
            let message = format!("document expands to more than {MAX_NODES} nodes (alias bomb?)");
            return Err(err(node.span, &message, true));
        }
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq {
                items, size: total, ..
            }) => {
                items.push(node);
                *total = total.saturating_add(size);
            }
            Some(Frame::Map {
                entries,
                merges,
                key,
                size: total,
                ..
            }) => {
                *total = total.saturating_add(size);
                match key.take() {
                    None => *key = Some(node),
                    Some(k) => place_entry(entries, merges, k, node)?,
                }
            }
        }
        Ok(())
    }
}

fn err(span: Span, message: &str, limit: bool) -> YamlError {
    YamlError {
        span,
        message: message.to_string(),
        limit,
    }
}

/// Adds `key: value` to a map being built; `<<` collects merge sources instead.
fn place_entry(
    entries: &mut Vec<(Scalar, Node)>,
    merges: &mut Vec<Node>,
    key: Node,
    value: Node,
) -> Result<(), YamlError> {
    let NodeKind::Scalar(k) = key.kind else {
        return Err(err(key.span, "a mapping key must be a scalar", false));
    };
    // Only a plain `<<` is a merge key: it spans two bytes, a quoted `'<<'` spans four.
    if k.text == "<<" && k.kind == ScalarKind::Str && key.range.len() == 2 {
        match value.kind {
            NodeKind::Map(_) => merges.push(value),
            NodeKind::Seq(items) => merges.extend(items),
            NodeKind::Scalar(_) => {
                return Err(err(
                    value.span,
                    "a merge key (<<) needs a map or a list of maps",
                    false,
                ));
            }
        }
        return Ok(());
    }
    entries.push((k, value));
    Ok(())
}

/// A map without merge keys is kept as written, repeated keys included: yq (which builds
/// Megatron's argv) prints every one of them; readers that want PyYAML's single value per key
/// pick it themselves. With merge keys, the order yq's `explode` and PyYAML agree on: merged
/// entries first (earlier sources win), then the map's own entries; a repeated key keeps its
/// first position and takes its last value.
fn merge_entries(
    merges: Vec<Node>,
    own: Vec<(Scalar, Node)>,
    span: Span,
) -> Result<Vec<(Scalar, Node)>, YamlError> {
    if merges.is_empty() {
        return Ok(own);
    }
    let mut all = Vec::new();
    for source in merges.into_iter().rev() {
        match source.kind {
            NodeKind::Map(entries) => all.extend(entries),
            _ => return Err(err(span, "a merge key (<<) source is not a map", false)),
        }
    }
    all.extend(own);
    let mut out: Vec<(Scalar, Node)> = Vec::with_capacity(all.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(all.len());
    for (k, v) in all {
        match index.get(&k.text) {
            Some(&i) => out[i].1 = v,
            None => {
                index.insert(k.text.clone(), out.len());
                out.push((k, v));
            }
        }
    }
    Ok(out)
}

/// Resolves a plain scalar's type by YAML 1.2 core-schema rules (the text is kept regardless).
pub(crate) fn resolve(text: &str) -> ScalarKind {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => ScalarKind::Null,
        "true" | "True" | "TRUE" => ScalarKind::Bool(true),
        "false" | "False" | "FALSE" => ScalarKind::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => ScalarKind::Float,
        _ if is_int(text) => ScalarKind::Int,
        _ if is_float(text) => ScalarKind::Float,
        _ => ScalarKind::Str,
    }
}

fn is_int(text: &str) -> bool {
    if let Some(hex) = text.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return !oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b));
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = all_digits(int)
        && frac.is_none_or(all_digits)
        && (!int.is_empty() || frac.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let d = e.strip_prefix(['-', '+']).unwrap_or(e);
        !d.is_empty() && all_digits(d)
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(node: &Node) -> Vec<(String, String)> {
        let NodeKind::Map(entries) = &node.kind else {
            panic!("not a map: {node:?}")
        };
        entries
            .iter()
            .map(|(k, v)| {
                let text = match &v.kind {
                    NodeKind::Scalar(s) => s.text.clone(),
                    other => format!("{other:?}"),
                };
                (k.text.clone(), text)
            })
            .collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn scalars_keep_their_text_and_position() {
        let root = parse("a: 1e-8\nb: .01   # comment\nc: 949,50,1\nd: :4096:8\n").unwrap();
        assert_eq!(
            map(&root),
            pairs(&[
                ("a", "1e-8"),
                ("b", ".01"),
                ("c", "949,50,1"),
                ("d", ":4096:8")
            ])
        );
        let NodeKind::Map(entries) = &root.kind else {
            panic!()
        };
        assert_eq!(entries[1].1.span, Span { line: 2, column: 4 });
        assert_eq!(entries[1].0.span, Some(Span { line: 2, column: 1 }));
    }

    #[test]
    fn duplicate_keys_are_kept_as_written() {
        let root = parse("a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(map(&root), pairs(&[("a", "1"), ("b", "2"), ("a", "3")]));
        let merged = parse("base: &B\n  x: 1\nuse:\n  <<: *B\n  y: 2\n  y: 3\n").unwrap();
        let NodeKind::Map(entries) = &merged.kind else {
            panic!()
        };
        assert_eq!(map(&entries[1].1), pairs(&[("x", "1"), ("y", "3")]));
    }

    #[test]
    fn merge_keys_come_first_and_own_keys_override() {
        let text = "base: &B\n  x: 1\n  y: 2\nuse:\n  <<: *B\n  y: 3\n  z: 4\n";
        let root = parse(text).unwrap();
        let NodeKind::Map(entries) = &root.kind else {
            panic!()
        };
        assert_eq!(
            map(&entries[1].1),
            pairs(&[("x", "1"), ("y", "3"), ("z", "4")])
        );
    }

    #[test]
    fn quoted_merge_key_is_an_ordinary_key() {
        let root = parse("m:\n  '<<': 1\n").unwrap();
        let NodeKind::Map(entries) = &root.kind else {
            panic!()
        };
        assert_eq!(map(&entries[0].1), pairs(&[("<<", "1")]));
    }

    #[test]
    fn scalar_kinds_follow_the_core_schema() {
        let cases = [
            ("1e-8", ScalarKind::Float),
            (".01", ScalarKind::Float),
            ("1.0e-5", ScalarKind::Float),
            ("10.", ScalarKind::Float),
            ("-3", ScalarKind::Int),
            ("0x1F", ScalarKind::Int),
            ("True", ScalarKind::Bool(true)),
            ("false", ScalarKind::Bool(false)),
            ("~", ScalarKind::Null),
            ("949,50,1", ScalarKind::Str),
            ("e5", ScalarKind::Str),
            (".", ScalarKind::Str),
            ("1e", ScalarKind::Str),
            ("yes", ScalarKind::Str),
        ];
        for (text, kind) in cases {
            assert_eq!(resolve(text), kind, "{text}");
        }
    }

    #[test]
    fn quoted_scalars_are_strings() {
        let root = parse("a: \"true\"\nb: '5'\n").unwrap();
        let NodeKind::Map(entries) = &root.kind else {
            panic!()
        };
        for (_, v) in entries {
            let NodeKind::Scalar(s) = &v.kind else {
                panic!()
            };
            assert_eq!(s.kind, ScalarKind::Str);
        }
    }

    #[test]
    fn alias_bomb_fails_fast() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let e = parse(&text).unwrap_err();
        assert!(e.limit, "{e:?}");
        assert!(e.message.contains("alias bomb"), "{e:?}");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(500), "]".repeat(500));
        let e = parse(&text).unwrap_err();
        assert!(e.limit, "{e:?}");
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("a: 1\nb: [1, 2\n").unwrap_err();
        assert!(e.span.line >= 2, "{e:?}");
        assert!(!e.limit);
    }

    #[test]
    fn empty_document_is_null() {
        let root = parse("# nothing\n").unwrap();
        assert_eq!(root.type_name(), "null");
    }

    #[test]
    fn second_document_is_refused() {
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
    }
}
