//! Base: the one stable hash (a case's partition under `--partition hash:K/N`, an SVG's
//! file name).

/// 64-bit FNV-1a: tiny, and the same on every machine and in every version (a partition must
/// not move cases between runners when goldgate is upgraded).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
