//! One block type's placement state, under its lock: the table of its blocks (which slots are
//! taken) and the active list (blocks with a free slot, in zblock's order). The slots' safety
//! state is in `slots.rs`. None of this lives in the simulated pages.

use crate::arena::Pfn;

use super::word::MAX_BLOCKS;

/// No block (end of the active list).
const NIL: u32 = u32::MAX;

/// A block: `num_pages` adjacent pages from the arena.
pub struct Block {
    live: bool,
    first: Pfn,
    used: u32,
    /// Bit i set: slot i taken (bits past the type's slots are set too).
    taken: [u64; 4],
    prev: u32,
    next: u32,
    listed: bool,
}

/// What a free did to the block.
#[derive(Debug, PartialEq, Eq)]
pub enum Freed {
    /// The block keeps other objects.
    Kept,
    /// The block emptied and is gone: give its pages (first page) back.
    Released(Pfn),
}

/// One type's blocks.
pub struct TypeState {
    slots_per_block: u32,
    blocks: Vec<Block>,
    /// Entries of `blocks` with no live block.
    vacant: Vec<u32>,
    head: u32,
    tail: u32,
    pub nblocks: u64,
    pub obj_used: u64,
    pub bytes_stored: u64,
}

impl TypeState {
    pub fn new(slots_per_block: u32) -> TypeState {
        TypeState {
            slots_per_block,
            blocks: Vec::new(),
            vacant: Vec::new(),
            head: NIL,
            tail: NIL,
            nblocks: 0,
            obj_used: 0,
            bytes_stored: 0,
        }
    }

    /// The lowest free slot of the active list's first block, now taken (the block leaves the
    /// list if that was its last free slot); `None` when the list is empty.
    pub fn claim(&mut self) -> Option<(u32, u32)> {
        let b = self.head;
        if b == NIL {
            return None;
        }
        let slot = self.take_lowest(b);
        if self.blocks[b as usize].used == self.slots_per_block {
            self.unlink(b);
        }
        Some((b, slot))
    }

    /// Whether another block can be added (a handle word names at most `MAX_BLOCKS` per type).
    pub fn can_add(&self) -> bool {
        !self.vacant.is_empty() || self.blocks.len() < MAX_BLOCKS as usize
    }

    /// The entry the next new block gets.
    pub fn next_entry(&self) -> u32 {
        self.vacant.last().copied().unwrap_or(self.blocks.len() as u32)
    }

    /// A new block at pages `first..`, its slot 0 taken, at the head of the active list if it
    /// has another slot. Returns its entry (`next_entry()`; `can_add` was true).
    pub fn add_block(&mut self, first: Pfn) -> u32 {
        let n = self.slots_per_block;
        let mut taken = [0u64; 4];
        for (i, w) in taken.iter_mut().enumerate() {
            let lo = i as u32 * 64;
            // Bits of slots the type does not have are set: never free.
            *w = if n <= lo {
                !0
            } else if n >= lo + 64 {
                0
            } else {
                !0 << (n - lo)
            };
        }
        let b = match self.vacant.pop() {
            Some(b) => {
                let blk = &mut self.blocks[b as usize];
                blk.live = true;
                blk.first = first;
                blk.used = 0;
                blk.taken = taken;
                b
            }
            None => {
                self.blocks.push(Block {
                    live: true,
                    first,
                    used: 0,
                    taken,
                    prev: NIL,
                    next: NIL,
                    listed: false,
                });
                (self.blocks.len() - 1) as u32
            }
        };
        self.nblocks += 1;
        let slot = self.take_lowest(b);
        debug_assert_eq!(slot, 0);
        if self.blocks[b as usize].used < n {
            self.push_head(b);
        }
        b
    }

    /// Whether block entry `b` holds a live block whose slot `slot` is taken.
    #[inline]
    pub fn is_taken(&self, b: u32, slot: u32) -> bool {
        self.blocks.get(b as usize).is_some_and(|blk| {
            blk.live
                && slot < self.slots_per_block
                && blk.taken[slot as usize / 64] & (1 << (slot % 64)) != 0
        })
    }

    /// Frees slot `slot` of live block `b`: a block that was full goes to the tail of the active
    /// list, a block left empty is released at once.
    pub fn free_slot(&mut self, b: u32, slot: u32) -> Freed {
        let n = self.slots_per_block;
        let blk = &mut self.blocks[b as usize];
        debug_assert!(blk.live && blk.taken[slot as usize / 64] & (1 << (slot % 64)) != 0);
        blk.taken[slot as usize / 64] &= !(1u64 << (slot % 64));
        let was_full = blk.used == n;
        blk.used -= 1;
        if blk.used == 0 {
            if blk.listed {
                self.unlink(b);
            }
            let blk = &mut self.blocks[b as usize];
            blk.live = false;
            self.vacant.push(b);
            self.nblocks -= 1;
            return Freed::Released(self.blocks[b as usize].first);
        }
        if was_full {
            self.push_tail(b);
        }
        Freed::Kept
    }

    /// Heap bytes of this state (the block table and vacant list).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.vacant.capacity() * std::mem::size_of::<u32>()
    }

    /// The active list, head first (for the tests of its order).
    #[cfg(test)]
    pub fn active(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut b = self.head;
        while b != NIL {
            out.push(b);
            b = self.blocks[b as usize].next;
        }
        out
    }

    fn take_lowest(&mut self, b: u32) -> u32 {
        let blk = &mut self.blocks[b as usize];
        let (i, w) = blk
            .taken
            .iter_mut()
            .enumerate()
            .find(|(_, w)| **w != !0)
            .expect("a listed block has a free slot");
        let bit = w.trailing_ones();
        *w |= 1 << bit;
        blk.used += 1;
        i as u32 * 64 + bit
    }

    fn push_head(&mut self, b: u32) {
        let old = self.head;
        let blk = &mut self.blocks[b as usize];
        debug_assert!(!blk.listed);
        (blk.prev, blk.next, blk.listed) = (NIL, old, true);
        match old {
            NIL => self.tail = b,
            o => self.blocks[o as usize].prev = b,
        }
        self.head = b;
    }

    fn push_tail(&mut self, b: u32) {
        let old = self.tail;
        let blk = &mut self.blocks[b as usize];
        debug_assert!(!blk.listed);
        (blk.prev, blk.next, blk.listed) = (old, NIL, true);
        match old {
            NIL => self.head = b,
            o => self.blocks[o as usize].next = b,
        }
        self.tail = b;
    }

    fn unlink(&mut self, b: u32) {
        let blk = &mut self.blocks[b as usize];
        debug_assert!(blk.listed);
        let (prev, next) = (blk.prev, blk.next);
        (blk.prev, blk.next, blk.listed) = (NIL, NIL, false);
        match prev {
            NIL => self.head = next,
            p => self.blocks[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.blocks[n as usize].prev = prev,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_list_order() {
        let mut t = TypeState::new(2);
        assert_eq!(t.claim(), None);
        let a = t.add_block(0);
        assert_eq!(t.active(), vec![a]);
        assert_eq!(t.claim(), Some((a, 1)));
        assert!(t.active().is_empty(), "a full block leaves the list");
        let b = t.add_block(1);
        let c = {
            assert_eq!(t.claim(), Some((b, 1)));
            t.add_block(2)
        };
        assert_eq!(t.active(), vec![c]);
        assert_eq!(t.free_slot(a, 0), Freed::Kept);
        assert_eq!(t.active(), vec![c, a], "a block that was full goes to the tail");
        assert_eq!(t.claim(), Some((c, 1)), "the head first");
        assert_eq!(t.free_slot(a, 1), Freed::Released(0));
        assert!(t.active().is_empty());
        assert!(!t.is_taken(a, 0));
        assert_eq!(t.next_entry(), a);
        let d = t.add_block(5);
        assert_eq!(d, a, "the entry is reused");
        assert!(t.is_taken(d, 0) && !t.is_taken(d, 1) && !t.is_taken(d, 2));
    }
}
