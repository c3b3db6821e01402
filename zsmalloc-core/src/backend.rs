//! The backend interface: what the C ABI, the Python package and the lab ask of an allocator,
//! in the raw layer's terms (the caller keeps each handle word at a stable address, as zram
//! does). [`Pool`] (zsmalloc, implemented here), `ZblockPool` and `MallocPool` implement it;
//! `AnyPool` (`any_pool.rs`) is one of them, chosen by [`PoolConfig::backend`].
//!
//! Meaning per backend (docs/DESIGN.md, Backends): zblock and malloc read every object in place
//! (no copy, one scatter-gather segment, never spanning), `compact` frees 0 pages, their
//! `class_stats` rows are block types (zblock) or none (malloc), and `handle_move_raw` moves the
//! handle word as zsmalloc's does.

use std::sync::atomic::AtomicUsize;

use crate::config::PoolConfig;
use crate::error::Result;
use crate::pool::Pool;
use crate::read::SgSegments;
use crate::stats::{ClassStats, PoolStats};

/// The stages of [`Backend::prefetch_raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefetchStage {
    /// The handle word itself.
    Word,
    /// The metadata the handle word names (its zspage entry, its page's entry).
    Metadata,
    /// The object's header word (found through the metadata).
    Header,
}

/// The read a placement read stands for: a section that hands out one address (in `copy` mode,
/// a spanning object is copied for it), or a scatter-gather section (never copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Section,
    ScatterGather,
}

/// Where a read finds an object: what a read section would do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPlacement {
    /// The object's length.
    pub len: usize,
    /// It crosses a unit (page) boundary.
    pub spanning: bool,
    /// Bytes the pool's read mode copies to read it (`copy` mode: a spanning object's length).
    pub copied: u64,
}

/// An allocator of objects behind raw handle words. Every method is safe to call from several
/// threads at once; the `unsafe` ones share the raw layer's contract, stated on each.
pub trait Backend: Send + Sync {
    /// The pool's name (as `zs_create_pool` was given it).
    fn name(&self) -> &str;
    fn config(&self) -> &PoolConfig;
    /// Pages the pool holds now.
    fn total_pages(&self) -> u64;
    fn stats(&self) -> PoolStats;
    /// One row per class (zsmalloc) or block type (zblock), ascending by size.
    fn class_stats(&self) -> Vec<ClassStats>;
    /// Pages freed by compaction now (0 for the backends that cannot compact).
    fn compact(&self) -> u64;
    /// The smallest length stored whole (zsmalloc: the huge class; zblock: the smallest length
    /// it refuses; malloc: the page size).
    fn huge_class_size(&self) -> usize;
    /// The class (or block type) index a length goes to; an out-of-range marker for a length
    /// the backend refuses (documented per backend in docs/DESIGN.md).
    fn lookup_class_index(&self, size: usize) -> u32;
    /// Heap bytes of metadata outside the pages: (allocator metadata, handle tables).
    fn metadata_bytes(&self) -> (usize, usize);
    /// Starts loading what an operation on the object `h` holds will touch, in `stage`s a
    /// caller runs over a batch of operations one after the other (each stage's loads wait on
    /// the lines the one before fetched). A hint: nothing is checked or changed; the default
    /// does nothing.
    #[inline]
    fn prefetch_raw(&self, h: &AtomicUsize, stage: PrefetchStage) {
        let _ = (h, stage);
    }
    /// Whether the pool keeps objects' bytes (`false`: placement only, `payload.rs`; every read
    /// of bytes is refused with [`crate::Error::NoPayload`]).
    fn keeps_bytes(&self) -> bool {
        true
    }

    /// Stores `data` into the empty handle word `h`.
    ///
    /// # Safety
    /// `h` stays at its address while it holds an object, and nothing but this pool's methods
    /// writes it meanwhile.
    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()>;
    /// Allocates an unwritten object of `len` bytes into the empty handle word `h`.
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()>;
    /// Writes the whole object `h` holds (`data.len()` must be its length).
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()>;
    /// Frees the object `h` holds and empties `h`.
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()>;
    /// Moves the object `from` holds to the empty word `to` (`from` is emptied).
    ///
    /// # Safety
    /// As [`Backend::store_raw`], for both words.
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()>;
    /// Begins a read section of `mem_len` bytes (the stored length): the object's address, in
    /// place or in `local_copy` (see each backend). `local_copy` may be NULL where the backend
    /// and read mode never copy.
    ///
    /// # Safety
    /// As [`Backend::store_raw`]; `local_copy` is NULL or writable for `mem_len + 8` bytes. The
    /// returned pointer is valid until the matching end and must not be written through.
    unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8>;
    /// Ends a section begun on `h` (`handle_mem`: what the begin returned, or NULL).
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        handle_mem: *const u8,
    ) -> Result<()>;
    /// Begins a scatter-gather section: one or two segments, nothing copied.
    ///
    /// # Safety
    /// As [`Backend::read_begin_raw`]; ends with [`Backend::read_end_at_raw`].
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments>;
    /// Copies the whole object into `out` (at least its length); returns the length.
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize>;
    /// The length of the object `h` holds.
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize>;
    /// Where a read of `kind` finds the object `h` holds (`mem_len`, if given, its length),
    /// counted as that read: spanning or not and the bytes it copies, nothing handed out. zblock and
    /// malloc read every object in place (never spanning, nothing copied).
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        kind: ReadKind,
    ) -> Result<ReadPlacement>;
}

/// zsmalloc through the interface: each method is the pool's own.
impl Backend for Pool {
    #[inline]
    fn name(&self) -> &str {
        <Pool>::name(self)
    }
    #[inline]
    fn config(&self) -> &PoolConfig {
        <Pool>::config(self)
    }
    #[inline]
    fn total_pages(&self) -> u64 {
        <Pool>::total_pages(self)
    }
    fn stats(&self) -> PoolStats {
        <Pool>::stats(self)
    }
    fn class_stats(&self) -> Vec<ClassStats> {
        <Pool>::class_stats(self)
    }
    fn compact(&self) -> u64 {
        <Pool>::compact(self)
    }
    #[inline]
    fn huge_class_size(&self) -> usize {
        <Pool>::huge_class_size(self)
    }
    #[inline]
    fn lookup_class_index(&self, size: usize) -> u32 {
        <Pool>::lookup_class_index(self, size)
    }
    fn metadata_bytes(&self) -> (usize, usize) {
        <Pool>::metadata_bytes(self)
    }
    #[inline]
    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::store_raw(self, h, data) }
    }
    #[inline]
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::malloc_raw(self, h, len) }
    }
    #[inline]
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::write_raw(self, h, data) }
    }
    #[inline]
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::free_raw(self, h) }
    }
    #[inline]
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::handle_move_raw(self, from, to) }
    }
    /// [`Pool::read_begin_raw`]: a NULL `local_copy` in `copy` mode serves only objects that
    /// lie in one page (a spanning one is refused with `EINVAL`, counting nothing).
    #[inline(always)]
    unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        // SAFETY: forwarded contract (the same as the trait's).
        unsafe { <Pool>::read_begin_raw(self, h, mem_len, local_copy) }
    }
    #[inline]
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        handle_mem: *const u8,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::read_end_at_raw(self, h, mem_len, handle_mem) }
    }
    #[inline]
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::read_sg_begin_raw(self, h, mem_len) }
    }
    #[inline]
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::read_into_raw(self, h, out) }
    }
    #[inline]
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::object_len_raw(self, h) }
    }
    #[inline]
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        kind: ReadKind,
    ) -> Result<ReadPlacement> {
        // SAFETY: forwarded contract.
        unsafe { <Pool>::read_placement_raw(self, h, mem_len, kind) }
    }
}
