//! Each slot's safety state, outside the simulated pages, readable without the type's lock: a
//! record per slot (state word and owner, `slot_state.rs`, whose protocol zblock follows with the
//! type's lock as the one writer) in a record array per block entry; and the block's base
//! address. A block entry keeps its records (and their sequence numbers) from one block to the
//! next, so a stale word is refused.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::chunked::ChunkedTable;

use super::word::{MAX_BLOCKS, SEQ_BITS};

/// A slot's state word.
pub type State = crate::slot_state::State<SEQ_BITS>;
/// One slot's record.
pub type SlotRec = crate::slot_state::SlotRec<SEQ_BITS>;

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
    fn records_per_block_entry() {
        let r = TypeRecs::new(3);
        assert!(r.get(0, 0).is_none());
        let blk = r.prepare(0, 0x1000).unwrap();
        assert_eq!(blk.base.load(Ordering::Relaxed), 0x1000);
        assert!(r.get(0, 2).is_some() && r.get(0, 3).is_none() && r.get(1, 0).is_none());
    }
}
