//! `--tensorboard-dir`: TensorBoard event files as Megatron's `SummaryWriter` writes them — a
//! `brain.Event:2` version record, then one `simple_value` event per `add_scalar` — framed as
//! TFRecords (u64 length, masked CRC-32C of it, data, masked CRC-32C of the data). Its own small
//! protobuf writer: goldgate's reader is tested against this and against TensorBoard's writer.
//! Tags as Megatron's `training_log` writes them at each log interval (memory with
//! `--log-memory-to-tensorboard`); `… vs samples` tags are keyed by consumed samples.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use crc::{CRC_32_ISCSI, Crc};

use crate::format::{IterationStats, MemoryStats};

const CASTAGNOLI: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

fn masked_crc(bytes: &[u8]) -> u32 {
    CASTAGNOLI
        .checksum(bytes)
        .rotate_right(15)
        .wrapping_add(0xa282_ead8)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(out: &mut Vec<u8>, number: u64, b: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// `Event { wall_time = 1, step = 2, summary = 5 { value = 1 { tag = 1, simple_value = 2 } } }`.
fn scalar_event(wall_time: f64, step: u64, tag: &str, value: f32) -> Vec<u8> {
    let mut v = Vec::new();
    bytes_field(&mut v, 1, tag.as_bytes());
    v.push((2 << 3) | 5);
    v.extend_from_slice(&value.to_le_bytes());
    let mut summary = Vec::new();
    bytes_field(&mut summary, 1, &v);
    let mut e = vec![(1 << 3) | 1];
    e.extend_from_slice(&wall_time.to_le_bytes());
    varint(&mut e, 2 << 3);
    varint(&mut e, step);
    bytes_field(&mut e, 5, &summary);
    e
}

fn wall_time() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One event file, appended to and flushed after every log interval.
pub(crate) struct EventWriter {
    file: File,
    memory: bool,
}

impl EventWriter {
    /// Creates `DIR/events.out.tfevents.<seconds>.<host>.<pid>.0` and writes its version record.
    pub(crate) fn create(dir: &Path, memory: bool) -> io::Result<EventWriter> {
        std::fs::create_dir_all(dir)?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let now = wall_time();
        let name = format!(
            "events.out.tfevents.{}.{}.{}.0",
            now as u64,
            host.trim(),
            std::process::id()
        );
        let mut w = EventWriter {
            file: File::create(dir.join(name))?,
            memory,
        };
        let mut e = vec![(1 << 3) | 1];
        e.extend_from_slice(&now.to_le_bytes());
        bytes_field(&mut e, 3, b"brain.Event:2");
        w.record(&e)?;
        Ok(w)
    }

    fn record(&mut self, data: &[u8]) -> io::Result<()> {
        let len = (data.len() as u64).to_le_bytes();
        let mut out = Vec::with_capacity(data.len() + 16);
        out.extend_from_slice(&len);
        out.extend_from_slice(&masked_crc(&len).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc(data).to_le_bytes());
        self.file.write_all(&out)
    }

    /// The scalars Megatron writes at a log interval, in its order.
    pub(crate) fn interval(&mut self, s: &IterationStats, m: &MemoryStats) -> io::Result<()> {
        let (step, samples, now) = (s.iteration, s.consumed_samples, wall_time());
        let mut rows: Vec<(&str, u64, f64)> = vec![
            ("learning-rate", step, s.learning_rate),
            ("learning-rate vs samples", samples, s.learning_rate),
            ("batch-size", step, s.global_batch_size as f64),
            ("batch-size vs samples", samples, s.global_batch_size as f64),
            ("lm loss", step, s.lm_loss),
            ("lm loss vs samples", samples, s.lm_loss),
            ("loss-scale", step, s.loss_scale),
            ("grad-norm", step, s.grad_norm),
            ("num-zeros", step, s.num_zeros),
            ("params-norm", step, s.params_norm),
            ("iteration-time", step, s.elapsed_ms / 1000.0),
        ];
        if self.memory {
            rows.extend([
                ("mem-reserved-bytes", step, m.reserved as f64),
                ("mem-allocated-bytes", step, m.allocated as f64),
                ("mem-max-allocated-bytes", step, m.max_allocated as f64),
            ]);
        }
        for (tag, at, v) in rows {
            self.record(&scalar_event(now, at, tag, v as f32))?;
        }
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_and_the_first_record() {
        assert_eq!(CASTAGNOLI.checksum(b"123456789"), 0xe306_9283);
        let dir = tempfile::tempdir().unwrap();
        EventWriter::create(dir.path(), false).unwrap();
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let name = file.file_name().into_string().unwrap();
        assert!(name.starts_with("events.out.tfevents."), "{name}");
        let bytes = std::fs::read(file.path()).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(bytes.len(), 16 + len);
        assert_eq!(&bytes[12 + len - 13..12 + len], b"brain.Event:2");
        let crc = u32::from_le_bytes(bytes[12 + len..].try_into().unwrap());
        assert_eq!(crc, masked_crc(&bytes[12..12 + len]));
    }
}
