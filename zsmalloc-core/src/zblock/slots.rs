//! Each slot's safety state, outside the simulated pages, readable without the type's lock: a
//! state word (live, length, sequence number, open read sections) and the owner's address, in a
//! record array per block entry; and the block's base address.
//!
//! Protocol. Everything that changes a slot (store, free, move) holds the type's lock; readers
//! hold nothing. A store writes the owner, then the bytes, then publishes the state word
//! (Release) with the next sequence number. A reader loads the state, checks it is live with the
//! handle word's sequence number and that the owner is the handle word's address, then counts
//! itself in with a compare-and-swap of that very state (Acquire: it sees the bytes). A free
//! swaps a state with no reader for a dead one (same sequence), a move swaps it for the next
//! sequence (then writes the new owner): either makes a reader's compare-and-swap on the old
//! state fail, and a counted reader makes them fail (`Busy`). Records are never freed before the
//! pool, so a reader's lookup never touches freed memory; a block entry keeps its records (and
//! their sequence numbers) from one block to the next, so a stale word is refused.

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crate::chunked::ChunkedTable;

use super::word::{MAX_BLOCKS, SEQ_MASK};

const READERS_MASK: u64 = 0xffff;
const LIVE: u64 = 1 << 16;
const LEN_SHIFT: u32 = 17;
const LEN_MASK: u64 = (1 << 17) - 1;
const SEQ_SHIFT: u32 = 34;

/// A slot's state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State(pub u64);

impl State {
    #[inline]
    pub fn live(len: usize, seq: u16) -> State {
        debug_assert!(len as u64 <= LEN_MASK);
        State(LIVE | (len as u64) << LEN_SHIFT | u64::from(seq & SEQ_MASK) << SEQ_SHIFT)
    }
    #[inline]
    pub fn is_live(self) -> bool {
        self.0 & LIVE != 0
    }
    #[inline]
    pub fn len(self) -> usize {
        ((self.0 >> LEN_SHIFT) & LEN_MASK) as usize
    }
    #[inline]
    pub fn seq(self) -> u16 {
        (self.0 >> SEQ_SHIFT) as u16 & SEQ_MASK
    }
    #[inline]
    pub fn readers(self) -> u32 {
        (self.0 & READERS_MASK) as u32
    }
    /// The same slot, dead (the sequence number kept, so the next store moves past it).
    #[inline]
    pub fn dead(self) -> State {
        State(u64::from(self.seq()) << SEQ_SHIFT)
    }
    /// The sequence number a new object (or a moved one) of this slot gets.
    #[inline]
    pub fn next_seq(self) -> u16 {
        (self.seq() + 1) & SEQ_MASK
    }
}

/// One slot's record.
#[derive(Default)]
pub struct SlotRec {
    pub state: AtomicU64,
    /// Address of the owning handle word (meaningful while live).
    pub owner: AtomicUsize,
}

impl SlotRec {
    #[inline]
    pub fn load(&self) -> State {
        State(self.state.load(Ordering::Acquire))
    }
    /// Swaps `cur` for `new`; false if the state changed meanwhile.
    #[inline]
    pub fn swap(&self, cur: State, new: State) -> bool {
        self.state.compare_exchange(cur.0, new.0, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

/// One block entry's records: the current block's base address and its slots' records.
#[derive(Default)]
pub struct BlockRec {
    pub base: AtomicUsize,
    /// The type's slots-per-block records leaked from a `Box<[SlotRec]>`, set once (under the
    /// type's lock) before any of them is published live, freed by `TypeRecs`'s `Drop`.
    slots: AtomicPtr<SlotRec>,
}

/// Entries per chunk of a type's block records, and chunks (2^20 entries: `MAX_BLOCKS`): an
/// empty type costs the 4 KiB directory, a used one 32 KiB more per 2,048 block entries.
const CHUNK_SHIFT: u32 = 11;
const CHUNKS: usize = 512;
const _: () = assert!((CHUNKS << CHUNK_SHIFT) == MAX_BLOCKS as usize);

/// One block type's records.
pub struct TypeRecs {
    slots_per_block: usize,
    blocks: ChunkedTable<BlockRec, CHUNK_SHIFT, CHUNKS>,
    /// Heap bytes of the slot records allocated so far.
    slot_bytes: AtomicUsize,
}

impl TypeRecs {
    pub fn new(slots_per_block: u32) -> TypeRecs {
        TypeRecs {
            slots_per_block: slots_per_block as usize,
            blocks: ChunkedTable::new(),
            slot_bytes: AtomicUsize::new(0),
        }
    }

    /// The records of block entry `b` and of its slot `slot`, if they exist.
    #[inline]
    pub fn get(&self, b: u32, slot: u32) -> Option<(&BlockRec, &SlotRec)> {
        let blk = self.blocks.get(b as usize)?;
        Some((blk, self.slot(blk, slot)?))
    }

    /// The record of slot `slot` of `blk` (an entry of this type), if it has records and the
    /// slot exists.
    #[inline]
    pub fn slot<'a>(&self, blk: &'a BlockRec, slot: u32) -> Option<&'a SlotRec> {
        let p = blk.slots.load(Ordering::Acquire);
        if p.is_null() || slot as usize >= self.slots_per_block {
            return None;
        }
        // SAFETY: a non-null pointer names `slots_per_block` records (published with Release
        // once made) that live until `TypeRecs` is dropped, which the borrow of `blk` (one of
        // its entries) excludes; slot < slots_per_block.
        Some(unsafe { &*p.add(slot as usize) })
    }

    /// Block entry `b`'s records, made if needed, its base set to `base`. Caller holds the
    /// type's lock (the only writer of records) and no slot of the entry is live. `None` if the
    /// table cannot hold the entry.
    pub fn prepare(&self, b: u32, base: usize) -> Option<&BlockRec> {
        let blk = self.blocks.get_or_alloc(b as usize)?;
        if blk.slots.load(Ordering::Acquire).is_null() {
            let recs: Box<[SlotRec]> =
                (0..self.slots_per_block).map(|_| SlotRec::default()).collect();
            self.slot_bytes.fetch_add(
                self.slots_per_block * std::mem::size_of::<SlotRec>(),
                Ordering::Relaxed,
            );
            blk.slots.store(Box::into_raw(recs) as *mut SlotRec, Ordering::Release);
        }
        blk.base.store(base, Ordering::Release);
        Some(blk)
    }

    pub fn heap_bytes(&self) -> usize {
        self.blocks.heap_bytes() + self.slot_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for TypeRecs {
    fn drop(&mut self) {
        for b in 0..ChunkedTable::<BlockRec, CHUNK_SHIFT, CHUNKS>::capacity() {
            let Some(blk) = self.blocks.get(b) else {
                // Entries are taken in order from 0 (reused, never skipped): past the first
                // chunk not allocated there are none.
                break;
            };
            let p = blk.slots.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                let n = self.slots_per_block;
                // SAFETY: `p` came from `Box::into_raw` of `n` records in `prepare` and is taken
                // out (swapped for NULL) only here, once; `&mut self` means none is borrowed.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_fields() {
        let s = State::live(65511, 1023);
        assert!(s.is_live());
        assert_eq!((s.len(), s.seq(), s.readers()), (65511, 1023, 0));
        assert_eq!(State(s.0 + 3).readers(), 3);
        assert!(!s.dead().is_live());
        assert_eq!(s.dead().seq(), 1023);
        assert_eq!(s.next_seq(), 0);
        let r = TypeRecs::new(3);
        assert!(r.get(0, 0).is_none());
        let blk = r.prepare(0, 0x1000).unwrap();
        assert_eq!(blk.base.load(Ordering::Relaxed), 0x1000);
        assert!(r.get(0, 2).is_some() && r.get(0, 3).is_none() && r.get(1, 0).is_none());
    }
}
