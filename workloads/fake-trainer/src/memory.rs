//! Memory: host buffers in a training-like pattern, counted the way PyTorch's caching allocator
//! counts device memory. `allocated` = bytes in live buffers, `reserved` = bytes held (live plus
//! cached blocks). Every buffer is written page by page when created, so the counters are real
//! resident bytes, not promises.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::MemoryStats;

const PAGE: usize = 4096;

/// Counters shared by the training loop and the checkpoint worker.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    allocated: AtomicU64,
    max_allocated: AtomicU64,
    reserved: AtomicU64,
    max_reserved: AtomicU64,
    /// Blocks created and dropped: PyTorch's `num_device_alloc` / `num_device_free`.
    device_allocs: AtomicU64,
    device_frees: AtomicU64,
    /// [`Pool::empty_cache`] calls and their time; each also counts as one
    /// `num_sync_all_streams`, as PyTorch's `empty_cache` synchronises the device first.
    empty_cache_calls: AtomicU64,
    empty_cache_nanos: AtomicU64,
    empty_cache_max_nanos: AtomicU64,
}

/// The allocator's counters at one moment (what the probe reads from `memory_stats()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AllocCounters {
    pub(crate) device_allocs: u64,
    pub(crate) device_frees: u64,
    pub(crate) empty_cache_calls: u64,
    pub(crate) empty_cache_nanos: u64,
    pub(crate) empty_cache_max_nanos: u64,
}

impl Accounting {
    pub(crate) fn snapshot(&self) -> MemoryStats {
        MemoryStats {
            allocated: self.allocated.load(Ordering::Relaxed),
            max_allocated: self.max_allocated.load(Ordering::Relaxed),
            reserved: self.reserved.load(Ordering::Relaxed),
            max_reserved: self.max_reserved.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn counters(&self) -> AllocCounters {
        AllocCounters {
            device_allocs: self.device_allocs.load(Ordering::Relaxed),
            device_frees: self.device_frees.load(Ordering::Relaxed),
            empty_cache_calls: self.empty_cache_calls.load(Ordering::Relaxed),
            empty_cache_nanos: self.empty_cache_nanos.load(Ordering::Relaxed),
            empty_cache_max_nanos: self.empty_cache_max_nanos.load(Ordering::Relaxed),
        }
    }

    fn add(now: &AtomicU64, peak: &AtomicU64, bytes: u64) {
        let v = now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        peak.fetch_max(v, Ordering::Relaxed);
    }
}

/// The allocation failed: the host does not have the memory the flags ask for.
#[derive(Debug)]
pub(crate) struct AllocError {
    pub(crate) bytes: usize,
}

/// A block of touched host memory; counts as reserved while it exists.
#[derive(Debug)]
struct Block {
    data: Vec<u8>,
    acct: Arc<Accounting>,
}

impl Block {
    fn new(acct: &Arc<Accounting>, bytes: usize) -> Result<Block, AllocError> {
        let mut data = Vec::new();
        data.try_reserve_exact(bytes)
            .map_err(|_| AllocError { bytes })?;
        data.resize(bytes, 0);
        // `resize` with zeros may map untouched zero pages; one write per page makes them resident.
        for i in (0..bytes).step_by(PAGE) {
            data[i] = 1;
        }
        Accounting::add(&acct.reserved, &acct.max_reserved, bytes as u64);
        acct.device_allocs.fetch_add(1, Ordering::Relaxed);
        Ok(Block {
            data,
            acct: Arc::clone(acct),
        })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.acct
            .reserved
            .fetch_sub(self.data.len() as u64, Ordering::Relaxed);
        self.acct.device_frees.fetch_add(1, Ordering::Relaxed);
    }
}

/// A live buffer: counts as allocated until dropped or returned to its [`Pool`].
#[derive(Debug)]
pub(crate) struct Buffer {
    block: Option<Block>,
    len: usize,
}

impl Buffer {
    /// A buffer outside any pool (the model, a checkpoint staging copy).
    pub(crate) fn fresh(acct: &Arc<Accounting>, bytes: usize) -> Result<Buffer, AllocError> {
        Ok(Buffer::live(Block::new(acct, bytes)?, bytes))
    }

    fn live(block: Block, len: usize) -> Buffer {
        Accounting::add(&block.acct.allocated, &block.acct.max_allocated, len as u64);
        Buffer {
            block: Some(block),
            len,
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |b| &b.data[..self.len])
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        self.block.as_mut().map_or(&mut [], |b| &mut b.data[..len])
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Some(b) = &self.block {
            b.acct
                .allocated
                .fetch_sub(self.len as u64, Ordering::Relaxed);
        }
    }
}

/// A caching pool: freed blocks are kept for reuse until [`Pool::empty_cache`], like
/// `torch.cuda.empty_cache()` under `--empty-unused-memory-level`.
#[derive(Debug)]
pub(crate) struct Pool {
    acct: Arc<Accounting>,
    cache: Vec<Block>,
}

impl Pool {
    pub(crate) fn new(acct: &Arc<Accounting>) -> Pool {
        Pool {
            acct: Arc::clone(acct),
            cache: Vec::new(),
        }
    }

    /// The smallest cached block that fits, else a new one.
    pub(crate) fn alloc(&mut self, bytes: usize) -> Result<Buffer, AllocError> {
        let best = (self.cache.iter().enumerate())
            .filter(|(_, b)| b.data.len() >= bytes)
            .min_by_key(|(_, b)| b.data.len())
            .map(|(i, _)| i);
        let block = match best {
            Some(i) => self.cache.swap_remove(i),
            None => Block::new(&self.acct, bytes)?,
        };
        Ok(Buffer::live(block, bytes))
    }

    pub(crate) fn free(&mut self, mut buf: Buffer) {
        let len = buf.len;
        if let Some(block) = buf.block.take() {
            block
                .acct
                .allocated
                .fetch_sub(len as u64, Ordering::Relaxed);
            self.cache.push(block);
        }
    }

    /// Frees every cached block and counts the call (its time included).
    pub(crate) fn empty_cache(&mut self) {
        let start = std::time::Instant::now();
        self.cache.clear();
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.acct.empty_cache_calls.fetch_add(1, Ordering::Relaxed);
        self.acct
            .empty_cache_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        self.acct
            .empty_cache_max_nanos
            .fetch_max(nanos, Ordering::Relaxed);
    }
}

/// Writes every byte (a forward pass filling its activations) and returns a checksum so the work
/// cannot be optimised away.
pub(crate) fn fill(buf: &mut [u8], salt: u8) -> u64 {
    buf.fill(salt);
    buf.iter().step_by(PAGE).map(|&b| u64::from(b)).sum()
}

/// One write per page (an optimizer step touching the model), keeping it resident.
pub(crate) fn touch(buf: &mut [u8], salt: u8) {
    for i in (0..buf.len()).step_by(PAGE) {
        buf[i] = buf[i].wrapping_add(salt);
    }
}

/// Resident set size of this process in bytes (`/proc/self/statm`), `None` off Linux.
pub(crate) fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn pool_counts_like_a_caching_allocator() {
        let acct = Arc::new(Accounting::default());
        let model = Buffer::fresh(&acct, 4 * MIB).unwrap();
        let mut pool = Pool::new(&acct);
        let act = pool.alloc(2 * MIB).unwrap();
        assert_eq!(acct.snapshot().allocated, 6 * MIB as u64);
        pool.free(act);
        let s = acct.snapshot();
        assert_eq!(
            (s.allocated, s.reserved, s.max_allocated),
            (4 * MIB as u64, 6 * MIB as u64, 6 * MIB as u64)
        );
        let again = pool.alloc(MIB).unwrap();
        assert_eq!(
            acct.snapshot().reserved,
            6 * MIB as u64,
            "cached block reused"
        );
        pool.free(again);
        pool.empty_cache();
        assert_eq!(acct.snapshot().reserved, 4 * MIB as u64);
        let c = acct.counters();
        assert_eq!(
            (c.device_allocs, c.device_frees, c.empty_cache_calls),
            (2, 1, 1)
        );
        drop(model);
        let s = acct.snapshot();
        assert_eq!(
            (s.allocated, s.reserved, s.max_reserved),
            (0, 0, 6 * MIB as u64)
        );
    }

    #[test]
    fn buffers_are_resident() {
        let before = rss_bytes().unwrap();
        let acct = Arc::new(Accounting::default());
        let mut b = Buffer::fresh(&acct, 32 * MIB).unwrap();
        let after = rss_bytes().unwrap();
        assert!(after >= before + 30 * MIB as u64, "rss {before} -> {after}");
        assert_eq!(fill(b.bytes_mut(), 3), 3 * (32 * MIB / PAGE) as u64);
    }

    #[test]
    fn impossible_allocation_is_an_error_not_an_abort() {
        let acct = Arc::new(Accounting::default());
        let err = Buffer::fresh(&acct, usize::MAX / 2).unwrap_err();
        assert_eq!(err.bytes, usize::MAX / 2);
    }
}
