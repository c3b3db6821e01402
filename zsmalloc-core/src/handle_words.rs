//! A table of raw handle words at stable addresses, for callers of the raw layer (`*_raw`
//! methods, [`Backend`](crate::Backend)) that keep their handle words in the pool's care rather
//! than in their own records: the C ABI's `unsigned long` handles, the lab's workloads.
//!
//! The raw layer requires a handle word to stay at one address while it holds an object
//! (compaction rewrites it, and zsmalloc's object header names it), so words live in chunks that
//! are never moved nor freed before the table (`chunked.rs`). Reads take no lock; `push` may be
//! called from several threads at once.

use std::sync::atomic::AtomicUsize;

use crate::chunked::ChunkedTable;

/// Words per chunk (128 KiB), and chunks: 2^27 words at most, a 64 KiB directory.
const CHUNK_SHIFT: u32 = 14;
const CHUNKS: usize = 8192;

/// Raw handle words whose addresses never change, indexed from 0 in the order they were pushed.
pub struct HandleWords {
    words: ChunkedTable<AtomicUsize, CHUNK_SHIFT, CHUNKS>,
}

impl Default for HandleWords {
    fn default() -> Self {
        HandleWords::new()
    }
}

impl HandleWords {
    pub fn new() -> Self {
        HandleWords { words: ChunkedTable::new() }
    }

    /// Most words the table can hold (2^27).
    pub const fn capacity() -> usize {
        ChunkedTable::<AtomicUsize, CHUNK_SHIFT, CHUNKS>::capacity()
    }

    /// Words pushed so far.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends an empty word (0); its index, or `None` when the table is full.
    pub fn push(&self) -> Option<usize> {
        self.words.push().map(|(i, _)| i)
    }

    /// The word at index `i`, if it was pushed.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&AtomicUsize> {
        if i >= self.len() {
            return None;
        }
        self.words.get(i)
    }

    /// The index of the word at address `addr`, if it is one of this table's words (a value
    /// handed back by a caller that knows words by address, checked before use): one compare
    /// per chunk of 16,384 words.
    pub fn index_of(&self, addr: usize) -> Option<usize> {
        let len = self.len();
        let chunks = ChunkedTable::<AtomicUsize, CHUNK_SHIFT, CHUNKS>::chunks_for(len);
        self.words.index_of(addr as *const AtomicUsize, chunks).filter(|&i| i < len)
    }

    /// Heap bytes of the words and the chunk directory.
    pub fn heap_bytes(&self) -> usize {
        self.words.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn words_keep_their_addresses_and_are_found_by_them() {
        let w = HandleWords::new();
        assert!(w.is_empty() && w.get(0).is_none());
        let first = w.get(w.push().unwrap()).unwrap() as *const AtomicUsize;
        let n = (1 << CHUNK_SHIFT) * 2 + 5;
        for i in 1..n {
            assert_eq!(w.push(), Some(i));
        }
        assert_eq!(w.len(), n);
        assert!(std::ptr::eq(w.get(0).unwrap(), first), "the first word did not move");
        assert!(w.get(n).is_none(), "not pushed");
        for i in [0, 1, (1 << CHUNK_SHIFT) - 1, 1 << CHUNK_SHIFT, n - 1] {
            let word = w.get(i).unwrap();
            assert_eq!(word.load(Ordering::Relaxed), 0, "pushed empty");
            assert_eq!(w.index_of(word as *const AtomicUsize as usize), Some(i));
        }
        assert_eq!(w.index_of(first as usize + 1), None, "inside a word");
        assert_eq!(w.index_of(0), None);
        let last = w.get(n - 1).unwrap() as *const AtomicUsize as usize;
        assert_eq!(w.index_of(last + 8), None, "allocated but not pushed");
        let elsewhere = AtomicUsize::new(0);
        assert_eq!(w.index_of(&elsewhere as *const AtomicUsize as usize), None);
    }
}
