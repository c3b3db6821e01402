//! Handle slots: the safe layer's handle words, address-stable and owned by the pool.
//!
//! Slots are never moved or deallocated while the pool lives (16384 words per chunk, 2^26 in
//! all). Free slots form a lock-free stack; the link is kept in the free slot's own word and the
//! stack head carries a tag against ABA. Each thread also keeps the slot it freed last (of one
//! pool at a time) aside, so a free followed by a store, the steady-state step, touches the
//! shared stack not at all. A thread that exits, or moves on to another pool, while keeping a
//! slot leaves that one slot unused.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::chunked::ChunkedTable;

/// The safe layer's handle words.
pub(crate) struct HandleSlots {
    words: ChunkedTable<AtomicUsize, 14, 4096>,
    /// Low 32 bits: top slot + 1 (0 = empty); high 32 bits: ABA tag.
    free_top: AtomicU64,
    /// Never reused by another table, so a thread's kept slot is matched to its table exactly.
    id: u64,
}

static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (table id, slot) of the slot this thread freed last; table id 0: none.
    static KEPT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

impl HandleSlots {
    pub fn new() -> Self {
        HandleSlots {
            words: ChunkedTable::new(),
            free_top: AtomicU64::new(0),
            id: NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The slot this thread kept aside for this table, taken out of the keep.
    #[inline]
    fn take_kept(&self) -> Option<u32> {
        KEPT.try_with(|k| {
            let (id, slot) = k.get();
            (id == self.id).then(|| {
                k.set((0, 0));
                slot
            })
        })
        .ok()
        .flatten()
    }

    /// Keeps `slot` aside for this thread; returns the slot it displaces, if it was this
    /// table's (or `slot` itself when the thread cannot keep it).
    #[inline]
    fn keep(&self, slot: u32) -> Option<u32> {
        KEPT.try_with(|k| {
            let (id, old) = k.replace((self.id, slot));
            (id == self.id).then_some(old)
        })
        .unwrap_or(Some(slot))
    }

    #[inline]
    pub fn word(&self, slot: u32) -> &AtomicUsize {
        self.words.get(slot as usize).expect("handle slot was taken from this table")
    }

    /// Takes an empty slot; `None` when all 2^26 slots are live.
    pub fn take(&self) -> Option<u32> {
        if let Some(slot) = self.take_kept() {
            return Some(slot);
        }
        let mut top = self.free_top.load(Ordering::Acquire);
        loop {
            let Some(slot) = (top as u32).checked_sub(1) else {
                return self.words.push().map(|(idx, _)| idx as u32);
            };
            let next = self.word(slot).load(Ordering::Relaxed) as u64;
            let new = ((top >> 32).wrapping_add(1) << 32) | next;
            match self.free_top.compare_exchange_weak(top, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.word(slot).store(0, Ordering::Relaxed);
                    return Some(slot);
                }
                Err(now) => top = now,
            }
        }
    }

    /// Returns an empty slot.
    pub fn give_back(&self, slot: u32) {
        let Some(slot) = self.keep(slot) else { return };
        let mut top = self.free_top.load(Ordering::Acquire);
        loop {
            self.word(slot).store((top as u32) as usize, Ordering::Relaxed);
            let new = ((top >> 32).wrapping_add(1) << 32) | u64::from(slot + 1);
            match self.free_top.compare_exchange_weak(top, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => top = now,
            }
        }
    }

    /// Heap bytes taken by slots (reported apart from the pool's own metadata).
    pub fn heap_bytes(&self) -> usize {
        self.words.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_lifo() {
        let s = HandleSlots::new();
        let (a, b) = (s.take().unwrap(), s.take().unwrap());
        assert_ne!(a, b);
        s.give_back(a);
        s.give_back(b);
        assert_eq!(s.take(), Some(b));
        assert_eq!(s.take(), Some(a));
        assert_eq!(s.take(), Some(2));
    }
}
