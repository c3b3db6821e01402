//! The tier's page table: an entry per page of the reserve saying what holds the page's bytes
//! (the page itself, a pool object, a same-filled value, its folio group's object, a clean
//! copy in the readahead's cache beside its object, or nothing yet), with the counts the
//! budget is judged by.
//!
//! Invariants, kept by this module alone (an entry's kind changes only through
//! [`PageTable::set`], which every arrival and departure goes through):
//!
//! - `resident` is the number of entries of kind [`RESIDENT`], [`CACHED`] or [`INACTIVE`] (a
//!   cached copy, or a page on the inactive list, is memory the tier holds for the program, so
//!   the budget counts it);
//! - `pinned` is the number of [`RESIDENT`] entries whose page may not leave
//!   (`protection::Prot::evictable`: locked, `PROT_NONE`, ...); a protection change of a
//!   resident page goes through [`PageTable::reprotect`];
//! - the budget is judged on the pages that may leave: `resident - pinned`, which the stats
//!   file's resident figure is after every change (its peak at least it); the pinned pages
//!   have figures of their own.
//!
//! The table is the tier's own memory (16 bytes a page, touched only where pages are), reached
//! only through the state, so only with the tier's lock held.

use std::sync::atomic::AtomicUsize;

use zsmalloc_tier::stats::Field;

use crate::figures::stats;
use crate::protection;

// A page's kind, in the low bits of its entry's info word.
pub const EMPTY: u64 = 0;
pub const RESIDENT: u64 = 1;
pub const STORED: u64 = 2;
pub const SAME: u64 = 3;
/// Evicted with its aligned group (`folio.rs`): its bytes are in the group's object.
pub const GROUP: u64 = 4;
/// Stored, with a clean copy in the readahead cache (`readahead.rs`).
pub const CACHED: u64 = 5;
/// On the inactive list (`inactive.rs`): moved out uncompressed into the list's area.
pub const INACTIVE: u64 = 6;

/// An entry: the pool's handle word (or a same-filled value), and its kind with the stored
/// length (bits 8..32: a 64K group stored whole is 65536 bytes) and the page's arrival number
/// (bits 32..64; a cached page's cache slot there, an inactive page's slot on the list). Also a folio group's entry (`folio.rs`),
/// whose info is its own to set.
#[repr(C)]
pub struct Entry {
    pub handle: AtomicUsize,
    info: u64,
}

impl Entry {
    pub fn kind(&self) -> u64 {
        self.info & 0xff
    }
    pub fn len(&self) -> usize {
        ((self.info >> 8) & 0xff_ffff) as usize
    }
    /// The arrival number (a resident page), cache slot (a cached one) or slot on the
    /// inactive list (an inactive one).
    pub fn seq(&self) -> u32 {
        (self.info >> 32) as u32
    }
    /// Sets a folio group's info; pages' entries change through [`PageTable::set`] only
    /// (the table hands out shared references to them).
    pub fn set_info(&mut self, info: u64) {
        self.info = info;
    }
}

/// An info word: `kind`, stored length `len`, arrival number or cache slot `seq`.
pub fn info(kind: u64, len: usize, seq: u32) -> u64 {
    kind | ((len as u64) << 8) | (u64::from(seq) << 32)
}

fn counts_resident(kind: u64) -> bool {
    kind == RESIDENT || kind == CACHED || kind == INACTIVE
}

pub struct PageTable {
    /// An entry per page of the reserve, in the tier's own memory.
    at: usize,
    pages: usize,
    resident: u64,
    pinned: u64,
    budget: u64,
    /// The last arrival number given.
    seq: u32,
}

// SAFETY: `at` is memory of the tier's own, reached only through the state's lock.
unsafe impl Send for PageTable {}

impl PageTable {
    /// A table of `pages` entries at `at` (zeroed memory: every page empty).
    pub fn new(at: usize, pages: usize, budget: u64) -> PageTable {
        PageTable { at, pages, resident: 0, pinned: 0, budget, seq: 0 }
    }

    pub fn entry(&self, page: usize) -> &Entry {
        assert!(page < self.pages, "page {page} beyond the reserve");
        // SAFETY: `at` holds `pages` entries, and `page` is one of them.
        unsafe { &*(self.at as *const Entry).add(page) }
    }

    fn entry_mut(&mut self, page: usize) -> &mut Entry {
        assert!(page < self.pages, "page {page} beyond the reserve");
        // SAFETY: as in `entry`; `&mut self` is the only way to the table.
        unsafe { &mut *(self.at as *mut Entry).add(page) }
    }

    pub fn kind(&self, page: usize) -> u64 {
        self.entry(page).kind()
    }

    /// Page `page` now holds `info`; the counts and their stats follow.
    pub fn set(&mut self, page: usize, info: u64) {
        let (old, new) = (self.entry(page).kind(), info & 0xff);
        self.entry_mut(page).info = info;
        let pinned = !protection::of(page).evictable() && (old == RESIDENT) != (new == RESIDENT);
        if pinned {
            self.pinned = self.pinned + u64::from(new == RESIDENT) - u64::from(old == RESIDENT);
        }
        let counted = counts_resident(old) != counts_resident(new);
        if counted {
            self.resident =
                self.resident + u64::from(counts_resident(new)) - u64::from(counts_resident(old));
        }
        if pinned || counted {
            self.publish();
        }
    }

    /// The stats file's resident (held to the budget) and pinned figures, from the counts.
    pub fn publish(&self) {
        let w = stats();
        w.set(Field::ResidentPages, self.evictable());
        w.raise(Field::PeakResidentPages, self.evictable());
        w.set(Field::PinnedPages, self.pinned);
        w.raise(Field::PeakPinnedPages, self.pinned);
    }

    /// Page `page` has come in: resident, with the next arrival number (returned).
    pub fn arrive(&mut self, page: usize) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        self.set(page, info(RESIDENT, 0, seq));
        seq
    }

    /// Pages `[first, end)` take protection `f` of theirs (`protection::update`), the pinned
    /// count following; the resident pages that may leave again are returned for a new
    /// arrival (the policy may have dropped them while they could not).
    pub fn reprotect(
        &mut self,
        first: usize,
        end: usize,
        f: impl Fn(protection::Prot) -> protection::Prot,
        mut freed: impl FnMut(&mut PageTable, usize),
    ) {
        let end = end.min(self.pages);
        for page in first..end {
            let before = protection::of(page);
            let after = f(before);
            protection::update(page, page + 1, |_| after);
            if self.kind(page) != RESIDENT || before.evictable() == after.evictable() {
                continue;
            }
            if after.evictable() {
                self.pinned -= 1;
                freed(self, page);
            } else {
                self.pinned += 1;
            }
            self.publish();
        }
    }

    /// Whether `page` is resident as arrival `seq` and may leave: the policy's victims.
    pub fn is_victim(&self, page: u32, seq: u32) -> bool {
        let e = self.entry(page as usize);
        e.kind() == RESIDENT && e.seq() == seq && protection::of(page as usize).evictable()
    }

    /// Resident pages (the program's and the readahead's copies).
    pub fn resident(&self) -> u64 {
        self.resident
    }

    /// Resident pages that may leave: what the budget holds.
    pub fn evictable(&self) -> u64 {
        self.resident - self.pinned
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    pub fn over_budget(&self) -> bool {
        self.evictable() > self.budget
    }

    /// Pages that may leave above the budget (0 within it).
    pub fn excess(&self) -> u64 {
        self.evictable().saturating_sub(self.budget)
    }

    /// Room under the budget (0 over it).
    pub fn room(&self) -> u64 {
        self.budget.saturating_sub(self.evictable())
    }
}
