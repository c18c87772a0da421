//! Stage "observe", TensorBoard: the TFRecord framing of an event file. Each record is
//! `u64 length (little-endian) | u32 masked CRC-32C of those 8 bytes | data | u32 masked
//! CRC-32C of data`; both checksums are verified. [`RecordReader`] streams them from a file,
//! one record in memory at a time. The mask is TensorFlow's:
//! `((crc >> 15) | (crc << 17)) + 0xa282ead8`.

use crc::{CRC_32_ISCSI, Crc};

const CASTAGNOLI: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);
const MASK_DELTA: u32 = 0xa282_ead8;
/// Framing bytes around the data: length, its checksum, and the data's checksum.
const HEADER: usize = 16;

/// One record: where it starts in the file and its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub offset: u64,
    pub data: &'a [u8],
}

/// A record that could not be read: where it starts and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FramingError {
    pub offset: u64,
    pub problem: String,
}

/// TensorFlow's masked CRC-32C.
pub(crate) fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = CASTAGNOLI.checksum(bytes);
    (crc.rotate_right(15)).wrapping_add(MASK_DELTA)
}

/// Why the next record could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The record's framing is damaged or cut short.
    Framing(FramingError),
    /// Reading the file failed.
    Io(std::io::Error),
}

/// Reads the records of one event file in order, one at a time: it holds the record being
/// read and nothing else, so a file of any size costs its largest record. `len` is the
/// file's length: a record claiming more bytes than follow is cut short, never an allocation.
pub struct RecordReader<R> {
    input: R,
    len: u64,
    offset: u64,
    buf: Vec<u8>,
    failed: bool,
}

impl<R: std::io::Read> RecordReader<R> {
    /// A reader at the start of `input`, which holds `len` bytes.
    pub fn new(input: R, len: u64) -> RecordReader<R> {
        RecordReader {
            input,
            len,
            offset: 0,
            buf: Vec::new(),
            failed: false,
        }
    }

    /// The next record, `None` at the end; after an error, `None`.
    pub fn next_record(&mut self) -> Option<Result<Record<'_>, ReadError>> {
        if self.failed || self.offset >= self.len {
            return None;
        }
        match self.read_one() {
            Ok(data_len) => Some(Ok(Record {
                offset: self.offset - (HEADER + data_len) as u64,
                data: &self.buf[..data_len],
            })),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// Reads one record into `buf`; returns its data's length.
    fn read_one(&mut self) -> Result<usize, ReadError> {
        let offset = self.offset;
        let fail = |problem: String| ReadError::Framing(FramingError { offset, problem });
        let mut head = [0u8; 12];
        let got = self.fill(&mut head)?;
        if got < 8 {
            return Err(fail(format!(
                "cut short: {got} byte(s) where the 8-byte length should be"
            )));
        }
        if got < 12 {
            return Err(fail("cut short inside the length's checksum".to_owned()));
        }
        let (len_bytes, len_crc) = head.split_at(8);
        if len_crc != masked_crc(len_bytes).to_le_bytes() {
            return Err(fail("the length's checksum does not match".to_owned()));
        }
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap_or_default());
        let available = self.len.saturating_sub(offset + 12).saturating_sub(4);
        let data_len = usize::try_from(len)
            .ok()
            .filter(|_| len <= available)
            .ok_or_else(|| {
                fail(format!(
                    "cut short: the record says {len} data byte(s), {available} follow"
                ))
            })?;
        self.buf.resize(data_len + 4, 0);
        let mut buf = std::mem::take(&mut self.buf);
        let got = self.fill(&mut buf);
        self.buf = buf;
        if got? < data_len + 4 {
            return Err(fail("cut short inside the data's checksum".to_owned()));
        }
        let (data, data_crc) = self.buf.split_at(data_len);
        if data_crc != masked_crc(data).to_le_bytes() {
            return Err(fail(format!(
                "the checksum of its {data_len} data byte(s) does not match"
            )));
        }
        self.offset = offset + (HEADER + data_len) as u64;
        Ok(data_len)
    }

    /// Reads until `out` is full or the input ends; returns the bytes read.
    fn fill(&mut self, out: &mut [u8]) -> Result<usize, ReadError> {
        let mut got = 0;
        while got < out.len() {
            match self.input.read(&mut out[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
        Ok(got)
    }
}

/// One record's bytes (the writer side: the fake trainer's event files and tests).
pub fn encode_record(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(HEADER + data.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every record of `bytes` as (offset, data), up to and with the first error.
    pub(crate) fn all(bytes: &[u8]) -> Vec<Result<(u64, Vec<u8>), FramingError>> {
        let mut reader = RecordReader::new(bytes, bytes.len() as u64);
        let mut out = Vec::new();
        while let Some(next) = reader.next_record() {
            out.push(match next {
                Ok(r) => Ok((r.offset, r.data.to_vec())),
                Err(ReadError::Framing(e)) => Err(e),
                Err(ReadError::Io(e)) => unreachable!("a slice reads without error: {e}"),
            });
        }
        out
    }

    #[test]
    fn crc32c_check_value_and_mask() {
        // The CRC-32C check value of "123456789" (RFC 3720), then TensorFlow's mask of it.
        assert_eq!(CASTAGNOLI.checksum(b"123456789"), 0xe306_9283);
        assert_eq!(
            masked_crc(b"123456789"),
            0xe306_9283u32.rotate_right(15).wrapping_add(MASK_DELTA)
        );
    }

    #[test]
    fn records_round_trip_with_offsets() {
        let mut file = encode_record(b"first");
        file.extend(encode_record(b""));
        file.extend(encode_record(b"third one"));
        let got: Vec<_> = all(&file).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            got,
            [
                (0, b"first".to_vec()),
                (21, b"".to_vec()),
                (37, b"third one".to_vec()),
            ]
        );
    }

    #[test]
    fn damage_is_an_error_at_the_record_offset() {
        let mut file = encode_record(b"first");
        let second = file.len() as u64;
        file.extend(encode_record(b"second"));
        // A flipped data byte.
        let mut flipped = file.clone();
        flipped[second as usize + 13] ^= 1;
        let got = all(&flipped);
        assert!(got[0].is_ok());
        let err = got[1].clone().unwrap_err();
        assert_eq!(err.offset, second);
        assert!(
            err.problem.contains("checksum of its 6 data byte(s)"),
            "{err:?}"
        );
        // A flipped length byte.
        let mut bad_len = file.clone();
        bad_len[second as usize] ^= 0x40;
        assert_eq!(
            all(&bad_len)[1].clone().unwrap_err().problem,
            "the length's checksum does not match"
        );
        // Cut anywhere inside the second record.
        for cut in second as usize + 1..file.len() {
            let got = all(&file[..cut]);
            assert_eq!(got.len(), 2, "cut at {cut}");
            let err = got[1].clone().unwrap_err();
            assert_eq!(err.offset, second, "cut at {cut}");
            assert!(
                err.problem.starts_with("cut short"),
                "cut at {cut}: {err:?}"
            );
        }
    }

    #[test]
    fn a_huge_length_is_cut_short_not_an_allocation() {
        let len = u64::MAX.to_le_bytes();
        let mut file = len.to_vec();
        file.extend_from_slice(&masked_crc(&len).to_le_bytes());
        file.extend_from_slice(b"abcd");
        let err = all(&file)[0].clone().unwrap_err();
        assert!(
            err.problem
                .contains(&format!("says {} data byte(s), 0 follow", u64::MAX)),
            "{err:?}"
        );
    }
}
