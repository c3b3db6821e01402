//! Raw-layer calls on any backend, through the backend interface, for the tests of the zblock and
//! malloc backends: pools, and store, read and free on boxed handle words (stable addresses).

use std::sync::atomic::AtomicUsize;

use zsmalloc_core::malloc_pool::MallocPool;
use zsmalloc_core::zblock::ZblockPool;
use zsmalloc_core::{Backend, BackendKind, Error, PoolConfig};

pub fn cfg(backend: BackendKind, page: u32) -> PoolConfig {
    PoolConfig { backend, page_size: page, ..PoolConfig::default() }
}

pub fn zblock(page: u32) -> ZblockPool {
    ZblockPool::with_name("zb", cfg(BackendKind::Zblock, page)).unwrap()
}

pub fn malloc_pool() -> MallocPool {
    MallocPool::with_name("m", cfg(BackendKind::Malloc, 4096)).unwrap()
}

/// Stores `data` into a fresh boxed word (stable address).
pub fn store(p: &dyn Backend, data: &[u8]) -> Result<Box<AtomicUsize>, Error> {
    let h = Box::new(AtomicUsize::new(0));
    // SAFETY: `h` is boxed (stable) and only this pool writes it.
    unsafe { p.store_raw(&h, data) }.map(|()| h)
}

pub fn read(p: &dyn Backend, h: &AtomicUsize) -> Result<Vec<u8>, Error> {
    // SAFETY: `h` is a word of the test's, stable while it holds an object.
    let len = unsafe { p.object_len_raw(h) }?;
    // SAFETY: as above; NULL local copy: these backends read in place.
    let ptr = unsafe { p.read_begin_raw(h, len, std::ptr::null_mut()) }?;
    // SAFETY: the section is open: `len` readable bytes at `ptr`.
    let v = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
    // SAFETY: ends the section just begun.
    unsafe { p.read_end_at_raw(h, Some(len), ptr) }?;
    Ok(v)
}

pub fn free(p: &dyn Backend, h: &AtomicUsize) -> Result<(), Error> {
    // SAFETY: as `read`.
    unsafe { p.free_raw(h) }
}
