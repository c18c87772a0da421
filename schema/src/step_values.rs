//! Per-step values of one metric, in the shape of Megatron's golden files: a JSON object keyed
//! by the step as a string, each value a number or, for a non-finite one, `"nan"`, `"inf"` or
//! `"-inf"` (JSON has no NaN).

use std::borrow::Cow;
use std::collections::BTreeMap;

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Per-step values of one metric. NaN is written as the string `"nan"` (JSON has no NaN),
/// as Megatron's golden files do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepValues(pub BTreeMap<u64, f64>);

impl Serialize for StepValues {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (step, v) in &self.0 {
            if v.is_finite() {
                m.serialize_entry(&step.to_string(), v)?;
            } else {
                m.serialize_entry(&step.to_string(), &nan_text(*v))?;
            }
        }
        m.end()
    }
}

fn nan_text(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// Read entry by entry into the map: no buffered copy of the object (an untagged enum and
/// `String` keys cost over 100 bytes a step, 13× the text of a 10-million-step record).
impl<'de> Deserialize<'de> for StepValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StepsVisitor)
    }
}

struct StepsVisitor;

impl<'de> Visitor<'de> for StepsVisitor {
    type Value = StepValues;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of step → value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StepValues, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let step: u64 = key
                .parse()
                .map_err(|_| de::Error::custom(format!("step `{key}` is not an integer")))?;
            let value = map.next_value::<Num>()?;
            let value = match value {
                Num::F(f) => f,
                Num::Text(t) => match t.as_str() {
                    "nan" | "NaN" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    other => {
                        return Err(de::Error::custom(format!(
                            "value `{other}` at step {key} is not a number"
                        )));
                    }
                },
            };
            out.insert(step, value);
        }
        Ok(StepValues(out))
    }
}

/// One value: a number, or the text of a non-finite one.
enum Num {
    F(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or \"nan\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num::F(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num::F(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num::F(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                Ok(Num::Text(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The JSON Schema of the golden-file shape (for the committed schema files and their tests).
#[cfg(feature = "json-schema")]
mod json_schema_impl {
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::StepValues;

    impl JsonSchema for StepValues {
        fn schema_name() -> Cow<'static, str> {
            "StepValues".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "Step (a decimal integer as a string) -> value; a non-finite value is the string \"nan\", \"inf\" or \"-inf\".",
                "type": "object",
                "propertyNames": { "pattern": "^[0-9]+$" },
                "additionalProperties": {
                    "anyOf": [
                        { "type": "number" },
                        { "type": "string", "enum": ["nan", "NaN", "inf", "-inf"] }
                    ]
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_integers_and_non_finite_text() {
        let v: StepValues =
            serde_json::from_str(r#"{"2": 1.5, "1": 7, "3": "nan", "4": "-inf"}"#).unwrap();
        assert_eq!(v.0.len(), 4);
        assert_eq!((v.0[&1], v.0[&2]), (7.0, 1.5));
        assert!(v.0[&3].is_nan() && v.0[&4] == f64::NEG_INFINITY);
        let back: StepValues = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(
            back.0.keys().collect::<Vec<_>>(),
            v.0.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_steps_and_values_are_named() {
        let e = serde_json::from_str::<StepValues>(r#"{"x": 1.0}"#).unwrap_err();
        assert!(e.to_string().contains("step `x` is not an integer"), "{e}");
        let e = serde_json::from_str::<StepValues>(r#"{"3": "many"}"#).unwrap_err();
        assert!(e.to_string().contains("value `many` at step 3"), "{e}");
        assert!(serde_json::from_str::<StepValues>(r#"{"3": [1]}"#).is_err());
        assert!(serde_json::from_str::<StepValues>("[1]").is_err());
    }
}
