//! Stage "observe", TensorBoard: the TFRecord framing of an event file. Each record is
//! `u64 length (little-endian) | u32 masked CRC-32C of those 8 bytes | data | u32 masked
//! CRC-32C of data`; both checksums are verified. The mask is TensorFlow's:
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

/// The records of `bytes`, in order; stops at the first damaged or cut-short one (an error
/// with its offset), or at the end.
pub fn records(bytes: &[u8]) -> impl Iterator<Item = Result<Record<'_>, FramingError>> + '_ {
    let mut pos = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos >= bytes.len() {
            return None;
        }
        let next = read_one(bytes, pos);
        match &next {
            Ok((_, end)) => pos = *end,
            Err(_) => failed = true,
        }
        Some(next.map(|(record, _)| record))
    })
}

/// The record starting at `pos` and where the next one starts.
fn read_one(bytes: &[u8], pos: usize) -> Result<(Record<'_>, usize), FramingError> {
    let offset = pos as u64;
    let fail = |problem: String| FramingError { offset, problem };
    let rest = &bytes[pos..];
    let Some((len_bytes, tail)) = rest.split_first_chunk::<8>() else {
        return Err(fail(format!(
            "cut short: {} byte(s) where the 8-byte length should be",
            rest.len()
        )));
    };
    let Some((len_crc, tail)) = tail.split_first_chunk::<4>() else {
        return Err(fail("cut short inside the length's checksum".to_owned()));
    };
    if u32::from_le_bytes(*len_crc) != masked_crc(len_bytes) {
        return Err(fail("the length's checksum does not match".to_owned()));
    }
    let len = u64::from_le_bytes(*len_bytes);
    let available = tail.len().saturating_sub(4) as u64;
    let data_len = usize::try_from(len)
        .ok()
        .filter(|n| *n <= tail.len().saturating_sub(4))
        .ok_or_else(|| {
            fail(format!(
                "cut short: the record says {len} data byte(s), {available} follow"
            ))
        })?;
    let (data, tail) = tail.split_at(data_len);
    let Some((data_crc, _)) = tail.split_first_chunk::<4>() else {
        return Err(fail("cut short inside the data's checksum".to_owned()));
    };
    if u32::from_le_bytes(*data_crc) != masked_crc(data) {
        return Err(fail(format!(
            "the checksum of its {data_len} data byte(s) does not match"
        )));
    }
    Ok((Record { offset, data }, pos + HEADER + data_len))
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
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> Vec<Result<Record<'_>, FramingError>> {
        records(bytes).collect()
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
                Record {
                    offset: 0,
                    data: b"first"
                },
                Record {
                    offset: 21,
                    data: b""
                },
                Record {
                    offset: 37,
                    data: b"third one"
                },
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
