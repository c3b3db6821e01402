//! Mainline's older handle API for `include/zsmalloc_compat.h`: `unsigned long` handles returned
//! by `zs_malloc(pool, size, gfp, nid)`.
//!
//! Such a handle is the address of a handle word in a slot table owned by the pool (the kernel's
//! `handle_cachep`), released with the pool. Every `unsigned long` coming back from C is looked
//! up in that table before use, so garbage values, values of another pool and double frees are
//! refused instead of dereferenced. Failures of `zs_compat_malloc` are returned as the kernel
//! does: `(unsigned long)-errno`, tested with `IS_ERR_VALUE()`.

use std::ffi::{c_int, c_ulong, c_void};
use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{AnyPool, Backend, Result};

use crate::guard::ErrValueHandle;
use crate::handle::{self, zs_handle};
use crate::object::too_long_write;
use crate::pool::zs_pool;
use crate::read;

/// `mem_len` meaning "the stored length" (for the older 3-argument read calls).
pub const ZS_COMPAT_LEN_UNKNOWN: usize = usize::MAX;

/// The kernel's `IS_ERR_VALUE`.
fn is_err_value(v: c_ulong) -> bool {
    v >= (-4095_i64) as c_ulong
}

/// The pool and the handle word of a live compat handle.
///
/// # Safety
/// `p` is NULL or a live pool.
unsafe fn parts<'a>(p: *mut zs_pool, handle: c_ulong) -> Result<(&'a AnyPool, &'a AtomicUsize)> {
    // SAFETY: forwarded contract.
    let zp = unsafe { zs_pool::get(p) }?;
    Ok((zp.pool(), zp.compat.get(handle as usize)?))
}

/// A new object of `size` bytes and its `unsigned long` handle.
///
/// # Safety
/// `p` is NULL or a live pool.
pub(crate) unsafe fn malloc(p: *mut zs_pool, size: usize) -> Result<ErrValueHandle> {
    // SAFETY: forwarded contract.
    let zp = unsafe { zs_pool::get(p) }?;
    let word = zp.compat.take()?;
    let value = word as *const AtomicUsize as usize;
    // SAFETY: the word lives in the pool's slot table until the pool is destroyed.
    if let Err(e) = unsafe { zp.pool().malloc_raw(word, size) } {
        zp.compat.give_back(value);
        return Err(e);
    }
    Ok(ErrValueHandle(value as c_ulong))
}

/// Frees the object and its handle slot; 0 and error values are ignored (as the kernel does).
///
/// # Safety
/// `p` is NULL or a live pool.
pub(crate) unsafe fn free(p: *mut zs_pool, handle: c_ulong) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let zp = unsafe { zs_pool::get(p) }?;
    if handle == 0 || is_err_value(handle) {
        return Ok(0);
    }
    let word = zp.compat.get(handle as usize)?;
    // SAFETY: a live slot word of this pool.
    unsafe { zp.pool().free_raw(word) }?;
    zp.compat.give_back(handle as usize);
    Ok(0)
}

/// Writes the whole object (mainline argument order: handle, source, length).
///
/// # Safety
/// `p` is NULL or a live pool; `src` readable for `mem_len` bytes; no read of this object runs.
pub(crate) unsafe fn write(
    p: *mut zs_pool,
    handle: c_ulong,
    src: *const c_void,
    mem_len: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { parts(p, handle) }?;
    let max = pool.config().max_object_size() as usize;
    // SAFETY: forwarded contract on `src`.
    let data = unsafe { handle::bytes(src, mem_len, || too_long_write(mem_len, max)) }?;
    // SAFETY: a live slot word; the caller promises no concurrent read of the object.
    unsafe { pool.write_raw(word, data) }?;
    Ok(0)
}

/// Begins a read section; `mem_len == ZS_COMPAT_LEN_UNKNOWN` reads the stored length.
///
/// # Safety
/// `p` is NULL or a live pool; `local_copy` as for `zs_obj_read_begin`.
pub(crate) unsafe fn read_begin(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: usize,
    local_copy: *mut c_void,
) -> Result<*mut c_void> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { parts(p, handle) }?;
    let len = if mem_len == ZS_COMPAT_LEN_UNKNOWN {
        // SAFETY: a live slot word.
        unsafe { pool.object_len_raw(word) }?
    } else {
        mem_len
    };
    // SAFETY: forwarded contract (`p` was checked by `parts`).
    let zp = unsafe { zs_pool::get(p) }?;
    // SAFETY: a live slot word; forwarded contract on `local_copy`.
    unsafe { read::begin_on(zp.pool(), word, len, local_copy) }
}

/// Ends a read section; `mem_len == ZS_COMPAT_LEN_UNKNOWN` skips the length check.
///
/// # Safety
/// `p` is NULL or a live pool.
pub(crate) unsafe fn read_end(
    p: *mut zs_pool,
    handle: c_ulong,
    mem_len: usize,
    handle_mem: *mut c_void,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { parts(p, handle) }?;
    let len = (mem_len != ZS_COMPAT_LEN_UNKNOWN).then_some(mem_len);
    // SAFETY: a live slot word; the core checks a section is open on it.
    unsafe { pool.read_end_at_raw(word, len, handle_mem.cast_const().cast()) }?;
    Ok(0)
}

/// The `struct zs_handle *` of a live compat handle.
///
/// # Safety
/// `p` is NULL or a live pool.
pub(crate) unsafe fn handle_of(p: *mut zs_pool, handle: c_ulong) -> Result<*mut zs_handle> {
    // SAFETY: forwarded contract.
    let (_, word) = unsafe { parts(p, handle) }?;
    Ok(word as *const AtomicUsize as *mut zs_handle)
}
