//! Stage "observe", TensorBoard: a folder's event files. Like Megatron's
//! `read_tb_logs_as_list`, the files are `events*tfevents*` in the folder and in its
//! `results/`, oldest modification time first (equal times: by path, where Python keeps the
//! listing's order). Each file is streamed record by record — every record's checksums
//! verified, its `Event` decoded and folded into the file's scalars at once — so reading a
//! folder costs one record plus the scalars kept, whatever the files' size; a damaged or
//! cut-short record is an error naming the file and offset.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::accumulate::{Accumulated, Accumulator};
use super::error::TensorboardError;
use super::event::{Event, decode_event};
use super::record::{ReadError, RecordReader};

/// Whether a file name matches the glob `events*tfevents*`.
fn is_event_file_name(name: &str) -> bool {
    name.strip_prefix("events")
        .is_some_and(|rest| rest.contains("tfevents"))
}

/// The event files of `dir` and `dir/results`, oldest first; none is an error.
pub fn find_event_files(dir: &Path) -> Result<Vec<PathBuf>, TensorboardError> {
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    for (folder, required) in [(dir.to_path_buf(), true), (dir.join("results"), false)] {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(TensorboardError::List {
                    path: folder,
                    source,
                });
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| TensorboardError::List {
                path: folder.clone(),
                source,
            })?;
            let path = entry.path();
            let matches = entry.file_name().to_str().is_some_and(is_event_file_name);
            if !matches || path.is_dir() {
                continue;
            }
            let mtime = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .map_err(|source| TensorboardError::Read {
                    path: path.clone(),
                    source,
                })?;
            found.push((mtime, path));
        }
    }
    if found.is_empty() {
        return Err(TensorboardError::NoEventFiles {
            path: dir.to_path_buf(),
        });
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// The scalars of one event file, streamed.
pub fn accumulate_file(path: &Path) -> Result<Accumulated, TensorboardError> {
    let read_error = |source| TensorboardError::Read {
        path: path.to_path_buf(),
        source,
    };
    let (file, len) = crate::fsio::open_regular(path).map_err(read_error)?;
    let input = BufReader::with_capacity(64 * 1024, std::io::Read::take(file, len));
    let mut acc = Accumulator::default();
    each_event(input, len, &mut |e| acc.add(&e)).map_err(|e| match e {
        ReadError::Io(source) => read_error(source),
        ReadError::Framing(f) => TensorboardError::Damaged {
            path: path.to_path_buf(),
            offset: f.offset,
            problem: f.problem,
        },
    })?;
    Ok(acc.finish())
}

/// Hands each event of an event file's `len` bytes to `on_event`, in order; stops at the
/// first bad record (its offset and why).
fn each_event(
    input: impl std::io::Read,
    len: u64,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), ReadError> {
    let mut reader = RecordReader::new(input, len);
    while let Some(record) = reader.next_record() {
        let record = record?;
        let event = decode_event(record.data).map_err(|e| {
            ReadError::Framing(super::record::FramingError {
                offset: record.offset,
                problem: format!(
                    "not an Event message (byte {} of its data: {})",
                    e.at, e.problem
                ),
            })
        })?;
        on_event(event);
    }
    Ok(())
}

/// The events of an event file's bytes, or the offset of the first bad record and why.
pub fn decode_all(bytes: &[u8]) -> Result<Vec<Event>, (u64, String)> {
    let mut events = Vec::new();
    match each_event(bytes, bytes.len() as u64, &mut |e| events.push(e)) {
        Ok(()) => Ok(events),
        Err(ReadError::Framing(f)) => Err((f.offset, f.problem)),
        Err(ReadError::Io(e)) => Err((0, e.to_string())),
    }
}

/// The scalars of every event file of `dir`, oldest first.
pub fn accumulate_folder(dir: &Path) -> Result<Vec<(PathBuf, Accumulated)>, TensorboardError> {
    find_event_files(dir)?
        .into_iter()
        .map(|p| accumulate_file(&p).map(|acc| (p, acc)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::event::{encode_file_version, encode_scalars};
    use super::super::record::encode_record;
    use super::*;

    #[test]
    fn glob_matches_megatrons() {
        for (name, want) in [
            ("events.out.tfevents.1700000000.host.123.0", true),
            ("eventstfevents", true),
            ("events.out.tfevents", true),
            ("my.events.out.tfevents.1", false),
            ("events.out.json", false),
        ] {
            assert_eq!(is_event_file_name(name), want, "{name}");
        }
    }

    fn write_file(path: &Path, steps: std::ops::RangeInclusive<i64>) {
        let mut bytes = encode_record(&encode_file_version(1.0));
        for s in steps {
            bytes.extend(encode_record(&encode_scalars(
                1.0,
                s,
                &[("lm loss", s as f32)],
            )));
        }
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn files_of_the_folder_and_results_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("results")).unwrap();
        let old = dir.path().join("results/events.out.tfevents.2.b");
        let new = dir.path().join("events.out.tfevents.1.a");
        write_file(&old, 1..=2);
        write_file(&new, 3..=3);
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let files = accumulate_folder(dir.path()).unwrap();
        assert_eq!(
            files.iter().map(|f| f.0.clone()).collect::<Vec<_>>(),
            [old, new]
        );
        assert_eq!(files[0].1.scalars[0].points, [(1, 1.0), (2, 2.0)]);
        assert_eq!(files[1].1.scalars[0].points, [(3, 3.0)]);
    }

    #[test]
    fn empty_folder_and_damage_are_errors_naming_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let err = accumulate_folder(dir.path()).unwrap_err();
        assert!(
            matches!(err, TensorboardError::NoEventFiles { .. }),
            "{err:?}"
        );
        let path = dir.path().join("events.out.tfevents.1");
        write_file(&path, 1..=3);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&path, &bytes).unwrap();
        let err = accumulate_folder(dir.path()).unwrap_err().to_string();
        let third = encode_record(&encode_file_version(1.0)).len()
            + 2 * encode_record(&encode_scalars(1.0, 1, &[("lm loss", 1.0)])).len();
        let n = encode_scalars(1.0, 3, &[("lm loss", 3.0)]).len();
        assert_eq!(
            err,
            format!(
                "{}: damaged record at byte {third}: cut short: the record says {n} data byte(s), {} follow",
                path.display(),
                n - 3
            )
        );
    }

    /// A valid file of `scalars` (tag index, step, value) events after a version record.
    fn encode_file(scalars: &[(usize, i64, f32)]) -> Vec<u8> {
        const TAGS: [&str; 3] = ["lm loss", "num-zeros", "mem-allocated-bytes"];
        let mut bytes = encode_record(&encode_file_version(1.0));
        for (tag, step, v) in scalars {
            bytes.extend(encode_record(&encode_scalars(
                2.0,
                *step,
                &[(TAGS[tag % 3], *v)],
            )));
        }
        bytes
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any bytes: events or an error with an offset inside the file, never a panic.
        #[test]
        fn any_bytes_decode_or_fail_at_an_offset(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Err((offset, _)) = decode_all(&bytes) {
                proptest::prop_assert!(offset < bytes.len() as u64);
            }
        }

        /// Written scalars read back exactly; a damaged byte or a cut is an error, never a panic.
        #[test]
        fn scalars_round_trip_and_damage_is_caught(
            scalars in proptest::collection::vec((0usize..3, -3i64..100_000, proptest::num::f32::ANY), 0..20),
            flip in proptest::num::usize::ANY,
            bit in 0u8..8,
            cut in proptest::num::usize::ANY,
        ) {
            let bytes = encode_file(&scalars);
            let events = decode_all(&bytes).unwrap();
            proptest::prop_assert_eq!(events.len(), scalars.len() + 1);
            for (e, (_, step, v)) in events[1..].iter().zip(&scalars) {
                proptest::prop_assert_eq!(e.step, *step);
                let got = e.values[0].scalar.map(|s| s.value().to_bits());
                proptest::prop_assert_eq!(got, Some(f64::from(*v).to_bits()));
            }
            let mut flipped = bytes.clone();
            let at = flip % bytes.len();
            flipped[at] ^= 1 << bit;
            proptest::prop_assert!(decode_all(&flipped).is_err(), "flipped bit {} of byte {}", bit, at);
            let cut = cut % bytes.len();
            if cut > 0 {
                proptest::prop_assert!(decode_all(&bytes[..cut]).is_err() || is_record_boundary(&bytes, cut));
            }
        }
    }

    /// Whether `at` is where a record of `bytes` starts (a cut there leaves whole records).
    fn is_record_boundary(bytes: &[u8], at: usize) -> bool {
        super::super::record::tests::all(bytes)
            .into_iter()
            .filter_map(Result::ok)
            .any(|(offset, _)| offset == at as u64)
    }
}
