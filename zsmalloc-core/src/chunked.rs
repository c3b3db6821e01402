//! An append-only table of address-stable slots, grown in fixed chunks.
//!
//! Used for zspage metadata, page roles and the safe layer's handle words: slots never move (readers hold
//! references without locks) and a lookup is one acquire load plus an index. Chunks are allocated
//! when the first slot in them is taken, so memory follows the high-water mark in chunk steps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub struct ChunkedTable<T, const CHUNK_SHIFT: u32, const CHUNKS: usize> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    len: AtomicUsize,
}

impl<T: Default, const CHUNK_SHIFT: u32, const CHUNKS: usize> ChunkedTable<T, CHUNK_SHIFT, CHUNKS> {
    const CHUNK: usize = 1 << CHUNK_SHIFT;

    pub fn new() -> Self {
        ChunkedTable {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
        }
    }

    /// Most slots the table can hold.
    pub const fn capacity() -> usize {
        CHUNKS << CHUNK_SHIFT
    }

    /// The slot at `idx` if it was ever taken.
    #[inline]
    pub fn get(&self, idx: usize) -> Option<&T> {
        let chunk = self.chunks.get(idx >> CHUNK_SHIFT)?.get()?;
        chunk.get(idx & (Self::CHUNK - 1))
    }

    /// Takes a new slot (its value is `T::default()`); `None` when the table is full.
    pub fn push(&self) -> Option<(usize, &T)> {
        let idx = self.len.fetch_add(1, Ordering::Relaxed);
        if idx >= Self::capacity() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let chunk = self.chunks[idx >> CHUNK_SHIFT]
            .get_or_init(|| (0..Self::CHUNK).map(|_| T::default()).collect());
        Some((idx, &chunk[idx & (Self::CHUNK - 1)]))
    }

    /// The slot at `idx`, allocating its chunk if needed (for tables indexed by a number handed
    /// out elsewhere, such as page numbers); `None` beyond the capacity.
    pub fn get_or_alloc(&self, idx: usize) -> Option<&T> {
        let chunk = self
            .chunks
            .get(idx >> CHUNK_SHIFT)?
            .get_or_init(|| (0..Self::CHUNK).map(|_| T::default()).collect());
        chunk.get(idx & (Self::CHUNK - 1))
    }

    /// Heap bytes held by allocated chunks and the chunk directory.
    pub fn heap_bytes(&self) -> usize {
        let chunks = self.chunks.iter().filter(|c| c.get().is_some()).count();
        chunks * Self::CHUNK * std::mem::size_of::<T>()
            + CHUNKS * std::mem::size_of::<OnceLock<Box<[T]>>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn slots_are_stable_and_bounded() {
        let t: ChunkedTable<AtomicU32, 2, 3> = ChunkedTable::new();
        let first = t.push().unwrap().1 as *const AtomicU32;
        for i in 1..12 {
            assert_eq!(t.push().unwrap().0, i);
        }
        assert!(t.push().is_none());
        assert!(std::ptr::eq(t.get(0).unwrap(), first));
        assert!(t.get(12).is_none());
    }
}
