//! How a pool keeps its objects: the parameter `P` of [`Pool<P>`](crate::Pool).
//!
//! Placement — which class, zspage and object index an object gets, when zspages are made and
//! released, what compaction moves — is one code path for both kinds. What differs is only where
//! the words the kernel keeps inside pages live (an object's header: its owner and length; a free
//! object's freelist link) and whether the bytes exist:
//! - [`InPages`]: the kernel's layout. Header words and bytes lie in the arena's pages; reads hand
//!   the bytes out. The default, and what every read path of the pool is written for.
//! - [`PlacementOnly`]: lengths and order only. The arena still numbers pages (roles, reuse,
//!   runs: so page numbers, and with them every placement, are the full pool's), but never
//!   touches them; header words live in a compact table beside the pages, one word per object
//!   start of every unit the pool ever held; bytes are never kept, and a read of bytes is refused
//!   ([`crate::Error::NoPayload`]). Memory per live object: the header word (8 bytes) and a
//!   share of the zspage entry (128 bytes per zspage) and of the page tables (8 bytes per page).
//!
//! Invariant of both: the header word of an object start is the same word for the unit's whole
//! life in the arena (pages keep their role, `arena.rs`), so a word found from a handle is a
//! header, a freelist link or a word never written, never another class's.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::arena::{PageArena, Pfn};
use crate::chunked::ChunkedTable;
use crate::class_table::ClassInfo;

/// Where a pool keeps its objects' header words and bytes (see the module documentation).
pub trait Payload: Send + Sync + Sized + 'static {
    /// Whether the objects' bytes are kept (and read sections served).
    const KEEPS_BYTES: bool;
    /// The name reports use: `"bytes"` or `"placement-only"`.
    const NAME: &'static str;

    fn new() -> Self;

    /// Makes room for the header words of a new zspage of class `info` whose units start at
    /// `units` (pages of the arena). Caller holds the class lock. `false`: no room (the table is
    /// full); nothing was taken.
    fn units_taken(&self, units: &[Pfn], info: &ClassInfo) -> bool;

    /// The header word at byte `in_unit` (an object start) of the unit starting at page `pfn`,
    /// of a non-huge class `info`.
    fn header<'a>(
        &'a self,
        arena: &'a PageArena,
        pfn: Pfn,
        in_unit: usize,
        info: &ClassInfo,
    ) -> &'a AtomicU64;

    /// The header word at arena byte `offset` (an object start of a non-huge class `info`, found
    /// from a handle word already checked).
    fn header_at_offset<'a>(
        &'a self,
        arena: &'a PageArena,
        offset: usize,
        info: &ClassInfo,
    ) -> &'a AtomicU64;

    /// Copies `src` into page `pfn` at `offset`.
    ///
    /// # Safety
    /// As [`PageArena::write`]: the caller owns the object; the range lies within its unit.
    unsafe fn write(&self, arena: &PageArena, pfn: Pfn, offset: usize, src: &[u8]);

    /// Copies bytes at `offset` of page `pfn` into `dst`.
    ///
    /// # Safety
    /// As [`PageArena::read`]: the caller holds the object; the range lies within its unit.
    unsafe fn read(&self, arena: &PageArena, pfn: Pfn, offset: usize, dst: &mut [u8]);

    /// Heap bytes of the header-word tables (0 when the words lie in the pages).
    fn heap_bytes(&self) -> usize;
}

/// The kernel's layout: header words and bytes in the arena's pages.
pub struct InPages;

impl Payload for InPages {
    const KEEPS_BYTES: bool = true;
    const NAME: &'static str = "bytes";

    fn new() -> Self {
        InPages
    }

    #[inline(always)]
    fn units_taken(&self, _units: &[Pfn], _info: &ClassInfo) -> bool {
        true
    }

    #[inline(always)]
    fn header<'a>(
        &'a self,
        arena: &'a PageArena,
        pfn: Pfn,
        in_unit: usize,
        _: &ClassInfo,
    ) -> &'a AtomicU64 {
        arena.word(pfn, in_unit)
    }

    #[inline(always)]
    fn header_at_offset<'a>(
        &'a self,
        arena: &'a PageArena,
        offset: usize,
        _: &ClassInfo,
    ) -> &'a AtomicU64 {
        arena.word_at(offset)
    }

    #[inline(always)]
    unsafe fn write(&self, arena: &PageArena, pfn: Pfn, offset: usize, src: &[u8]) {
        // SAFETY: forwarded contract.
        unsafe { arena.write(pfn, offset, src) }
    }

    #[inline(always)]
    unsafe fn read(&self, arena: &PageArena, pfn: Pfn, offset: usize, dst: &mut [u8]) {
        // SAFETY: forwarded contract.
        unsafe { arena.read(pfn, offset, dst) }
    }

    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Lengths and order only: header words in a table beside the (never touched) pages.
pub struct PlacementOnly {
    /// Per unit (indexed by its first page): 1 + the index in `words` of the header word of its
    /// first object start (0: the page never started a unit). Set once, under the class lock of
    /// the page's role, before the zspage is published; never changed (roles are for life).
    first_word: ChunkedTable<AtomicU32, 13, 2048>,
    /// The header words, each unit's consecutive (taken under `grow`). 2^28 words in all.
    words: ChunkedTable<AtomicU64, 16, 4096>,
    grow: Mutex<()>,
}

impl PlacementOnly {
    /// Object starts in unit `i` of a zspage of class `info`: the objects `k` with
    /// `k * size` in `[i * unit, (i + 1) * unit)`, `k < objs_per_zspage`.
    fn starts_in_unit(info: &ClassInfo, i: usize) -> u32 {
        let unit = 1u64 << info.unit_shift;
        let size = u64::from(info.size);
        let area = u64::from(info.objs_per_zspage) * size;
        let (lo, hi) = ((i as u64 * unit).min(area), ((i as u64 + 1) * unit).min(area));
        (hi.div_ceil(size) - lo.div_ceil(size)) as u32
    }

    /// Starts loading the entry of page `pfn` (a hint).
    #[inline]
    pub(crate) fn prefetch_first_word(&self, pfn: usize) {
        if let Some(f) = self.first_word.get(pfn) {
            crate::arena::prefetch_line(f as *const AtomicU32 as *const u8);
        }
    }

    /// Starts loading the header word at arena byte `offset` of a non-huge class `info` (a
    /// hint: an offset of no unit prefetches nothing).
    #[inline]
    pub(crate) fn prefetch_header(&self, page_shift: u32, offset: usize, info: &ClassInfo) {
        let (pfn, in_unit) = unit_of(page_shift, offset, info);
        if let Some(w) = self.find(pfn, in_unit, info) {
            crate::arena::prefetch_line(w as *const AtomicU64 as *const u8);
        }
    }

    /// The header word at `in_unit` of the unit starting at page `pfn`, if that page ever
    /// started a unit. The unit's first start lies below `size` (starts are `size` apart), so
    /// the index of the start at `in_unit` among the unit's starts is `in_unit / size`.
    #[inline]
    fn find(&self, pfn: Pfn, in_unit: usize, info: &ClassInfo) -> Option<&AtomicU64> {
        let first = self.first_word.get(pfn as usize)?.load(Ordering::Acquire).checked_sub(1)?;
        self.words.get((first + in_unit as u32 / info.size) as usize)
    }

    #[inline]
    fn word(&self, pfn: Pfn, in_unit: usize, info: &ClassInfo) -> &AtomicU64 {
        self.find(pfn, in_unit, info).expect("a unit's header words were taken")
    }
}

/// The first page of the unit holding arena byte `offset` of class `info`, and the offset
/// within that unit (units are aligned, so both are bits of `offset`).
#[inline]
fn unit_of(page_shift: u32, offset: usize, info: &ClassInfo) -> (Pfn, usize) {
    let mask = info.unit_mask as usize;
    (((offset & !mask) >> page_shift) as Pfn, offset & mask)
}

impl Payload for PlacementOnly {
    const KEEPS_BYTES: bool = false;
    const NAME: &'static str = "placement-only";

    fn new() -> Self {
        PlacementOnly {
            first_word: ChunkedTable::new(),
            words: ChunkedTable::new(),
            grow: Mutex::new(()),
        }
    }

    fn units_taken(&self, units: &[Pfn], info: &ClassInfo) -> bool {
        if info.huge {
            return true; // a huge object's header lives in its zspage entry
        }
        for (i, &pfn) in units.iter().enumerate() {
            let Some(first) = self.first_word.get_or_alloc(pfn as usize) else { return false };
            if first.load(Ordering::Acquire) != 0 {
                continue;
            }
            let n = Self::starts_in_unit(info, i);
            let _grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
            let at = self.words.len();
            if at + n as usize >= ChunkedTable::<AtomicU64, 16, 4096>::capacity() {
                return false;
            }
            for _ in 0..n {
                self.words.push().expect("checked against the capacity");
            }
            first.store(at as u32 + 1, Ordering::Release);
        }
        true
    }

    #[inline]
    fn header<'a>(
        &'a self,
        _: &'a PageArena,
        pfn: Pfn,
        in_unit: usize,
        info: &ClassInfo,
    ) -> &'a AtomicU64 {
        self.word(pfn, in_unit, info)
    }

    #[inline]
    fn header_at_offset<'a>(
        &'a self,
        arena: &'a PageArena,
        offset: usize,
        info: &ClassInfo,
    ) -> &'a AtomicU64 {
        let (pfn, in_unit) = unit_of(arena.page_shift(), offset, info);
        self.word(pfn, in_unit, info)
    }

    #[inline(always)]
    unsafe fn write(&self, _: &PageArena, _: Pfn, _: usize, _: &[u8]) {}

    #[inline(always)]
    unsafe fn read(&self, _: &PageArena, _: Pfn, _: usize, dst: &mut [u8]) {
        // Nothing is kept: compaction "moves" what it reads here, and moves nothing.
        let _ = dst;
    }

    fn heap_bytes(&self) -> usize {
        self.first_word.heap_bytes() + self.words.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_per_unit_cover_every_object_once() {
        for size in [32u32, 48, 176, 1120, 2048, 3264, 3632] {
            for pages in 1..=4u32 {
                let objs = pages * 4096 / size;
                let info = ClassInfo {
                    index: 0,
                    size,
                    pages_per_zspage: pages,
                    objs_per_zspage: objs,
                    huge: false,
                    first_index: 0,
                    order: 0,
                    unit_shift: 12,
                    unit_mask: 4095,
                };
                let total: u32 =
                    (0..pages as usize).map(|i| PlacementOnly::starts_in_unit(&info, i)).sum();
                assert_eq!(total, objs, "size {size}, {pages} pages");
            }
        }
    }
}
