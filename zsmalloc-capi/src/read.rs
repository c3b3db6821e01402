//! Read sections: copy mode (`zs_obj_read_begin`/`_end`) and scatter-gather (`struct zs_sg`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{AnyPool, Backend, Result};

use crate::errors::invalid;
use crate::handle::{self, zs_handle};
use crate::pool::zs_pool;
use crate::types::size_t;

/// One segment of a scatter-gather read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zs_sg {
    pub addr: *mut c_void,
    pub len: size_t,
}

/// Begins a read section of `mem_len` bytes on a checked handle word: in place when the object
/// lies in one page, else as the pool's read mode serves it (copied into `local_copy`, mapped, or
/// in place); in copy mode with `local_copy` NULL an object crossing a page is refused (the other
/// modes never copy, so `local_copy` may be NULL).
///
/// # Safety
/// `word` is aligned and live; `local_copy` is NULL or writable for `mem_len + ZS_HANDLE_SIZE`
/// bytes until the section ends.
#[inline(always)]
pub(crate) unsafe fn begin_on(
    pool: &AnyPool,
    word: &AtomicUsize,
    mem_len: usize,
    local_copy: *mut c_void,
) -> Result<*mut c_void> {
    // SAFETY: `local_copy` is NULL or writable for mem_len + ZS_HANDLE_SIZE bytes (caller's
    // promise; the core checks mem_len against the stored length before copying, and serves a
    // NULL one only where nothing needs copying), which is `Backend::read_begin_raw`'s contract.
    let ptr = unsafe { Backend::read_begin_raw(pool, word, mem_len, local_copy.cast()) }?;
    Ok(ptr.cast_mut().cast())
}

/// Begins a copy-mode read section on `*h` (see [`begin_on`]).
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`handle::word`]; `local_copy` as for
/// [`begin_on`].
#[inline(always)]
pub(crate) unsafe fn begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: usize,
    local_copy: *mut c_void,
) -> Result<*mut c_void> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    // SAFETY: forwarded contract.
    unsafe { begin_on(pool, word, mem_len, local_copy) }
}

/// Ends the read section begun on `*h` (`mem_len` as at its begin).
///
/// # Safety
/// As [`begin`].
#[inline(always)]
pub(crate) unsafe fn end(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: usize,
    handle_mem: *mut c_void,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    // SAFETY: `word` is aligned and live; the core checks a section is open on it (and, in map
    // mode, releases the map slot `handle_mem` lies in, if any).
    unsafe { Backend::read_end_at_raw(pool, word, Some(mem_len), handle_mem.cast_const().cast()) }?;
    Ok(0)
}

/// Fills `sg[0..n]` (n = 1 or 2, returned) with the object's bytes in place; unused entries are
/// zeroed.
///
/// # Safety
/// As [`begin`]; `sg` is NULL or writable for two `struct zs_sg`.
pub(crate) unsafe fn sg_begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    sg: *mut zs_sg,
    mem_len: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    if sg.is_null() {
        return Err(invalid("sg is NULL"));
    }
    let (segs, n) = {
        // SAFETY: `word` is aligned and live; the core validates its contents.
        unsafe { Backend::read_sg_begin_raw(pool, word, mem_len) }
    }?;
    for (i, &(addr, len)) in segs.iter().enumerate() {
        let seg = if i < n {
            zs_sg { addr: addr.cast_mut().cast(), len }
        } else {
            zs_sg { addr: std::ptr::null_mut(), len: 0 }
        };
        // SAFETY: `sg` is writable for two entries (caller's promise); any alignment.
        unsafe { sg.add(i).write_unaligned(seg) };
    }
    Ok(n as c_int)
}

/// Ends a scatter-gather read section of `*h`.
///
/// # Safety
/// As [`begin`].
pub(crate) unsafe fn sg_end(p: *mut zs_pool, h: *mut zs_handle) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    // SAFETY: `word` is aligned and live; the core checks a section is open on it.
    unsafe { Backend::read_end_at_raw(pool, word, None, std::ptr::null()) }?;
    Ok(0)
}
