//! Stage "observe": reading small `/proc` files, shared by the host sampler (`host`) and the
//! PSS reader (`pss`): a whole file from offset 0, and a `<key> <n> kB` field of one.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Reads all of a small procfs file from offset 0 into `buf`, growing it as needed (a
/// `children` list can outgrow a page); returns the length.
pub(crate) fn read_whole(file: &File, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    loop {
        let n = file.read_at(buf, 0)?;
        if n < buf.len() {
            return Ok(n);
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// The `<key> <n> kB` line of a `/proc` file (`meminfo`, `smaps_rollup`), in bytes.
pub(crate) fn kb_field(text: &[u8], key: &str) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line
        .trim_start_matches(key)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}
