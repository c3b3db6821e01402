//! Zspages: chains of pages holding objects of one class, and the table that names them.
//!
//! A zspage's metadata lives in an address-stable table entry (its *zspage entry*, which handle
//! words name) so that readers reach it from a handle word without locks. Field ownership:
//! - `pin`: atomic protocol of `pin.rs` (huge objects' readers, migration, release).
//! - `state` (generation, live bit) and `class_pos`: written under the owning class's lock
//!   (creation, release); read by anyone to validate a handle.
//! - `pages`: written at creation before `state` is published (Release); read after `state`.
//! - everything else: only under the owning class's lock. They are atomics with relaxed
//!   ordering purely so that no `unsafe` is needed; the lock provides the ordering.

use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use crate::arena::Pfn;
use crate::chunked::ChunkedTable;
use crate::config::MAX_CHAIN_SIZE;
use crate::handle_word::MAX_ZSPAGE_ENTRIES;
use crate::pin::PinWord;

/// Fullness groups: 0 empty, 1..=10 by inuse ratio, 11 full (`ZS_INUSE_RATIO_*`).
pub const GROUPS: usize = 12;
pub const GROUP_EMPTY: usize = 0;
pub const GROUP_FULL: usize = 11;
/// Null link of the fullness lists.
pub const NIL: u32 = u32::MAX;

/// Mainline `get_fullness_group()` (the reference `Fullness::group` is tested against).
#[cfg(test)]
pub fn fullness_group(inuse: u32, objs: u32) -> usize {
    if inuse == 0 {
        GROUP_EMPTY
    } else if inuse == objs {
        GROUP_FULL
    } else {
        (100 * inuse as usize / objs as usize) / 10 + 1
    }
}

/// Exact division of 32-bit numerators by a fixed divisor `d >= 2` with one multiplication:
/// `n / d = (ceil(2^64 / d) * n) >> 64` (Lemire, Kaser, Kurz 2019). Used where a hot path would
/// otherwise divide by a class's size or object count.
#[derive(Debug, Clone, Copy)]
pub struct Reciprocal {
    magic: u64,
}

impl Reciprocal {
    pub fn new(d: u32) -> Self {
        Reciprocal { magic: if d > 1 { u64::MAX / u64::from(d) + 1 } else { 0 } }
    }

    #[inline]
    pub fn div(&self, n: u32) -> u32 {
        ((u128::from(self.magic) * u128::from(n)) >> 64) as u32
    }

    /// Whether `d` divides `n`, with one multiplication: `n * ceil(2^64 / d)`, wrapped, is
    /// below `ceil(2^64 / d)` exactly for the multiples of `d` (same paper, section 5).
    #[inline]
    pub fn divides(&self, n: u32) -> bool {
        u64::from(n).wrapping_mul(self.magic) < self.magic
    }
}

/// `fullness_group` for one class without a division on the hot path. It borrows the class's
/// object count and its reciprocal, so that each is loaded only where the test needs it.
#[derive(Debug, Clone, Copy)]
pub struct Fullness<'a> {
    objs: &'a u32,
    by_objs: &'a Reciprocal,
}

impl<'a> Fullness<'a> {
    /// The fullness of a class of `objs` objects per zspage, `by_objs` their reciprocal.
    #[inline(always)]
    pub fn of(objs: &'a u32, by_objs: &'a Reciprocal) -> Self {
        Fullness { objs, by_objs }
    }

    #[inline(always)]
    pub fn group(self, inuse: u32) -> usize {
        if inuse == 0 {
            GROUP_EMPTY
        } else if inuse == *self.objs {
            GROUP_FULL
        } else {
            // objs > 1 here (0 < inuse < objs), so the reciprocal is exact.
            self.by_objs.div(100 * inuse) as usize / 10 + 1
        }
    }
}

/// Readers of non-huge objects come here only for a spanning object's second page; a huge
/// object's reader pins it and reads its header. Those fields (pin, state, class, `fresh`, the
/// huge header and the first ten pages) share the first cache line; lock-held list fields follow.
#[repr(C, align(64))]
pub struct Zspage {
    pub pin: PinWord,
    /// `generation << 1 | live`.
    state: AtomicU32,
    class_pos: AtomicU32,
    /// Objects `fresh..objs` were never handed out; they follow the freed ones on the freelist.
    pub fresh: AtomicU32,
    /// Header word of a huge zspage's single object (huge objects carry no in-object header).
    pub huge_header: AtomicU64,
    pages: [AtomicU32; MAX_CHAIN_SIZE as usize],
    pub inuse: AtomicU32,
    /// Most recently freed object + 1 (0: none); the rest of the LIFO is linked through the
    /// free objects' header words.
    pub free_head: AtomicU32,
    pub group: AtomicU32,
    pub prev: AtomicU32,
    pub next: AtomicU32,
}

impl Default for Zspage {
    fn default() -> Self {
        Zspage {
            pin: PinWord::default(),
            state: AtomicU32::new(0),
            class_pos: AtomicU32::new(0),
            inuse: AtomicU32::new(0),
            fresh: AtomicU32::new(0),
            free_head: AtomicU32::new(0),
            group: AtomicU32::new(0),
            prev: AtomicU32::new(NIL),
            next: AtomicU32::new(NIL),
            huge_header: AtomicU64::new(0),
            pages: Default::default(),
        }
    }
}

impl Zspage {
    #[inline]
    pub fn is_live(&self) -> bool {
        self.state.load(Ordering::Acquire) & 1 == 1
    }

    /// The generation if the zspage is live.
    #[inline]
    pub fn live_generation(&self) -> Option<u16> {
        let s = self.state.load(Ordering::Acquire);
        (s & 1 == 1).then_some((s >> 1) as u16)
    }

    #[inline]
    pub fn class_pos(&self) -> usize {
        self.class_pos.load(Ordering::Acquire) as usize
    }

    #[inline]
    pub fn page(&self, i: usize) -> Pfn {
        self.pages[i].load(Relaxed)
    }

    /// Initialises a fresh zspage of class `class_pos` on `pages` and publishes it as live.
    /// Caller holds that class's lock. Returns the new generation.
    pub fn init(&self, class_pos: usize, pages: &[Pfn]) -> u16 {
        for (page, &p) in self.pages.iter().zip(pages) {
            page.store(p, Relaxed);
        }
        self.inuse.store(0, Relaxed);
        self.fresh.store(0, Relaxed);
        self.free_head.store(0, Relaxed);
        self.group.store(GROUP_EMPTY as u32, Relaxed);
        self.prev.store(NIL, Relaxed);
        self.next.store(NIL, Relaxed);
        self.huge_header.store(0, Relaxed);
        self.class_pos.store(class_pos as u32, Ordering::Release);
        let generation = (self.state.load(Relaxed) >> 1).wrapping_add(1);
        self.state.store((generation << 1) | 1, Ordering::Release);
        generation as u16
    }

    /// Marks the zspage dead; stale handles naming it are refused from now on. Caller holds the
    /// zspage's migration lock, so no reader has it pinned.
    pub fn retire(&self) {
        let s = self.state.load(Relaxed);
        self.state.store(s & !1, Ordering::Release);
    }
}

/// Address-stable zspage metadata entries (4096 per chunk, 2^24 in all), reused through a free
/// list.
pub struct ZspageTable {
    entries: ChunkedTable<Zspage, 12, 4096>,
    free: Mutex<Vec<u32>>,
}

impl ZspageTable {
    pub fn new() -> Self {
        ZspageTable { entries: ChunkedTable::new(), free: Mutex::new(Vec::new()) }
    }

    #[inline]
    pub fn get(&self, entry: u32) -> Option<&Zspage> {
        self.entries.get(entry as usize)
    }

    /// Index of an unused entry, or `None` when the table is full.
    pub fn take(&self) -> Option<u32> {
        if let Some(s) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(s);
        }
        let (idx, _) = self.entries.push()?;
        debug_assert!(idx < MAX_ZSPAGE_ENTRIES as usize);
        Some(idx as u32)
    }

    /// Returns a retired entry for reuse.
    pub fn give_back(&self, entry: u32) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    }

    /// Heap bytes of metadata (for the overhead report).
    pub fn heap_bytes(&self) -> usize {
        self.entries.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fullness_groups_match_mainline() {
        assert_eq!(fullness_group(0, 10), 0);
        assert_eq!(fullness_group(10, 10), 11);
        assert_eq!(fullness_group(1, 10), 2);
        assert_eq!(fullness_group(1, 117), 1);
        assert_eq!(fullness_group(116, 117), 10);
    }

    #[test]
    fn reciprocal_divides_exactly() {
        for d in [2u32, 3, 7, 32, 48, 694, 1120, 3264, 4096, 65536] {
            let r = Reciprocal::new(d);
            for n in (0..(16 << 16)).step_by(97).chain([d - 1, d, d + 1, 16 * 65536 - 1]) {
                assert_eq!(r.div(n), n / d, "{n}/{d}");
                assert_eq!(r.divides(n), n % d == 0, "{d} | {n}");
            }
        }
    }

    #[test]
    fn fast_fullness_equals_the_division() {
        for objs in (1..=2048).chain([4095, 4096, 32767, 32768]) {
            let r = Reciprocal::new(objs);
            let f = Fullness::of(&objs, &r);
            for inuse in 0..=objs {
                assert_eq!(f.group(inuse), fullness_group(inuse, objs), "{inuse}/{objs}");
            }
        }
    }
}
