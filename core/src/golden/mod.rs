//! Stage "case": Megatron golden-values JSON (read every corpus shape, write Megatron's byte style).

mod dupes;
mod error;
mod find;
mod raw;
mod read;
mod types;
mod write;

pub use dupes::{DuplicateKey, duplicate_keys};
pub use error::GoldenError;
pub use find::{
    GoldenName, GoldenRef, VARIANTS_DIR, find_golden, find_goldens, golden_dir, golden_file_name,
    goldens_in, platform_of, variant_goldens, variant_key,
};
pub use read::{MAX_GOLDEN_BYTES, parse_golden, read_golden};
pub use types::{GoldenFile, GoldenStyle, Series, Value};
pub use write::{py_float_repr, render_golden, round5, write_golden};
