//! The page arena: simulated pages carved from a few large anonymous mappings.
//!
//! Never one mapping per page or per zspage (`vm.max_map_count` is 65,530 and real workloads
//! build more zspages than that): each pool reserves one range of address space and makes it
//! accessible in 256 MiB steps. A page is named by its page number (`Pfn`); its address is
//! `base + (pfn << page_shift)`, found without locks. Released pages go back to the kernel with
//! `MADV_DONTNEED`, except a small bounded cache kept warm for the next zspage.
//!
//! Memory model: a page belongs to at most one zspage at a time. The arena's mutex orders a
//! page's release before its next allocation, so every access by the old owner happens before
//! any access by the new one. All header words are accessed atomically ([`PageArena::word`]);
//! payload bytes are copied only by the object's owner (see `pool.rs` for who owns what when).
//!
//! Roles: the first time a page is handed out it takes a role, the class and the page's index
//! within its zspage, and keeps it for the arena's lifetime; a released page is only ever handed
//! out again in the same role. Object starts within a page depend only on the role, so a word
//! that is an object header in a page is never anything else (a header, a freelist link, or zero
//! on a page never touched or discarded): readers may register on a header word without pinning
//! its zspage, because no other class's payload can ever lie there. The price is address space:
//! each role keeps the most pages it ever held at once. One side effect: a reader whose header
//! word's page is discarded between its load and its CAS (the object moved and its zspage was
//! released in that window) faults a zero page back in, since even a failing `lock cmpxchg`
//! writes; the page stays resident, outside `total_pages`, until its role reuses it.
//!
//! The other read modes: `contiguous` takes a zspage's pages as one run of adjacent pages
//! (`runs.rs`, runs keep their roles whole); `map` needs the pages backed by a memfd
//! (`memfd.rs`, released pages hole-punched) so two pages can be mapped side by side into a map
//! slot (`map_window.rs`), which the arena owns. Neither changes a zspage or the pool.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::chunked::ChunkedTable;
use crate::config::{Backing, PoolConfig, ReadMode};
use crate::error::{Error, Result};
use crate::map_window::MapWindow;

mod memfd;
mod reservation;
mod runs;

use memfd::Memfd;
pub use reservation::{set_max_pool_reservation, MIN_RESERVE_BYTES};
use reservation::{Reservation, COMMIT_BYTES};

/// Page number within one arena.
pub type Pfn = u32;

/// Released pages kept without `MADV_DONTNEED`, ready for reuse: 2 MiB worth (512 pages of
/// 4 KiB), at least 16 pages. A page is reused only in its own role, so the cache must cover
/// many roles at once: with 64 pages, a steady state of 10^4 objects faulted seven times as many
/// discarded pages back in (and ran 11% slower) as with 512.
const PAGE_CACHE_BYTES: usize = 2 << 20;
const PAGE_CACHE_MIN: usize = 16;

#[derive(Default)]
struct FreePages {
    /// Pages never handed out start here.
    next_unused: u64,
    /// Bytes of the reservation made accessible so far.
    committed: usize,
    /// Released pages by role (indexed by role).
    by_role: Vec<RoleFree>,
    /// Released pages still resident, over all roles (at most `cache_limit()`).
    cached: usize,
    /// Cached pages in the order they were released (may also name pages reused since).
    cache_order: std::collections::VecDeque<Pfn>,
    /// Free runs (`contiguous` mode).
    runs: runs::Runs,
}

impl FreePages {
    fn role(&mut self, role: u32) -> &mut RoleFree {
        let i = role as usize;
        if i >= self.by_role.len() {
            self.by_role.resize_with(i + 1, RoleFree::default);
        }
        &mut self.by_role[i]
    }
}

/// Released pages of one role.
#[derive(Default)]
struct RoleFree {
    /// Still resident, reused first.
    cached: Vec<Pfn>,
    /// Given back with MADV_DONTNEED.
    released: Vec<Pfn>,
}

/// A page's role: `class position << 4 | page index within the zspage`.
#[inline]
fn role_of(class_pos: usize, index: usize) -> u32 {
    ((class_pos as u32) << 4) | index as u32
}

/// Pages per chunk of the role table and chunks (2^24 pages: the 64 GiB reservation of 4 KiB
/// pages).
const ROLE_CHUNK_SHIFT: u32 = 13;
const ROLE_CHUNKS: usize = 2048;

/// Starts loading the cache line at `p` (a hint: never faults, whatever the address).
#[inline]
pub fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching has no architectural effect besides caching and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Simulated pages of one pool.
pub struct PageArena {
    page_size: usize,
    page_shift: u32,
    /// The longest unit of a zspage (bytes): a page, or the multi-page band's compound page.
    max_unit: usize,
    /// Whether MADV_DONTNEED can return single simulated pages (host page <= simulated page).
    can_release: bool,
    /// `None` if no address space could be reserved: every allocation then fails.
    range: Option<Reservation>,
    /// `range`'s base address and length, (0, 0) without one: for the read fast paths, which
    /// compute addresses and test membership without a branch on `range`.
    base: usize,
    len: usize,
    free: Mutex<FreePages>,
    cached: AtomicU64,
    /// Zspages are runs of adjacent pages (`contiguous` mode).
    runs: bool,
    /// `map` mode's map slots.
    window: Option<MapWindow>,
    /// Role of each page ever handed out, + 1 (0: none yet). Written once, before the page is
    /// first handed out (Release).
    roles: ChunkedTable<AtomicU32, ROLE_CHUNK_SHIFT, ROLE_CHUNKS>,
}

impl PageArena {
    /// An anonymous arena of `page_size` pages, zspages of scattered pages (`copy` mode).
    #[cfg(test)]
    pub fn new(page_size: u32) -> PageArena {
        Self::build(page_size as usize, page_size as usize, Reservation::new(None), false, None)
    }

    /// The arena `cfg` asks for: its backing, runs for `contiguous`, map slots for `map`. A
    /// memfd backing that cannot be made is an error naming the read mode and the backing.
    pub fn for_config(cfg: &PoolConfig) -> Result<PageArena> {
        let page_size = cfg.page_size as usize;
        let max_unit = cfg.max_object_size() as usize;
        let runs = cfg.read_mode == ReadMode::Contiguous;
        let mode = cfg.read_mode.name();
        let cannot = |what: &str, e: std::io::Error| {
            Error::config(
                "read_mode",
                format!("read mode '{mode}' on the memfd backing: {what} failed: {e}"),
            )
        };
        if !cfg.payload {
            // Placement only: pages are numbered, never touched (no memfd, no map slots, and
            // nothing to give back to the kernel).
            let mut arena = Self::build(page_size, max_unit, Reservation::new(None), runs, None);
            arena.can_release = false;
            return Ok(arena);
        }
        if cfg.effective_backing() == Backing::Anonymous {
            return Ok(Self::build(page_size, max_unit, Reservation::new(None), runs, None));
        }
        let memfd = Memfd::create().map_err(|e| cannot("memfd_create", e))?;
        let range = Reservation::new(Some(memfd))
            .ok_or_else(|| cannot("reserving address space", std::io::Error::last_os_error()))?;
        let window = match cfg.read_mode {
            ReadMode::Map => Some(
                MapWindow::new(max_unit)
                    .map_err(|e| cannot("reserving the map slots' address space", e))?,
            ),
            _ => None,
        };
        Ok(Self::build(page_size, max_unit, Some(range), runs, window))
    }

    fn build(
        page_size: usize,
        max_unit: usize,
        range: Option<Reservation>,
        runs: bool,
        window: Option<MapWindow>,
    ) -> PageArena {
        let host_page = crate::config::host_page_size();
        let (base, len) = range.as_ref().map_or((0, 0), |r| (r.base.as_ptr() as usize, r.len));
        PageArena {
            page_size,
            page_shift: page_size.trailing_zeros(),
            max_unit,
            can_release: host_page > 0 && host_page <= page_size,
            range,
            base,
            len,
            free: Mutex::new(FreePages::default()),
            cached: AtomicU64::new(0),
            runs,
            window,
            roles: ChunkedTable::new(),
        }
    }

    #[inline]
    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }

    /// `map` mode's map slots (`None` in the other modes).
    #[inline]
    pub(crate) fn window(&self) -> Option<&MapWindow> {
        self.window.as_ref()
    }

    /// The memfd and the file offset of page `pfn`, with the memfd backing.
    #[inline]
    pub fn file_page(&self, pfn: Pfn) -> Option<(std::ffi::c_int, usize)> {
        let m = self.range.as_ref()?.memfd.as_ref()?;
        Some((m.fd(), (pfn as usize) << self.page_shift))
    }

    /// Makes the reservation accessible up to page `end_pfn` (exclusive); false changes nothing.
    #[inline(always)]
    fn commit_upto(&self, range: &Reservation, free: &mut FreePages, end_pfn: usize) -> bool {
        let end = end_pfn << self.page_shift;
        if end > range.len {
            return false;
        }
        if end > free.committed {
            let upto = end.next_multiple_of(COMMIT_BYTES).min(range.len);
            if !range.commit(free.committed, upto - free.committed) {
                return false;
            }
            free.committed = upto;
        }
        true
    }

    /// Pages released but kept resident for reuse.
    pub fn pages_cached(&self) -> u64 {
        self.cached.load(Ordering::Relaxed)
    }

    /// Allocates the `out.len()` pages of a zspage of class `class_pos` (page `i` in role
    /// (`class_pos`, `i`)), or none (returns false) when the reserved address space is exhausted.
    pub fn alloc_pages(&self, out: &mut [Pfn], class_pos: usize) -> bool {
        if crate::fault::fails(crate::fault::Point::Pages) {
            return false;
        }
        if self.runs {
            let Some(first) = self.alloc_run(class_pos, out.len()) else { return false };
            for (i, p) in out.iter_mut().enumerate() {
                *p = first + i as Pfn;
            }
            return true;
        }
        let Some(range) = &self.range else { return false };
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = (0..out.len())
            .filter(|&i| {
                let f = free.by_role.get(role_of(class_pos, i) as usize);
                f.is_none_or(|f| f.cached.is_empty() && f.released.is_empty())
            })
            .count();
        let end_pfn = free.next_unused as usize + fresh;
        // Make the fresh pages accessible before taking anything, so failure takes nothing.
        if end_pfn > self.roles_capacity() || !self.commit_upto(range, &mut free, end_pfn) {
            return false;
        }
        for (i, out_pfn) in out.iter_mut().enumerate() {
            let role = role_of(class_pos, i);
            let f = free.role(role);
            if let Some(p) = f.cached.pop() {
                free.cached -= 1;
                *out_pfn = p;
            } else if let Some(p) = f.released.pop() {
                *out_pfn = p;
            } else {
                let pfn = free.next_unused as Pfn;
                free.next_unused += 1;
                let r = self.roles.get_or_alloc(pfn as usize).expect("checked against capacity");
                r.store(role + 1, Ordering::Release);
                *out_pfn = pfn;
            }
        }
        self.cached.store(free.cached as u64, Ordering::Relaxed);
        true
    }

    fn roles_capacity(&self) -> usize {
        ChunkedTable::<AtomicU32, ROLE_CHUNK_SHIFT, ROLE_CHUNKS>::capacity()
    }

    /// Returns pages to their roles, kept resident in the cache; when the cache is full, its
    /// oldest page goes back to the kernel with MADV_DONTNEED (a class that just released pages
    /// is the likeliest to want them again).
    pub fn free_pages(&self, pages: &[Pfn]) {
        if self.runs {
            debug_assert!(pages.windows(2).all(|w| w[1] == w[0] + 1), "a run, whole");
            if let Some(&first) = pages.first() {
                self.free_run(first, pages.len());
            }
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        for &pfn in pages {
            let role = self.role_word(pfn).expect("a handed-out page has a role");
            if free.cached == self.cache_limit() {
                self.evict_oldest(&mut free);
            }
            free.cached += 1;
            free.cache_order.push_back(pfn);
            free.role(role).cached.push(pfn);
        }
        if free.cache_order.len() > 4 * self.cache_limit() {
            // Drop the entries of pages reused since they were cached.
            let FreePages { cache_order, by_role, .. } = &mut *free;
            cache_order.retain(|&p| {
                let role = self.role_word(p).expect("a cached page has a role") as usize;
                by_role[role].cached.contains(&p)
            });
        }
        self.cached.store(free.cached as u64, Ordering::Relaxed);
    }

    fn cache_limit(&self) -> usize {
        (PAGE_CACHE_BYTES >> self.page_shift).max(PAGE_CACHE_MIN)
    }

    /// Discards the page cached longest ago (its role keeps it as released).
    fn evict_oldest(&self, free: &mut FreePages) {
        while let Some(pfn) = free.cache_order.pop_front() {
            let role = self.role_word(pfn).expect("a cached page has a role");
            let f = free.role(role);
            // Entries of pages reused since they were cached are stale: skip them.
            if let Some(at) = f.cached.iter().position(|&p| p == pfn) {
                f.cached.swap_remove(at);
                f.released.push(pfn);
                free.cached -= 1;
                self.discard(pfn);
                return;
            }
        }
    }

    #[inline]
    fn role_word(&self, pfn: Pfn) -> Option<u32> {
        self.roles.get(pfn as usize)?.load(Ordering::Acquire).checked_sub(1)
    }

    /// The role of page `pfn` (class position, page index within its zspage), if it was ever
    /// handed out. Never changes once set.
    #[inline]
    pub fn role(&self, pfn: Pfn) -> Option<(usize, u32)> {
        self.role_word(pfn).map(|r| ((r >> 4) as usize, r & 0xf))
    }

    /// Starts loading the role of page `pfn` (a hint, like `prefetch`).
    #[inline]
    pub fn prefetch_role(&self, pfn: Pfn) {
        if let Some(r) = self.roles.get(pfn as usize) {
            prefetch_line(r as *const AtomicU32 as *const u8);
        }
    }

    /// Heap bytes of the role table (for the overhead report).
    pub fn heap_bytes(&self) -> usize {
        self.roles.heap_bytes()
    }

    fn discard(&self, pfn: Pfn) {
        if !self.can_release {
            return;
        }
        if let Some((_, offset)) = self.file_page(pfn) {
            let m = self.range.as_ref().and_then(|r| r.memfd.as_ref()).expect("memfd backing");
            m.punch(offset, self.page_size);
            return;
        }
        // SAFETY: the range is one whole simulated page inside the committed reservation, aligned
        // to the host page (host page <= simulated page, both powers of two); it has no owner.
        unsafe {
            libc::madvise(self.page_ptr(pfn).cast(), self.page_size, libc::MADV_DONTNEED);
        }
    }

    /// Address of page `pfn`, which must have been handed out by `alloc_pages`.
    #[inline]
    pub fn page_ptr(&self, pfn: Pfn) -> *mut u8 {
        let range = self.range.as_ref().expect("pages exist only with a reservation");
        let offset = (pfn as usize) << self.page_shift;
        assert!(offset < range.len, "page number beyond the reservation");
        // SAFETY: offset < len (asserted), so the result stays inside the reservation.
        unsafe { range.base.as_ptr().add(offset) }
    }

    /// The address of arena byte `offset`, computed (never dereferenced here): for callers that
    /// have checked the offset by its page's role. (Without a reservation there are no roles;
    /// the result is then `offset` itself.)
    #[inline]
    pub fn addr(&self, offset: usize) -> *mut u8 {
        self.base.wrapping_add(offset) as *mut u8
    }

    /// Whether address `addr` lies inside the reservation.
    #[inline]
    pub fn holds(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base) < self.len
    }

    /// The 8-byte word at `offset` of the unit (a page, or a compound page) starting at page
    /// `pfn`, accessed only atomically.
    #[inline]
    pub fn word(&self, pfn: Pfn, offset: usize) -> &AtomicU64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.max_unit, "misaligned header word");
        // SAFETY: the word lies inside a unit of mapped pages handed out together (asserted
        // above), is 8-byte aligned (page base is page-aligned, offset a multiple of 8), and the
        // mapping lives as long as `self`.
        // Header words are only ever accessed through this atomic view while pages are owned.
        unsafe { &*(self.page_ptr(pfn).add(offset) as *const AtomicU64) }
    }

    /// Starts loading the two cache lines at arena byte `offset` (an object's header and the
    /// start of its payload) before the caller knows the offset is valid: a prefetch of an
    /// address outside the mapping is ignored by the CPU, never a fault.
    #[inline]
    pub fn prefetch(&self, offset: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(range) = &self.range {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = range.base.as_ptr().wrapping_add(offset).cast::<i8>();
            // SAFETY: prefetching has no architectural effect besides caching; it never faults,
            // whatever the address (Intel SDM, PREFETCHh), so any `offset` is sound here.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = offset;
    }

    /// Starts loading the cache lines of `len` bytes at arena byte `offset`, up to the end of
    /// its page, for reading or (`write`) for writing. A prefetch only, as `prefetch`.
    #[inline]
    pub fn prefetch_range(&self, offset: usize, len: usize, write: bool) {
        #[cfg(target_arch = "x86_64")]
        if let Some(range) = &self.range {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
            let end = (offset + len).min((offset | (self.page_size - 1)) + 1);
            let base = range.base.as_ptr();
            let mut line = offset & !63;
            while line < end {
                let p = base.wrapping_add(line).cast::<i8>();
                // SAFETY: as `prefetch`: a prefetch never faults, whatever the address.
                unsafe {
                    if write {
                        _mm_prefetch::<_MM_HINT_ET0>(p)
                    } else {
                        _mm_prefetch::<_MM_HINT_T0>(p)
                    }
                };
                line += 64;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (offset, len, write);
    }

    /// The 8-byte word at arena byte `offset` (a page's offset plus an offset within it).
    #[inline]
    pub fn word_at(&self, offset: usize) -> &AtomicU64 {
        self.word((offset >> self.page_shift) as Pfn, offset & (self.page_size - 1))
    }

    /// Copies `dst.len()` bytes from page `pfn` at `offset` (within the unit starting there).
    ///
    /// # Safety
    /// The caller owns or has pinned the object these bytes belong to, so no other thread writes
    /// them concurrently; the range lies within the unit (page or compound page) at `pfn`.
    #[inline]
    pub unsafe fn read(&self, pfn: Pfn, offset: usize, dst: &mut [u8]) {
        debug_assert!(offset + dst.len() <= self.max_unit);
        std::ptr::copy_nonoverlapping(self.page_ptr(pfn).add(offset), dst.as_mut_ptr(), dst.len());
    }

    /// Copies `src` into page `pfn` at `offset` (within the unit starting there).
    ///
    /// # Safety
    /// The caller owns the object these bytes belong to (allocated to it and not yet
    /// published, or held under migration), and the range lies within the unit at `pfn`.
    #[inline]
    pub unsafe fn write(&self, pfn: Pfn, offset: usize, src: &[u8]) {
        debug_assert!(offset + src.len() <= self.max_unit);
        std::ptr::copy_nonoverlapping(src.as_ptr(), self.page_ptr(pfn).add(offset), src.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_keep_their_role_for_life() {
        let arena = PageArena::new(4096);
        let mut first = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut first, 7));
        for (i, &p) in first.iter().enumerate() {
            assert_eq!(arena.role(p), Some((7, i as u32)));
        }
        arena.free_pages(&first);
        assert_eq!(arena.pages_cached(), 3);
        // Another class gets new pages, never class 7's.
        let mut other = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut other, 9));
        assert!(other.iter().all(|p| !first.contains(p)), "{other:?} reuses {first:?}");
        assert_eq!(arena.role(other[2]), Some((9, 2)));
        // Class 7 gets its own pages back, each in the same place of the zspage.
        let mut again = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut again, 7));
        assert_eq!(again, first);
        assert_eq!(arena.pages_cached(), 0);
        // A shorter zspage of the class takes the roles it needs (index 0 only).
        arena.free_pages(&again);
        let mut one = [0 as Pfn; 1];
        assert!(arena.alloc_pages(&mut one, 7));
        assert_eq!(one[0], first[0]);
        assert_eq!(arena.role(Pfn::MAX), None);
    }

    #[test]
    fn the_cache_is_bounded_and_evicts_the_oldest_page() {
        let arena = PageArena::new(65536);
        let limit = arena.cache_limit();
        assert_eq!(limit, 32, "2 MiB of 64 KiB pages");
        assert_eq!(PageArena::new(1 << 20).cache_limit(), PAGE_CACHE_MIN);
        let pages: Vec<Pfn> = (0..limit + 5)
            .map(|_| {
                let mut p = [0 as Pfn; 1];
                assert!(arena.alloc_pages(&mut p, 1));
                p[0]
            })
            .collect();
        arena.free_pages(&pages);
        assert_eq!(arena.pages_cached(), limit as u64);
        let free = arena.free.lock().unwrap();
        let role = &free.by_role[role_of(1, 0) as usize];
        assert_eq!(role.released, pages[..5], "the five oldest were discarded");
        assert_eq!(role.cached.len(), limit);
    }
}
