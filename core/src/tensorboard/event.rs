//! Stage "observe", TensorBoard: the `Event` protobuf (tensorflow/core/util/event.proto),
//! decoded by hand for the fields a training job's scalars live in: `wall_time`, `step`,
//! `file_version`, `session_log.status` and `summary.value[]` with its `tag`, `simple_value`
//! and `tensor` (a one-element `DT_FLOAT`, `DT_DOUBLE`, `DT_INT32` or `DT_INT64` tensor, from
//! `tensor_content` or the typed `*_val` fields). Everything else is skipped.

use super::proto::{DecodeError, Field, Reader, fixed_elements, varint_elements};

/// One event record.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    pub wall_time: f64,
    pub step: i64,
    /// `brain.Event:2` in the first record of a file TensorBoard's writers make.
    pub file_version: Option<String>,
    /// A `session_log` with status `START`: TensorBoard drops what was logged at later steps.
    pub session_start: bool,
    /// Whether the event carries a `summary` (even an empty one).
    pub has_summary: bool,
    pub values: Vec<SummaryValue>,
}

/// One `summary.value` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryValue {
    /// The tag (a tensor without one: its `node_name`, as TensorBoard does).
    pub tag: String,
    /// The value, when it is a scalar in one of the two forms.
    pub scalar: Option<Scalar>,
}

/// A scalar in the form it was written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `simple_value` (a float32): what `SummaryWriter.add_scalar` writes, and the only form
    /// TensorBoard's `EventAccumulator` lists as a scalar.
    Simple(f32),
    /// A one-element tensor (TF2's `tf.summary.scalar`, `add_scalar(new_style=True)`).
    Tensor(f64),
}

impl Scalar {
    /// The value as a float (a float32 widened exactly).
    pub fn value(self) -> f64 {
        match self {
            Scalar::Simple(v) => f64::from(v),
            Scalar::Tensor(v) => v,
        }
    }
}

const DT_FLOAT: u64 = 1;
const DT_DOUBLE: u64 = 2;
const DT_INT32: u64 = 3;
const DT_INT64: u64 = 9;
const SESSION_START: u64 = 1;

/// Decodes one record's data.
pub fn decode_event(bytes: &[u8]) -> Result<Event, DecodeError> {
    let mut event = Event::default();
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        match (number, field) {
            (1, Field::Fixed64(bits)) => event.wall_time = f64::from_bits(bits),
            (2, Field::Varint(v)) => event.step = v as i64,
            (3, Field::Bytes(b)) => event.file_version = Some(text(b)?),
            (5, Field::Bytes(b)) => {
                event.has_summary = true;
                summary(b, &mut event.values)?;
            }
            (7, Field::Bytes(b)) => event.session_start = session_status(b)? == SESSION_START,
            _ => {}
        }
    }
    Ok(event)
}

fn text(b: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|e| DecodeError {
        at: e.utf8_error().valid_up_to(),
        problem: "a string field is not UTF-8".to_owned(),
    })
}

fn session_status(bytes: &[u8]) -> Result<u64, DecodeError> {
    let mut status = 0;
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        if let (1, Field::Varint(v)) = (number, field) {
            status = v;
        }
    }
    Ok(status)
}

fn summary(bytes: &[u8], out: &mut Vec<SummaryValue>) -> Result<(), DecodeError> {
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        if let (1, Field::Bytes(b)) = (number, field) {
            out.push(summary_value(b)?);
        }
    }
    Ok(())
}

fn summary_value(bytes: &[u8]) -> Result<SummaryValue, DecodeError> {
    let (mut tag, mut node_name) = (String::new(), String::new());
    let mut scalar = None;
    let mut is_tensor = false;
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        match (number, field) {
            (1, Field::Bytes(b)) => tag = text(b)?,
            (7, Field::Bytes(b)) => node_name = text(b)?,
            (2, Field::Fixed32(bits)) => {
                scalar = Some(Scalar::Simple(f32::from_bits(bits)));
                is_tensor = false;
            }
            (8, Field::Bytes(b)) => {
                scalar = tensor_scalar(b)?.map(Scalar::Tensor);
                is_tensor = true;
            }
            // Another member of the `value` oneof (image, histogram, audio) replaces it.
            (3..=6, Field::Bytes(_)) => {
                scalar = None;
                is_tensor = false;
            }
            _ => {}
        }
    }
    if is_tensor && tag.is_empty() {
        tag = node_name;
    }
    Ok(SummaryValue { tag, scalar })
}

/// A tensor's value when it has exactly one element of a supported type.
fn tensor_scalar(bytes: &[u8]) -> Result<Option<f64>, DecodeError> {
    let mut dtype = 0;
    let mut elements: u64 = 1;
    let mut content: &[u8] = &[];
    let mut typed: Vec<f64> = Vec::new();
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        match (number, field) {
            (1, Field::Varint(v)) => dtype = v,
            (2, Field::Bytes(b)) => elements = shape_elements(b)?,
            (4, Field::Bytes(b)) => content = b,
            (5, f) => typed.extend(
                fixed_elements::<4>(f)
                    .into_iter()
                    .map(|b| f64::from(f32::from_le_bytes(b))),
            ),
            (6, f) => typed.extend(fixed_elements::<8>(f).into_iter().map(f64::from_le_bytes)),
            (7, f) => typed.extend(varint_elements(f)?.into_iter().map(|v| f64::from(v as i32))),
            (10, f) => typed.extend(varint_elements(f)?.into_iter().map(|v| v as i64 as f64)),
            _ => {}
        }
    }
    if elements != 1 {
        return Ok(None);
    }
    if content.is_empty() {
        return Ok(typed.first().copied());
    }
    Ok(match dtype {
        DT_FLOAT => content
            .first_chunk::<4>()
            .map(|b| f64::from(f32::from_le_bytes(*b))),
        DT_DOUBLE => content.first_chunk::<8>().map(|b| f64::from_le_bytes(*b)),
        DT_INT32 => content
            .first_chunk::<4>()
            .map(|b| f64::from(i32::from_le_bytes(*b))),
        DT_INT64 => content
            .first_chunk::<8>()
            .map(|b| i64::from_le_bytes(*b) as f64),
        _ => None,
    })
}

/// The element count of a `TensorShapeProto` (no dimensions: a scalar, one element).
fn shape_elements(bytes: &[u8]) -> Result<u64, DecodeError> {
    let mut count: u64 = 1;
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        match (number, field) {
            (2, Field::Bytes(dim)) => count = count.saturating_mul(dim_size(dim)?),
            // unknown_rank: not a scalar.
            (3, Field::Varint(v)) if v != 0 => count = 0,
            _ => {}
        }
    }
    Ok(count)
}

fn dim_size(bytes: &[u8]) -> Result<u64, DecodeError> {
    let mut size = 0u64;
    let mut r = Reader::new(bytes);
    while let Some((number, field)) = r.next_field()? {
        if let (1, Field::Varint(v)) = (number, field) {
            // -1 (unknown) reads as a huge count: not one element.
            size = v;
        }
    }
    Ok(size)
}

/// Writer side (the fake trainer's event files, tests): the first record of a file.
#[cfg(test)]
pub(crate) fn encode_file_version(wall_time: f64) -> Vec<u8> {
    let mut w = super::proto::Writer::default();
    w.double(1, wall_time).bytes(3, b"brain.Event:2");
    w.bytes
}

/// Writer side: one event holding `simple_value` scalars, as `SummaryWriter.add_scalar`
/// writes them (one tag per event there; several here are allowed).
#[cfg(test)]
pub(crate) fn encode_scalars(wall_time: f64, step: i64, scalars: &[(&str, f32)]) -> Vec<u8> {
    let mut summary = super::proto::Writer::default();
    for (tag, v) in scalars {
        let mut value = super::proto::Writer::default();
        value.bytes(1, tag.as_bytes()).float(2, *v);
        summary.bytes(1, &value.bytes);
    }
    let mut w = super::proto::Writer::default();
    w.double(1, wall_time)
        .varint(2, step as u64)
        .bytes(5, &summary.bytes);
    w.bytes
}

#[cfg(test)]
mod tests {
    use super::super::proto::Writer;
    use super::*;

    #[test]
    fn simple_values_decode() {
        let e = decode_event(&encode_scalars(
            12.5,
            7,
            &[("lm loss", 10.5), ("num-zeros", 3.0)],
        ))
        .unwrap();
        assert_eq!(e.wall_time, 12.5);
        assert_eq!(e.step, 7);
        assert!(e.has_summary);
        assert_eq!(
            e.values,
            [
                SummaryValue {
                    tag: "lm loss".into(),
                    scalar: Some(Scalar::Simple(10.5))
                },
                SummaryValue {
                    tag: "num-zeros".into(),
                    scalar: Some(Scalar::Simple(3.0))
                },
            ]
        );
        let v = decode_event(&encode_file_version(1.0)).unwrap();
        assert_eq!(v.file_version.as_deref(), Some("brain.Event:2"));
    }

    fn tensor_event(tensor: &Writer, tag: &str, node: &str) -> Event {
        let mut value = Writer::default();
        value
            .bytes(1, tag.as_bytes())
            .bytes(7, node.as_bytes())
            .bytes(8, &tensor.bytes);
        let mut summary = Writer::default();
        summary.bytes(1, &value.bytes);
        let mut w = Writer::default();
        w.varint(2, 3).bytes(5, &summary.bytes);
        decode_event(&w.bytes).unwrap()
    }

    #[test]
    fn tensor_scalars_of_each_type_decode() {
        let scalar = |t: &Writer| tensor_event(t, "loss", "").values[0].scalar;
        let mut t = Writer::default();
        t.varint(1, DT_FLOAT).bytes(4, &2.5f32.to_le_bytes());
        assert_eq!(scalar(&t), Some(Scalar::Tensor(2.5)));
        let mut t = Writer::default();
        t.varint(1, DT_DOUBLE).bytes(4, &0.1f64.to_le_bytes());
        assert_eq!(scalar(&t), Some(Scalar::Tensor(0.1)));
        let mut t = Writer::default();
        t.varint(1, DT_INT64).bytes(4, &(-5i64).to_le_bytes());
        assert_eq!(scalar(&t), Some(Scalar::Tensor(-5.0)));
        let mut t = Writer::default();
        t.varint(1, DT_INT32).varint(7, (-7i32) as u32 as u64);
        assert_eq!(scalar(&t), Some(Scalar::Tensor(-7.0)));
        // float_val, packed.
        let mut t = Writer::default();
        t.varint(1, DT_FLOAT).bytes(5, &1.25f32.to_le_bytes());
        assert_eq!(scalar(&t), Some(Scalar::Tensor(1.25)));
        // A shape [2] tensor is no scalar; a shape [1] one is.
        let (mut two, mut one) = (Writer::default(), Writer::default());
        two.varint(1, 2);
        one.varint(1, 1);
        let (mut s2, mut s1) = (Writer::default(), Writer::default());
        s2.bytes(2, &two.bytes);
        s1.bytes(2, &one.bytes);
        let mut t = Writer::default();
        t.varint(1, DT_DOUBLE)
            .bytes(2, &s2.bytes)
            .bytes(6, &[0u8; 16]);
        assert_eq!(scalar(&t), None);
        let mut t = Writer::default();
        t.varint(1, DT_DOUBLE)
            .bytes(2, &s1.bytes)
            .bytes(6, &4.0f64.to_le_bytes());
        assert_eq!(scalar(&t), Some(Scalar::Tensor(4.0)));
        // A tensor without a tag takes its node_name.
        assert_eq!(tensor_event(&t, "", "node").values[0].tag, "node");
    }
}
