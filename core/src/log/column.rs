//! Stage "observe", log parser: the columns that hold a log's per-step series — [`Chunked`],
//! a growable column kept in fixed-size chunks; [`Values`], which keeps a value repeated on
//! every line once; and [`StepColumn`], which keeps evenly spaced steps as a stride.

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

/// A series' values in order. A value printed the same on every line so far (`loss scale:
/// 1.0`, `global batch size: 32`, `number of nan iterations: 0`: a good part of a long log's
/// columns) is kept once, and written out into a column at the first value that differs.
#[derive(Clone, Debug)]
pub(crate) enum Values {
    Same { value: f64, len: usize },
    Each(Chunked<f64>),
}

impl Default for Values {
    fn default() -> Values {
        Values::Same { value: 0.0, len: 0 }
    }
}

impl Values {
    /// Appends `v`.
    #[inline]
    pub(crate) fn push(&mut self, v: f64) {
        match self {
            Values::Each(each) => each.push(v),
            // Bits, not `==`: NaN repeats, and -0.0 differs from 0.0.
            Values::Same { value, len } if *len == 0 || value.to_bits() == v.to_bits() => {
                *value = v;
                *len += 1;
            }
            Values::Same { .. } => self.write_out(v),
        }
    }

    #[cold]
    fn write_out(&mut self, v: f64) {
        let each = self.iter_from(0).chain([v]).collect();
        *self = Values::Each(each);
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Values::Same { len, .. } => *len,
            Values::Each(each) => each.len(),
        }
    }

    /// Value `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&f64> {
        match self {
            Values::Same { value, len } => (i < *len).then_some(value),
            Values::Each(each) => each.get(i),
        }
    }

    /// The values from `start` on, in order.
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = f64> + '_ {
        let (each, same) = match self {
            Values::Same { value, len } => (None, Some((*value, len.saturating_sub(start)))),
            Values::Each(each) => (Some(each.iter_from(start)), None),
        };
        let same = same
            .into_iter()
            .flat_map(|(v, n)| std::iter::repeat_n(v, n));
        each.into_iter().flatten().chain(same)
    }
}

impl FromIterator<f64> for Values {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Values {
        Values::Each(iter.into_iter().collect())
    }
}

/// Steps in the order printed. Steps that rise by a fixed stride (an iteration line every
/// `--log-interval` iterations) are kept as the first one and the stride, and written out
/// into a column at the first step off that pattern.
#[derive(Clone, Debug)]
pub(crate) enum StepColumn {
    Stride { first: u64, stride: u64, len: usize },
    Each(Chunked<u64>),
}

impl Default for StepColumn {
    fn default() -> StepColumn {
        StepColumn::Stride {
            first: 0,
            stride: 0,
            len: 0,
        }
    }
}

impl StepColumn {
    /// Appends `step`.
    #[inline]
    pub(crate) fn push(&mut self, step: u64) {
        match self {
            StepColumn::Each(each) => each.push(step),
            StepColumn::Stride { first, stride, len } => match *len {
                0 => (*first, *len) = (step, 1),
                1 if step > *first => (*stride, *len) = (step - *first, 2),
                n if n > 1 && Self::nth(*first, *stride, n) == Some(step) => *len += 1,
                _ => self.write_out(step),
            },
        }
    }

    /// `first + stride * n`, if it fits.
    fn nth(first: u64, stride: u64, n: usize) -> Option<u64> {
        first.checked_add(stride.checked_mul(u64::try_from(n).ok()?)?)
    }

    #[cold]
    fn write_out(&mut self, step: u64) {
        let each = self.iter_from(0).chain([step]).collect();
        *self = StepColumn::Each(each);
    }

    /// Number of steps.
    pub(crate) fn len(&self) -> usize {
        match self {
            StepColumn::Stride { len, .. } => *len,
            StepColumn::Each(each) => each.len(),
        }
    }

    /// Step `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        match self {
            StepColumn::Stride { first, stride, len } if i < *len => Self::nth(*first, *stride, i),
            StepColumn::Stride { .. } => None,
            StepColumn::Each(each) => each.get(i).copied(),
        }
    }

    /// The last step.
    pub(crate) fn last(&self) -> Option<u64> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The steps from `start` on, in order.
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = u64> + '_ {
        let (each, stride) = match self {
            StepColumn::Stride { len, .. } => (None, Some(start..*len)),
            StepColumn::Each(each) => (Some(each.iter_from(start)), None),
        };
        let stride = stride.into_iter().flatten().filter_map(|i| self.get(i));
        each.into_iter().flatten().chain(stride)
    }
}

impl FromIterator<u64> for StepColumn {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> StepColumn {
        let mut column = StepColumn::default();
        for step in iter {
            column.push(step);
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
        for start in [0, 5, CHUNK, CHUNK + 3, n - 1, n, n + 10] {
            assert!(column.iter_from(start).eq(start..n), "from {start}");
        }
        assert_eq!(Chunked::<u8>::default().get(0), None);
    }

    #[test]
    fn values_kept_once_while_they_repeat_read_like_a_column() {
        let printed = [1.0, 1.0, 1.0, 2.0, -0.0, 0.0, f64::NAN, f64::NAN];
        let bits = |vs: &mut dyn Iterator<Item = f64>| vs.map(f64::to_bits).collect::<Vec<_>>();
        for n in 0..=printed.len() {
            let mut values = Values::default();
            printed[..n].iter().for_each(|&v| values.push(v));
            assert_eq!(values.len(), n);
            assert_eq!(
                bits(&mut values.iter_from(0)),
                bits(&mut printed[..n].iter().copied())
            );
            let from_2 = printed.get(2..n).unwrap_or_default();
            assert_eq!(
                bits(&mut values.iter_from(2)),
                bits(&mut from_2.iter().copied())
            );
            assert_eq!(values.get(n), None);
            assert!(
                (0..n).all(|i| values.get(i).map(|v| v.to_bits()) == Some(printed[i].to_bits()))
            );
        }
        let mut same = Values::default();
        (0..5).for_each(|_| same.push(3.0));
        assert!(matches!(same, Values::Same { len: 5, .. }));
    }

    #[test]
    fn steps_kept_as_a_stride_while_they_rise_by_one_read_like_a_column() {
        let cases: [&[u64]; 7] = [
            &[],
            &[5],
            &[10, 20, 30, 40],
            &[10, 20, 30, 45, 50],
            &[3, 3, 4],
            &[7, 2, 9],
            &[1, u64::MAX / 2, u64::MAX - 1, 1],
        ];
        for printed in cases {
            let column: StepColumn = printed.iter().copied().collect();
            assert_eq!(column.len(), printed.len());
            assert!(
                column.iter_from(0).eq(printed.iter().copied()),
                "{printed:?}"
            );
            let from_1 = printed.get(1..).unwrap_or_default();
            assert!(
                column.iter_from(1).eq(from_1.iter().copied()),
                "{printed:?}"
            );
            assert!((0..=printed.len()).all(|i| column.get(i) == printed.get(i).copied()));
            assert_eq!(column.last(), printed.last().copied());
        }
        let stride: StepColumn = (1..=100).map(|i| i * 10).collect();
        assert!(matches!(
            stride,
            StepColumn::Stride {
                first: 10,
                stride: 10,
                len: 100
            }
        ));
    }
}
