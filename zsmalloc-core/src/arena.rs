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
//! Room for the other read modes (SPEC §5): pages are named by number, never by address, so
//! `contiguous` only needs `alloc_pages` to hand out runs of adjacent numbers, and `map` only needs
//! the chunks backed by a memfd (released with `MADV_REMOVE`) so two pages can be mapped side by
//! side into a per-thread window. Neither changes a zspage or the pool.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Page number within one arena.
pub type Pfn = u32;

/// Address space reserved per pool (PROT_NONE until used): 64 GiB of simulated pages at most.
const RESERVE_BYTES: usize = 1 << 36;
/// Smallest reservation accepted when the address space is limited (`ulimit -v`).
const MIN_RESERVE_BYTES: usize = 1 << 28;
/// Reserved space is made accessible in steps of this many bytes.
const COMMIT_BYTES: usize = 1 << 28;
/// Released pages kept without `MADV_DONTNEED`, ready for reuse.
pub const PAGE_CACHE_LIMIT: usize = 64;

/// The reserved range, unmapped on drop.
struct Reservation {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the range is plain memory owned by the arena; synchronisation of its contents is the
// pool's protocol (atomic header words, owner-only payload copies).
unsafe impl Send for Reservation {}
// SAFETY: as above; `Reservation` itself is immutable after creation.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves the largest power-of-two range from `RESERVE_BYTES` down that the system grants.
    fn new() -> Option<Reservation> {
        let mut len = RESERVE_BYTES;
        while len >= MIN_RESERVE_BYTES {
            // SAFETY: an anonymous private PROT_NONE mapping at an address the kernel picks; the
            // result is checked against MAP_FAILED before use.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                return NonNull::new(ptr.cast()).map(|base| Reservation { base, len });
            }
            len /= 2;
        }
        None
    }

    /// Makes `[offset, offset + len)` readable and writable.
    fn commit(&self, offset: usize, len: usize) -> bool {
        debug_assert!(offset + len <= self.len);
        // SAFETY: the range lies inside our own reservation and is page-aligned (offset and len
        // are multiples of COMMIT_BYTES); nothing else maps it.
        unsafe {
            libc::mprotect(
                self.base.as_ptr().add(offset).cast(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            ) == 0
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned; nothing references the range once
        // the arena (its only owner) is dropped.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

#[derive(Default)]
struct FreePages {
    /// Pages never handed out start here.
    next_unused: u64,
    /// Bytes of the reservation made accessible so far.
    committed: usize,
    /// Released pages still resident (bounded by `PAGE_CACHE_LIMIT`), reused first.
    cached: Vec<Pfn>,
    /// Released pages given back with MADV_DONTNEED.
    released: Vec<Pfn>,
}

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
    /// Whether MADV_DONTNEED can return single simulated pages (host page <= simulated page).
    can_release: bool,
    /// `None` if no address space could be reserved: every allocation then fails.
    range: Option<Reservation>,
    free: Mutex<FreePages>,
    cached: AtomicU64,
}

impl PageArena {
    pub fn new(page_size: u32) -> PageArena {
        let page_size = page_size as usize;
        // SAFETY: sysconf has no memory-safety preconditions.
        let host_page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        PageArena {
            page_size,
            page_shift: page_size.trailing_zeros(),
            can_release: host_page > 0 && host_page as usize <= page_size,
            range: Reservation::new(),
            free: Mutex::new(FreePages::default()),
            cached: AtomicU64::new(0),
        }
    }

    /// Pages released but kept resident for reuse.
    pub fn pages_cached(&self) -> u64 {
        self.cached.load(Ordering::Relaxed)
    }

    /// Allocates `out.len()` pages, or none (returns false) when the reserved address space is
    /// exhausted.
    pub fn alloc_pages(&self, out: &mut [Pfn]) -> bool {
        let Some(range) = &self.range else { return false };
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = out.len().saturating_sub(free.cached.len() + free.released.len());
        let end = (free.next_unused as usize + fresh) << self.page_shift;
        if end > range.len {
            return false;
        }
        // Make the fresh pages accessible before taking anything, so failure takes nothing.
        if end > free.committed {
            let upto = end.next_multiple_of(COMMIT_BYTES).min(range.len);
            if !range.commit(free.committed, upto - free.committed) {
                return false;
            }
            free.committed = upto;
        }
        for slot in out.iter_mut() {
            *slot = match free.cached.pop().or_else(|| free.released.pop()) {
                Some(p) => p,
                None => {
                    free.next_unused += 1;
                    (free.next_unused - 1) as Pfn
                }
            };
        }
        self.cached.store(free.cached.len() as u64, Ordering::Relaxed);
        true
    }

    /// Returns pages; those beyond the cache go back to the kernel with MADV_DONTNEED.
    pub fn free_pages(&self, pages: &[Pfn]) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        for &pfn in pages {
            if free.cached.len() < PAGE_CACHE_LIMIT {
                free.cached.push(pfn);
            } else {
                self.discard(pfn);
                free.released.push(pfn);
            }
        }
        self.cached.store(free.cached.len() as u64, Ordering::Relaxed);
    }

    fn discard(&self, pfn: Pfn) {
        if !self.can_release {
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

    /// The 8-byte word at `offset` of page `pfn`, accessed only atomically.
    #[inline]
    pub fn word(&self, pfn: Pfn, offset: usize) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.page_size, "misaligned header word");
        // SAFETY: the word lies inside a mapped page (asserted above), is 8-byte aligned (page
        // base is page-aligned, offset a multiple of 8), and the mapping lives as long as `self`.
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

    /// Copies `dst.len()` bytes from page `pfn` at `offset` (within the page).
    ///
    /// # Safety
    /// The caller owns or has pinned the object these bytes belong to, so no other thread writes
    /// them concurrently; the range lies within the page.
    #[inline]
    pub unsafe fn read(&self, pfn: Pfn, offset: usize, dst: &mut [u8]) {
        debug_assert!(offset + dst.len() <= self.page_size);
        std::ptr::copy_nonoverlapping(self.page_ptr(pfn).add(offset), dst.as_mut_ptr(), dst.len());
    }

    /// Copies `src` into page `pfn` at `offset`.
    ///
    /// # Safety
    /// The caller owns the object slot these bytes belong to (allocated to it and not yet
    /// published, or held under migration), and the range lies within the page.
    #[inline]
    pub unsafe fn write(&self, pfn: Pfn, offset: usize, src: &[u8]) {
        debug_assert!(offset + src.len() <= self.page_size);
        std::ptr::copy_nonoverlapping(src.as_ptr(), self.page_ptr(pfn).add(offset), src.len());
    }
}
