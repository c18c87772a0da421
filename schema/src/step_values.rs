//! Per-step values of one metric, in the shape of Megatron's golden files: a JSON object keyed
//! by the step as a string, each value a number or, for a non-finite one, `"nan"`, `"inf"` or
//! `"-inf"` (JSON has no NaN).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
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

impl<'de> Deserialize<'de> for StepValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Num {
            F(f64),
            S(String),
        }
        let raw = BTreeMap::<String, Num>::deserialize(d)?;
        let mut out = BTreeMap::new();
        for (k, v) in raw {
            let step: u64 = k
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("step `{k}` is not an integer")))?;
            let value = match v {
                Num::F(f) => f,
                Num::S(s) => match s.as_str() {
                    "nan" | "NaN" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    other => {
                        return Err(serde::de::Error::custom(format!(
                            "value `{other}` at step {k} is not a number"
                        )));
                    }
                },
            };
            out.insert(step, value);
        }
        Ok(StepValues(out))
    }
}

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
