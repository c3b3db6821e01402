//! The page arena: simulated pages carved from a few large anonymous mappings.
//!
//! Never one mapping per page or per zspage (`vm.max_map_count` is 65,530 and real workloads
//! build more zspages than that). A page is named by its page number (`Pfn`); its address is
//! `chunk base + offset`, found without locks. Released pages go back to the kernel with
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
use std::sync::{Mutex, OnceLock};

/// Page number within one arena.
pub type Pfn = u32;

/// Bytes reserved per mapping.
const CHUNK_BYTES: usize = 1 << 30;
/// Mappings per arena: 256 GiB of simulated pages at most.
const MAX_CHUNKS: usize = 256;
/// Released pages kept without `MADV_DONTNEED`, ready for reuse.
pub const PAGE_CACHE_LIMIT: usize = 64;

/// One anonymous mapping, unmapped on drop.
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by the arena; synchronisation of its contents is the
// pool's protocol (atomic header words, owner-only payload copies).
unsafe impl Send for Mapping {}
// SAFETY: as above; `Mapping` itself is immutable after creation.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(len: usize) -> Option<Mapping> {
        // SAFETY: anonymous private mapping with no fixed address; the kernel picks the range and
        // the result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        NonNull::new(ptr.cast()).map(|base| Mapping { base, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what mmap returned; nothing references the mapping once
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
    /// Released pages still resident (bounded by `PAGE_CACHE_LIMIT`), reused first.
    cached: Vec<Pfn>,
    /// Released pages given back with MADV_DONTNEED.
    released: Vec<Pfn>,
}

/// Simulated pages of one pool.
pub struct PageArena {
    page_size: usize,
    page_shift: u32,
    pages_per_chunk_shift: u32,
    /// Whether MADV_DONTNEED can return single simulated pages (host page <= simulated page).
    can_release: bool,
    chunks: Box<[OnceLock<Mapping>]>,
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
            pages_per_chunk_shift: (CHUNK_BYTES / page_size).trailing_zeros(),
            can_release: host_page > 0 && host_page as usize <= page_size,
            chunks: (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect(),
            free: Mutex::new(FreePages::default()),
            cached: AtomicU64::new(0),
        }
    }

    /// Pages released but kept resident for reuse.
    pub fn pages_cached(&self) -> u64 {
        self.cached.load(Ordering::Relaxed)
    }

    /// Allocates `out.len()` pages, or none (returns false) when the address space reserved for
    /// pages is exhausted.
    pub fn alloc_pages(&self, out: &mut [Pfn]) -> bool {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let total_pages = (MAX_CHUNKS as u64) << self.pages_per_chunk_shift;
        let fresh = out.len().saturating_sub(free.cached.len() + free.released.len()) as u64;
        if free.next_unused + fresh > total_pages {
            return false;
        }
        // Map every chunk the fresh pages need before taking anything, so failure takes nothing.
        if fresh > 0
            && (free.next_unused..free.next_unused + fresh)
                .any(|pfn| self.chunk_base(pfn as Pfn).is_none())
        {
            return false;
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
        // SAFETY: the range is one whole simulated page inside a live mapping, aligned to the
        // host page (host page <= simulated page, both powers of two); the page has no owner.
        unsafe {
            libc::madvise(self.page_ptr(pfn).cast(), self.page_size, libc::MADV_DONTNEED);
        }
    }

    /// Base of the chunk holding `pfn`, mapping it on first use.
    fn chunk_base(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        let chunk = self.chunks.get((pfn >> self.pages_per_chunk_shift) as usize)?;
        if let Some(m) = chunk.get() {
            return Some(m.base);
        }
        let m = Mapping::new(CHUNK_BYTES)?;
        Some(chunk.get_or_init(|| m).base)
    }

    /// Address of page `pfn`. The page must have been handed out by `alloc_pages` (so its chunk
    /// is mapped); otherwise this panics, which would be a pool bug.
    #[inline]
    pub fn page_ptr(&self, pfn: Pfn) -> *mut u8 {
        let chunk = &self.chunks[(pfn >> self.pages_per_chunk_shift) as usize];
        let base = chunk.get().expect("page of an unmapped chunk").base.as_ptr();
        let offset = ((pfn as usize) & ((1 << self.pages_per_chunk_shift) - 1)) << self.page_shift;
        // SAFETY: offset < CHUNK_BYTES, so the result stays inside the mapping.
        unsafe { base.add(offset) }
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
