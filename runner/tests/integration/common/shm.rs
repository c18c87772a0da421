//! `/dev/shm` is one filesystem for the whole machine, and goldgate's `shm-peak-bytes` is its
//! used bytes above the value before the job. A test that asserts on that figure needs no one
//! else to add or remove files there meanwhile: with three copies of the suite at once, one
//! copy's `async_shm` staging file (64 MiB) went away while another's launch test wrote its
//! 32 MiB, and that test saw a peak of 0. So a test that asserts on the figure holds
//! [`exclusive`] for its run and a test whose jobs write `/dev/shm` without asserting holds
//! [`shared`]. A file lock (`flock`), so it also holds between the test processes of several
//! checkouts or copies of the suite on one machine; programs outside the tests (a demo run
//! by hand) are not covered.

use std::fs::File;

/// Held for a test's run; the lock goes with the file.
pub struct ShmLock(#[allow(dead_code)] File);

fn lock_file() -> File {
    let path = std::env::temp_dir().join("goldgate-dev-shm-tests.lock");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// For a test that asserts on `/dev/shm` usage: no other test writes there meanwhile.
pub fn exclusive() -> ShmLock {
    let file = lock_file();
    file.lock().expect("flock on the /dev/shm test lock");
    ShmLock(file)
}

/// For a test whose jobs write `/dev/shm` but that asserts nothing on its usage.
pub fn shared() -> ShmLock {
    let file = lock_file();
    file.lock_shared().expect("flock on the /dev/shm test lock");
    ShmLock(file)
}
