//! The inactive list (`--policy lru`), as the kernel keeps one. The tier sees faults, not
//! accesses: a page in the program's memory is touched without its knowing. So the oldest
//! pages (the policy's victims) first leave the program's memory uncompressed, moved
//! (`UFFDIO_MOVE`, in runs) into the list's area of the tier's own: a touch there faults, and
//! the fault moves the page straight back (a refault: no pool read, no decompression), where
//! it arrives anew, as the kernel's accessed bit promotes a page from its inactive list. The
//! list's oldest page, untouched through the list's length, is the one compressed into the
//! pool. A page on the list is memory the tier holds for the program: the budget counts it.
//!
//! The list takes an eighth of the budget ([`crate::inactive::SHARE`]; under small budgets, twice the slack's batch
//! of evictions, at most half the budget), and is filled only when something must be
//! evicted: a program whose pages fit the budget never sees it. The kernel's list is as long as
//! its active one for anonymous memory under a gigabyte, but a touch there costs it nothing
//! (the accessed bit), where here it costs a fault and a move: with half the budget the list
//! caught more (fewer pages compressed) and cost more in refaults than it saved (docs/TIER.md,
//! "Policy").
//!
//! Invariants, under the tier's lock:
//!
//! - a page is on the list if and only if its entry is [`crate::tier::INACTIVE`]; the entry's slot number
//!   names the ring slot holding the page's number, and the list area's page of that slot holds
//!   its bytes (the program's page is a hole);
//! - ring positions `[head, tail)` are the list, oldest first, with [`HOLE`] where a page left
//!   (touched, or forgotten); `len` counts the others;
//! - positions `[dropped, head)` have left the ring but their slots may still hold pages until
//!   [`Inactive::flush`] drops them; `tail - dropped <= slots`, so the slot at `tail` is always
//!   a hole (an `UFFDIO_MOVE` destination must be);
//! - outside the eviction loop, `dropped == head`.

use zsmalloc_tier::stats::Field;

use crate::sys::{self, PAGE};

/// A ring position without a page.
pub(crate) const HOLE: u32 = u32::MAX;

pub struct Inactive {
    /// The list's area: `slots` pages of the tier's own, registered with the userfaultfd (a move
    /// must land in registered memory).
    pub(crate) area: usize,
    pub(crate) slots: usize,
    /// The page in each slot, [`HOLE`] for none.
    pub(crate) ring: Vec<u32>,
    pub(crate) head: u64,
    pub(crate) tail: u64,
    pub(crate) dropped: u64,
    pub(crate) len: u64,
    /// The pages the list holds when it is full.
    pub(crate) target: u64,
}

impl Inactive {
    /// An empty list of `target` pages in a ring of `slots` at `area` (`inactive::new_list`).
    pub fn new(area: usize, slots: usize, target: u64) -> Inactive {
        Inactive {
            area,
            slots,
            ring: vec![HOLE; slots],
            head: 0,
            tail: 0,
            dropped: 0,
            len: 0,
            target,
        }
    }

    /// Empty, its area now `area` (a forked child's, mapped afresh: the list is empty at a
    /// fork).
    pub fn renew(&mut self, area: usize) {
        self.area = area;
        self.ring.fill(HOLE);
        (self.head, self.tail, self.dropped, self.len) = (0, 0, 0, 0);
    }

    /// The list's area and its length in bytes.
    pub fn area(&self) -> (usize, usize) {
        (self.area, self.slots * PAGE)
    }

    pub(crate) fn slot(&self, pos: u64) -> usize {
        (pos % self.slots as u64) as usize
    }

    pub(crate) fn addr(&self, slot: usize) -> usize {
        self.area + slot * PAGE
    }

    /// Consecutive free slots from the tail before the ring's end, at most `n`.
    pub(crate) fn run_room(&self, n: usize) -> usize {
        n.min(self.slots - self.slot(self.tail))
    }

    /// Moves the head past the holes.
    pub(crate) fn skip_holes(&mut self) {
        while self.head < self.tail && self.ring[self.slot(self.head)] == HOLE {
            self.head += 1;
        }
    }

    /// The oldest page and its slot, if any.
    pub(crate) fn oldest(&mut self) -> Option<(usize, usize)> {
        self.skip_holes();
        (self.head < self.tail).then(|| {
            let slot = self.slot(self.head);
            (self.ring[slot] as usize, slot)
        })
    }

    /// Takes page `page` off the list from `slot` (it left, or is leaving).
    pub(crate) fn take(&mut self, page: usize, slot: usize) {
        assert_eq!(self.ring[slot], page as u32, "page {page} is not in slot {slot}");
        self.ring[slot] = HOLE;
        self.len -= 1;
        crate::figures::stats().set(Field::InactivePages, self.len);
    }

    /// The list emptied of its holes and their slots dropped (after every page was brought
    /// back).
    pub fn settle(&mut self) {
        self.skip_holes();
        self.flush();
    }

    /// Drops the slots of the positions that left the ring (their pages were stored, or
    /// brought back by a copy).
    pub fn flush(&mut self) {
        while self.dropped < self.head {
            let first = self.slot(self.dropped);
            let n = (self.head - self.dropped).min((self.slots - first) as u64) as usize;
            // SAFETY: slots of the list's area, the tier's own memory, whose pages were stored
            // (or copied back) and are no longer needed.
            unsafe { sys::madvise(self.addr(first), n * PAGE, libc::MADV_DONTNEED) };
            self.dropped += n as u64;
        }
    }
}
