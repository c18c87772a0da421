//! Stage "observe", TensorBoard: a protobuf wire-format reader, enough for the `Event`
//! messages of an event file (varints, fixed 32/64-bit fields, length-delimited fields;
//! unknown fields skipped). Every read is bounds-checked: bad bytes are an error, never a
//! panic.

/// One field of a message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Why a message could not be decoded: what was wrong and at which byte of the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub at: usize,
    pub problem: String,
}

/// A cursor over one message's bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    fn fail<T>(&self, problem: impl Into<String>) -> Result<T, DecodeError> {
        Err(DecodeError {
            at: self.pos,
            problem: problem.into(),
        })
    }

    /// The next field number and value, `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Field<'a>)>, DecodeError> {
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).unwrap_or(0);
        if number == 0 {
            return self.fail(format!("field number 0 or too large (key {key})"));
        }
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => Field::Fixed64(u64::from_le_bytes(self.array::<8>()?)),
            2 => {
                let len = self.varint()?;
                Field::Bytes(self.take(len)?)
            }
            5 => Field::Fixed32(u32::from_le_bytes(self.array::<4>()?)),
            other => return self.fail(format!("unsupported wire type {other} (field {number})")),
        };
        Ok(Some((number, field)))
    }

    /// A base-128 varint of at most 10 bytes.
    pub(crate) fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                return self.fail("message ends inside a varint");
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.fail("varint longer than 10 bytes")
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N as u64)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], DecodeError> {
        let left = self.bytes.len() - self.pos;
        match usize::try_from(len).ok().filter(|n| *n <= left) {
            Some(n) => {
                let out = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(out)
            }
            None => self.fail(format!("field of {len} byte(s) where {left} remain")),
        }
    }
}

/// The elements of a packed (or single, unpacked) repeated fixed-width field.
pub(crate) fn fixed_elements<const N: usize>(field: Field<'_>) -> Vec<[u8; N]> {
    match field {
        Field::Bytes(b) => b
            .chunks_exact(N)
            .filter_map(|c| <[u8; N]>::try_from(c).ok())
            .collect(),
        Field::Fixed32(v) if N == 4 => <[u8; N]>::try_from(&v.to_le_bytes()[..])
            .into_iter()
            .collect(),
        Field::Fixed64(v) if N == 8 => <[u8; N]>::try_from(&v.to_le_bytes()[..])
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// The elements of a packed (or single) repeated varint field.
pub(crate) fn varint_elements(field: Field<'_>) -> Result<Vec<u64>, DecodeError> {
    match field {
        Field::Varint(v) => Ok(vec![v]),
        Field::Bytes(b) => {
            let mut r = Reader::new(b);
            let mut out = Vec::new();
            while r.pos < b.len() {
                out.push(r.varint()?);
            }
            Ok(out)
        }
        _ => Ok(Vec::new()),
    }
}

/// Writer side (the fake trainer's event files, tests): a message built field by field.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Writer {
    pub bytes: Vec<u8>,
}

#[cfg(test)]
impl Writer {
    fn key(&mut self, number: u32, wire: u8) {
        self.raw_varint((u64::from(number) << 3) | u64::from(wire));
    }

    fn raw_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }

    pub(crate) fn varint(&mut self, number: u32, v: u64) -> &mut Self {
        self.key(number, 0);
        self.raw_varint(v);
        self
    }

    pub(crate) fn double(&mut self, number: u32, v: f64) -> &mut Self {
        self.key(number, 1);
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn float(&mut self, number: u32, v: f32) -> &mut Self {
        self.key(number, 5);
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(crate) fn bytes(&mut self, number: u32, b: &[u8]) -> &mut Self {
        self.key(number, 2);
        self.raw_varint(b.len() as u64);
        self.bytes.extend_from_slice(b);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut w = Writer::default();
        w.varint(2, 300)
            .double(1, 1.5)
            .float(3, 2.25)
            .bytes(4, b"tag");
        let mut r = Reader::new(&w.bytes);
        let mut got = Vec::new();
        while let Some(f) = r.next_field().unwrap() {
            got.push(f);
        }
        assert_eq!(
            got,
            [
                (2, Field::Varint(300)),
                (1, Field::Fixed64(1.5f64.to_bits())),
                (3, Field::Fixed32(2.25f32.to_bits())),
                (4, Field::Bytes(b"tag")),
            ]
        );
    }

    #[test]
    fn bad_bytes_are_errors() {
        let cases: [(&[u8], &str); 4] = [
            (&[0x08, 0x80], "message ends inside a varint"),
            (&[0x12, 0x05, b'a'], "field of 5 byte(s) where 1 remain"),
            (&[0x0b], "unsupported wire type 3 (field 1)"),
            (&[0x00], "field number 0 or too large (key 0)"),
        ];
        for (bytes, problem) in cases {
            let err = Reader::new(bytes).next_field().unwrap_err();
            assert_eq!(err.problem, problem, "{bytes:?}");
        }
    }
}
