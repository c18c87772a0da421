//! Stage "observe", log parser: [`Chunked`], a growable column kept in fixed-size chunks,
//! which holds the per-step series of a log.

/// Entries per chunk (512 KiB of `f64`).
const CHUNK: usize = 1 << 16;

/// A growable column stored in chunks of [`CHUNK`] entries. Appending never moves what is
/// already stored: a long log's columns reach tens of megabytes, and a `Vec` that doubles
/// copies all of itself each time (the allocator copies rather than remaps blocks below its
/// mmap threshold, which rises to 32 MiB once a process has freed blocks that large).
#[derive(Clone, Debug)]
pub(crate) struct Chunked<T> {
    /// Every chunk but the last holds exactly `CHUNK` entries.
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Chunked<T> {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Copy> Chunked<T> {
    /// Appends `v`.
    #[inline]
    pub(crate) fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(v),
            _ => self.push_to_new_chunk(v),
        }
        self.len += 1;
    }

    #[cold]
    fn push_to_new_chunk(&mut self, v: T) {
        // The first chunk grows as a `Vec` does, so short columns stay small; a column that
        // filled one chunk is long, and gets its next chunks whole.
        let mut chunk = match self.chunks.is_empty() {
            true => Vec::new(),
            false => Vec::with_capacity(CHUNK),
        };
        chunk.push(v);
        self.chunks.push(chunk);
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Entry `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<&T> {
        self.chunks.last()?.last()
    }

    /// The entries from `start` on, in order.
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = T> + '_ {
        let chunks = self.chunks.get(start / CHUNK..).unwrap_or_default();
        chunks.iter().flatten().copied().skip(start % CHUNK)
    }
}

impl<T: Copy> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Chunked<T> {
        let mut column = Chunked::default();
        for v in iter {
            column.push(v);
        }
        column
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_index_across_chunks() {
        let n = 2 * CHUNK + 7;
        let column: Chunked<usize> = (0..n).collect();
        assert_eq!(column.len(), n);
        for i in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, n - 1] {
            assert_eq!(column.get(i), Some(&i));
        }
        assert_eq!(column.get(n), None);
        assert_eq!(column.last(), Some(&(n - 1)));
        for start in [0, 5, CHUNK, CHUNK + 3, n - 1, n, n + 10] {
            assert!(column.iter_from(start).eq(start..n), "from {start}");
        }
        assert_eq!(Chunked::<u8>::default().last(), None);
    }
}
