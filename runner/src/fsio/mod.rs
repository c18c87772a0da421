//! Shared by every stage that reads or writes a file a user keeps (results, run index, goldens,
//! configs, cases, reports, the probe): bounded reads of regular files only, atomic writes that
//! never replace a device, FIFO or symlink with a regular file, and the check that a name read
//! from a file or the command line is safe to use as part of a path.

mod names;
mod read;
mod write;

pub use names::{check_component, check_relative};
pub use read::{exists, read_bounded, read_limited, read_text};
pub use write::write_atomic;

#[cfg(test)]
pub(crate) use read::mkfifo;
