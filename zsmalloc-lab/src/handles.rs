//! Raw handle words at stable addresses, as zram keeps `struct zs_handle` in its slot table.
//!
//! The raw layer requires a handle word to stay at one address while it holds an object
//! (compaction rewrites it, and the object's header points back at it), so words live in
//! fixed-size chunks that are never reallocated.

use std::sync::atomic::AtomicUsize;

const CHUNK_BITS: usize = 16;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A growable table of handle words whose addresses never change.
#[derive(Default)]
pub struct HandleWords {
    chunks: Vec<Box<[AtomicUsize]>>,
    len: usize,
}

impl HandleWords {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends an empty word and returns its index.
    pub fn push(&mut self) -> usize {
        if self.len == self.chunks.len() * CHUNK {
            self.chunks.push((0..CHUNK).map(|_| AtomicUsize::new(0)).collect());
        }
        self.len += 1;
        self.len - 1
    }

    /// The word at `i` (`i < len()`).
    #[inline]
    pub fn get(&self, i: usize) -> &AtomicUsize {
        debug_assert!(i < self.len);
        &self.chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_addresses() {
        let mut w = HandleWords::new();
        let i = w.push();
        let first = w.get(i) as *const AtomicUsize;
        for _ in 0..(CHUNK * 2 + 5) {
            w.push();
        }
        assert_eq!(first, w.get(0) as *const AtomicUsize);
        assert_eq!(w.len(), CHUNK * 2 + 6);
    }
}
