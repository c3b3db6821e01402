//! An append-only table of address-stable entries, grown in fixed chunks.
//!
//! Used for zspage metadata, page roles, the safe layer's handle words and the raw layer's public
//! table of handle words (`handle_words.rs`): entries never move
//! (readers hold references without locks) and a lookup is one acquire load of the chunk pointer
//! plus an index. Chunks are allocated when the first entry in them is taken, so memory follows the
//! high-water mark in chunk steps.
//!
//! Invariant: a chunk pointer is null or points at `CHUNK` initialised `T`s leaked from a
//! `Box<[T]>` by `get_or_alloc`; it is set once (compare-and-swap from null) and freed only by
//! `Drop`, which `&self` borrows exclude. So a non-null pointer read with Acquire names live
//! entries for as long as `&self` lives.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

pub struct ChunkedTable<T, const CHUNK_SHIFT: u32, const CHUNKS: usize> {
    /// A fixed-length directory, so that its bounds check compares with a constant.
    chunks: Box<[AtomicPtr<T>; CHUNKS]>,
    len: AtomicUsize,
    /// The table owns the chunks' `T`s (drop check, auto traits below).
    _owns: PhantomData<Box<[T]>>,
}

// SAFETY: the table hands out `&T` to any thread holding `&ChunkedTable` and drops the `T`s
// wherever the table is dropped, exactly as a `Box<[T]>` shared by reference would.
unsafe impl<T: Send + Sync, const S: u32, const C: usize> Sync for ChunkedTable<T, S, C> {}
// SAFETY: as for `Sync`: moving the table moves ownership of its `T`s.
unsafe impl<T: Send, const S: u32, const C: usize> Send for ChunkedTable<T, S, C> {}

impl<T: Default, const CHUNK_SHIFT: u32, const CHUNKS: usize> ChunkedTable<T, CHUNK_SHIFT, CHUNKS> {
    const CHUNK: usize = 1 << CHUNK_SHIFT;

    pub fn new() -> Self {
        let chunks: Box<[AtomicPtr<T>]> =
            (0..CHUNKS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect();
        ChunkedTable {
            chunks: chunks.try_into().unwrap_or_else(|_| unreachable!("CHUNKS entries")),
            len: AtomicUsize::new(0),
            _owns: PhantomData,
        }
    }

    /// Most entries the table can hold.
    pub const fn capacity() -> usize {
        CHUNKS << CHUNK_SHIFT
    }

    /// The entry at `idx` if its chunk was ever allocated.
    #[inline]
    pub fn get(&self, idx: usize) -> Option<&T> {
        let chunk = self.chunks.get(idx >> CHUNK_SHIFT)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a non-null chunk holds CHUNK live entries until `Drop` (module invariant), and
        // the masked index is below CHUNK.
        Some(unsafe { &*chunk.add(idx & (Self::CHUNK - 1)) })
    }

    /// Takes a new entry (its value is `T::default()`); `None` when the table is full.
    pub fn push(&self) -> Option<(usize, &T)> {
        let idx = self.len.fetch_add(1, Ordering::Relaxed);
        if idx >= Self::capacity() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some((idx, self.get_or_alloc(idx)?))
    }

    /// The entry at `idx`, allocating its chunk if needed (for tables indexed by a number handed
    /// out elsewhere, such as page numbers); `None` beyond the capacity.
    pub fn get_or_alloc(&self, idx: usize) -> Option<&T> {
        if let Some(entry) = self.get(idx) {
            return Some(entry);
        }
        let entry = self.chunks.get(idx >> CHUNK_SHIFT)?;
        let fresh: Box<[T]> = (0..Self::CHUNK).map(|_| T::default()).collect();
        let fresh = Box::into_raw(fresh) as *mut T;
        if let Err(_installed) =
            entry.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: `fresh` came from `Box::into_raw` of CHUNK entries just above and was never
            // published (the exchange failed), so this is its only owner.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, Self::CHUNK)) });
        }
        self.get(idx)
    }

    /// Entries taken by `push` (or, for a table filled by `get_or_alloc`, 0).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire).min(Self::capacity())
    }

    /// The index of the entry at address `entry`, if it is one of this table's entries in a
    /// chunk below `chunks` (a scan of the directory: one compare per chunk).
    pub fn index_of(&self, entry: *const T, chunks: usize) -> Option<usize> {
        let size = std::mem::size_of::<T>().max(1);
        let addr = entry as usize;
        self.chunks.iter().take(chunks).enumerate().find_map(|(c, chunk)| {
            let base = chunk.load(Ordering::Acquire) as usize;
            let off = addr.checked_sub(base)?;
            (base != 0 && off < Self::CHUNK * size && off % size == 0)
                .then(|| (c << CHUNK_SHIFT) + off / size)
        })
    }

    /// Chunks needed for `n` entries.
    pub const fn chunks_for(n: usize) -> usize {
        n.div_ceil(Self::CHUNK)
    }

    /// Heap bytes held by allocated chunks and the chunk directory.
    pub fn heap_bytes(&self) -> usize {
        let chunks = self.chunks.iter().filter(|c| !c.load(Ordering::Acquire).is_null()).count();
        chunks * Self::CHUNK * std::mem::size_of::<T>()
            + CHUNKS * std::mem::size_of::<AtomicPtr<T>>()
    }
}

impl<T, const CHUNK_SHIFT: u32, const CHUNKS: usize> Drop for ChunkedTable<T, CHUNK_SHIFT, CHUNKS> {
    fn drop(&mut self) {
        for entry in self.chunks.iter_mut() {
            let chunk = *entry.get_mut();
            if !chunk.is_null() {
                // SAFETY: a non-null chunk came from `Box::into_raw` of `1 << CHUNK_SHIFT` entries
                // and is freed only here, once; `&mut self` means no entry is borrowed.
                drop(unsafe {
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(chunk, 1 << CHUNK_SHIFT))
                });
            }
        }
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

    #[test]
    fn racing_chunk_allocations_keep_one_chunk_and_drop_every_slot() {
        static LIVE: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Default for Counted {
            fn default() -> Self {
                LIVE.fetch_add(1, Ordering::Relaxed);
                Counted
            }
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                LIVE.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let t: ChunkedTable<Counted, 4, 8> = ChunkedTable::new();
        let seen: Vec<usize> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..4)
                .map(|_| s.spawn(|| t.get_or_alloc(37).expect("in range") as *const _ as usize))
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|&p| p == seen[0]), "every racer got the installed chunk");
        assert_eq!(LIVE.load(Ordering::Relaxed), 16, "losing chunks were dropped");
        assert_eq!(t.heap_bytes(), 16 * std::mem::size_of::<Counted>() + 8 * 8);
        drop(t);
        assert_eq!(LIVE.load(Ordering::Relaxed), 0);
    }
}
