//! A pool of any backend, chosen by [`PoolConfig::backend`].
//!
//! Dispatch happens once per call: each method matches on the backend and calls that backend's
//! method, statically dispatched from there on. So zsmalloc pays one predictable branch per
//! call for sharing its callers with the other backends, nothing more.

use std::sync::atomic::AtomicUsize;

use crate::backend::{Backend, PrefetchStage, ReadKind, ReadPlacement};
use crate::class_table::ClassTable;
use crate::config::{BackendKind, PoolConfig};
use crate::error::Result;
use crate::handle_word::ObjectLocation;
use crate::malloc_pool::MallocPool;
use crate::pool::{PlacementPool, Pool};
use crate::read::SgSegments;
use crate::stats::{ClassStats, PoolStats};
use crate::zblock::ZblockPool;

/// A pool of any backend.
// Pools live behind an `Arc` or a reference, never in arrays: the size difference costs nothing,
// and boxing zsmalloc's pool would add an indirection to every call.
#[allow(clippy::large_enum_variant)]
// An explicit tag byte: matching on it is one compare, where a niche in zsmalloc's fields would
// be decoded on every call.
#[repr(u8)]
pub enum AnyPool {
    Zsmalloc(Pool),
    Zblock(ZblockPool),
    Malloc(MallocPool),
    /// zsmalloc keeping lengths and placement only (`PoolConfig::payload` false). A zblock pool
    /// without bytes is a `Zblock` (it keeps nothing in its pages but the bytes).
    Placement(PlacementPool),
}

/// Calls the `Backend` method in `$call` on whichever backend `$pool` is: the one dispatch on
/// the backend, for every caller of an `AnyPool` (the C ABI, the Python package, the lab).
macro_rules! on_backend {
    ($pool:expr, $b:ident => $call:expr) => {
        match $pool {
            AnyPool::Zsmalloc($b) => $call,
            AnyPool::Zblock($b) => $call,
            AnyPool::Malloc($b) => $call,
            AnyPool::Placement($b) => $call,
        }
    };
}

impl AnyPool {
    /// A pool of the backend `config.backend` names.
    pub fn with_name(name: &str, config: PoolConfig) -> Result<AnyPool> {
        Ok(match config.backend {
            BackendKind::Zsmalloc if !config.payload => {
                AnyPool::Placement(PlacementPool::without_payload(name, config)?)
            }
            BackendKind::Zsmalloc => AnyPool::Zsmalloc(Pool::with_name(name, config)?),
            BackendKind::Zblock => AnyPool::Zblock(ZblockPool::with_name(name, config)?),
            BackendKind::Malloc => AnyPool::Malloc(MallocPool::with_name(name, config)?),
        })
    }

    /// A pool configured by the `ZSMALLOC_*` variables (`ZSMALLOC_BACKEND` among them).
    pub fn from_env(name: &str) -> Result<AnyPool> {
        AnyPool::with_name(name, PoolConfig::from_env()?)
    }

    pub fn kind(&self) -> BackendKind {
        match self {
            AnyPool::Zsmalloc(_) | AnyPool::Placement(_) => BackendKind::Zsmalloc,
            AnyPool::Zblock(_) => BackendKind::Zblock,
            AnyPool::Malloc(_) => BackendKind::Malloc,
        }
    }

    /// The zsmalloc pool, for what only zsmalloc has (class table, object locations).
    #[inline]
    pub fn as_zsmalloc(&self) -> Option<&Pool> {
        match self {
            AnyPool::Zsmalloc(p) => Some(p),
            _ => None,
        }
    }

    /// The class table, for zsmalloc with or without bytes (zblock and malloc have none).
    pub fn class_table(&self) -> Option<&ClassTable> {
        match self {
            AnyPool::Zsmalloc(p) => Some(p.class_table()),
            AnyPool::Placement(p) => Some(p.class_table()),
            _ => None,
        }
    }

    /// `huge_class_size` of one band (as [`Pool::huge_class_size_of_band`]), for zsmalloc with
    /// or without bytes.
    pub fn huge_class_size_of_band(&self, band: u32) -> Option<usize> {
        match self {
            AnyPool::Zsmalloc(p) => p.huge_class_size_of_band(band),
            AnyPool::Placement(p) => p.huge_class_size_of_band(band),
            _ => None,
        }
    }

    /// Where the object of `h` is (zsmalloc with or without bytes; `None` for the others).
    ///
    /// # Safety
    /// As [`Backend::store_raw`].
    pub unsafe fn location_raw(&self, h: &AtomicUsize) -> Option<Result<ObjectLocation>> {
        match self {
            // SAFETY: forwarded contract.
            AnyPool::Zsmalloc(p) => Some(unsafe { p.location_raw(h) }),
            // SAFETY: forwarded contract.
            AnyPool::Placement(p) => Some(unsafe { p.location_raw(h) }),
            _ => None,
        }
    }

    /// Ends a section begun on `h`, without the address its begin returned.
    ///
    /// # Safety
    /// As [`Backend::read_end_at_raw`].
    #[inline]
    pub unsafe fn read_end_raw(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.read_end_at_raw(h, mem_len, std::ptr::null()) }
    }
}

impl From<Pool> for AnyPool {
    fn from(p: Pool) -> Self {
        AnyPool::Zsmalloc(p)
    }
}

impl Backend for AnyPool {
    #[inline]
    fn name(&self) -> &str {
        on_backend!(self, b => Backend::name(b))
    }
    #[inline]
    fn config(&self) -> &PoolConfig {
        on_backend!(self, b => Backend::config(b))
    }
    #[inline]
    fn total_pages(&self) -> u64 {
        on_backend!(self, b => Backend::total_pages(b))
    }
    fn stats(&self) -> PoolStats {
        on_backend!(self, b => Backend::stats(b))
    }
    fn class_stats(&self) -> Vec<ClassStats> {
        on_backend!(self, b => Backend::class_stats(b))
    }
    fn compact(&self) -> u64 {
        on_backend!(self, b => Backend::compact(b))
    }
    #[inline]
    fn huge_class_size(&self) -> usize {
        on_backend!(self, b => Backend::huge_class_size(b))
    }
    #[inline]
    fn lookup_class_index(&self, size: usize) -> u32 {
        on_backend!(self, b => Backend::lookup_class_index(b, size))
    }
    fn metadata_bytes(&self) -> (usize, usize) {
        on_backend!(self, b => Backend::metadata_bytes(b))
    }
    #[inline]
    fn keeps_bytes(&self) -> bool {
        on_backend!(self, b => Backend::keeps_bytes(b))
    }
    #[inline]
    fn prefetch_raw(&self, h: &AtomicUsize, stage: PrefetchStage) {
        on_backend!(self, b => Backend::prefetch_raw(b, h, stage))
    }
    #[inline]
    unsafe fn store_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::store_raw(b, h, data) })
    }
    #[inline]
    unsafe fn malloc_raw(&self, h: &AtomicUsize, len: usize) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::malloc_raw(b, h, len) })
    }
    #[inline]
    unsafe fn write_raw(&self, h: &AtomicUsize, data: &[u8]) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::write_raw(b, h, data) })
    }
    #[inline]
    unsafe fn free_raw(&self, h: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::free_raw(b, h) })
    }
    #[inline]
    unsafe fn handle_move_raw(&self, from: &AtomicUsize, to: &AtomicUsize) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::handle_move_raw(b, from, to) })
    }
    // Always inlined: the lab's and the C ABI's read loops call it once per object, and out
    // of line it costs a call and the dispatch on every read (about 2% of the lab's main run).
    #[inline(always)]
    unsafe fn read_begin_raw(
        &self,
        h: &AtomicUsize,
        mem_len: usize,
        local_copy: *mut u8,
    ) -> Result<*const u8> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::read_begin_raw(b, h, mem_len, local_copy) })
    }
    #[inline]
    unsafe fn read_end_at_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        handle_mem: *const u8,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::read_end_at_raw(b, h, mem_len, handle_mem) })
    }
    #[inline]
    unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::read_sg_begin_raw(b, h, mem_len) })
    }
    #[inline]
    unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::read_into_raw(b, h, out) })
    }
    #[inline]
    unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::object_len_raw(b, h) })
    }
    #[inline]
    unsafe fn read_placement_raw(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        kind: ReadKind,
    ) -> Result<ReadPlacement> {
        // SAFETY: forwarded contract.
        on_backend!(self, b => unsafe { Backend::read_placement_raw(b, h, mem_len, kind) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_null_local_copy_reaches_zsmalloc_s_in_one_page_read() {
        let pool = AnyPool::with_name("t", PoolConfig::default()).unwrap();
        // Class 3008 on 4K pages chains 3 pages for 4 objects: objects 1 and 2 span.
        let words: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
        for w in &words {
            // SAFETY: each word is empty and stays in `words` until freed below.
            unsafe { pool.store_raw(w, &[7u8; 3000]) }.unwrap();
        }
        let mut refused = 0;
        for w in &words {
            // SAFETY: the word holds a 3000-byte object; a begun section is ended at once.
            match unsafe { pool.read_begin_raw(w, 3000, std::ptr::null_mut()) } {
                // SAFETY: ends the section just begun on `w`.
                Ok(_) => unsafe { pool.read_end_raw(w, Some(3000)) }.unwrap(),
                Err(e) => {
                    assert_eq!(e.errno(), libc::EINVAL);
                    refused += 1;
                }
            }
        }
        assert_eq!(refused, 2, "the spanning objects are refused, not read through NULL");
        for w in &words {
            // SAFETY: as above, no section open.
            unsafe { pool.free_raw(w) }.unwrap();
        }
    }
}
