//! Stage "case" (golden): a streaming first pass over golden JSON that builds the series
//! directly, without a `serde_json::Value` tree for the (up to hundreds of thousands of)
//! values: `goldgate check` reads 36 MB of corpus goldens, and the tree cost most of its time.
//! Anything that is not a series' `values` is still kept as a `serde_json::Value`.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

/// One value inside `values`, before validation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    Float(f64),
    Int(i64),
    /// The string `"nan"` (kept apart: 248,170 of them in the corpus, no allocation each).
    Nan,
    Str(String),
    /// A list inside `values`: kept whole, because a series of lists is a shape of its own
    /// (Megatron's 2025-01 tree wrote some `lm loss` values as a 2-D array).
    List(Vec<Json>),
    /// Not a number, string or list: the JSON kind, for the error message.
    Other(&'static str),
}

/// A key of `values`: the step it names, or the key text when it is not a whole number.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StepKey {
    Step(u64),
    Invalid(String),
}

impl<'de> Deserialize<'de> for StepKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StepKey, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StepKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step number as a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepKey, E> {
                // `u64::from_str` accepts a leading `+`; Megatron's keys are plain digits.
                let digits = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
                Ok(match v.parse() {
                    Ok(step) if digits => StepKey::Step(step),
                    _ => StepKey::Invalid(v.to_string()),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A series' `values`: an object (step key → item), a list, or something else.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawValues {
    Map(Vec<(StepKey, Item)>),
    List(Vec<Item>),
    Other(&'static str),
}

/// A top-level entry: an object holding `values` is a candidate series.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Entry {
    Series {
        fields: Vec<(String, Json)>,
        values: RawValues,
    },
    Other(Json),
}

/// The whole file: an object of entries, or the kind of the non-object it is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TopLevel {
    Object(Vec<(String, Entry)>),
    NotObject(&'static str),
}

macro_rules! scalar_visits {
    ($out:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($out(Json::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($out(Json::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($out(Json::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($out(Json::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($out(Json::String(v.to_string())))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out(Json::Null))
        }
    };
}

/// What kind of JSON value this is, for messages ("expected …, found a list").
pub(super) fn kind_of(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Item, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or \"nan\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Item, E> {
                Ok(Item::Float(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Item, E> {
                Ok(Item::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Item, E> {
                #[allow(clippy::cast_precision_loss)] // only above i64::MAX
                Ok(i64::try_from(v).map_or(Item::Float(v as f64), Item::Int))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Item, E> {
                Ok(if v == "nan" {
                    Item::Nan
                } else {
                    Item::Str(v.to_string())
                })
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Item, E> {
                Ok(Item::Other("a boolean"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Item, E> {
                Ok(Item::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Json>()? {
                    items.push(item);
                }
                Ok(Item::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Item::Other("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawValues, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object or a list of values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawValues, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(64));
                while let Some(entry) = map.next_entry::<StepKey, Item>()? {
                    out.push(entry);
                }
                Ok(RawValues::Map(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawValues, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(64));
                while let Some(item) = seq.next_element::<Item>()? {
                    out.push(item);
                }
                Ok(RawValues::List(out))
            }
            scalar_visits!(|j: Json| RawValues::Other(kind_of(&j)));
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entry, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a metric series or another JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
                let mut fields = Vec::new();
                let mut values = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "values" {
                        values = Some(map.next_value::<RawValues>()?);
                    } else {
                        fields.push((key, map.next_value::<Json>()?));
                    }
                }
                Ok(match values {
                    Some(values) => Entry::Series { fields, values },
                    None => Entry::Other(Json::Object(fields.into_iter().collect())),
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Entry, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Json>()? {
                    items.push(item);
                }
                Ok(Entry::Other(Json::Array(items)))
            }
            scalar_visits!(Entry::Other);
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TopLevel, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, Entry>()? {
                    out.push(entry);
                }
                Ok(TopLevel::Object(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TopLevel::NotObject("a list"))
            }
            scalar_visits!(|j: Json| TopLevel::NotObject(kind_of(&j)));
        }
        d.deserialize_any(V)
    }
}
