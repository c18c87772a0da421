//! Stage "observe": TensorBoard event files, read without TensorFlow or protoc — the TFRecord
//! framing with its checksums (`record`), the few `Event` protobuf fields Megatron writes,
//! decoded by hand (`proto`, `event`), a folder's event files in order, each streamed a record at a time (`folder`), the
//! scalars as TensorBoard's `EventAccumulator` keeps them (`accumulate`), and a job's scalars
//! over all its files (`scalars`).

pub(crate) mod accumulate;
pub(crate) mod error;
pub(crate) mod event;
pub mod folder;
pub(crate) mod proto;
pub(crate) mod record;
pub(crate) mod scalars;

pub use accumulate::{Accumulated, Accumulator, TagSeries, accumulate};
pub use error::TensorboardError;
pub use event::{Event, Scalar, SummaryValue, decode_event};
pub use folder::{accumulate_file, accumulate_folder, find_event_files};
pub use record::{ReadError, Record, RecordReader, encode_record};
pub use scalars::{JobScalars, job_scalars};
