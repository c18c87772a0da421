//! Shared by every stage that reads or writes a file a user keeps (results, run index, goldens,
//! configs, cases, reports, the probe): bounded reads of regular files only, atomic writes that
//! never replace a device or FIFO with a regular file and never write through a symbolic link
//! (nothing outside the folder given is written), and the check that a name read from a file
//! or the command line is safe to use as part of a path.

mod names;
mod read;
mod write;

pub use names::{check_component, check_relative};
pub use read::{exists, open_regular, read_bounded, read_limited, read_text};
pub use write::{check_no_links, write_atomic, write_under};

#[cfg(test)]
pub(crate) use read::mkfifo;
