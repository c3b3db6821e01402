//! Read sections: `zs_obj_read_begin`/`_end` (copy mode) and the scatter-gather pair.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{Pool, Result};

use crate::errors::PANIC_ERRNO;
use crate::guard::{self, invalid};
use crate::object::{fast, pool_and_handle, zs_handle};
use crate::pool::zs_pool;
use crate::size_t;

/// One segment of a scatter-gather read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zs_sg {
    pub addr: *mut c_void,
    pub len: size_t,
}

/// The body of `zs_obj_read_begin` once the pool and handle are checked (shared with the
/// compat layer).
///
/// # Safety
/// `local_copy` is NULL or writable for `mem_len + ZS_HANDLE_SIZE` bytes until the section ends.
pub(crate) unsafe fn read_begin(
    pool: &Pool,
    word: &AtomicUsize,
    mem_len: usize,
    local_copy: *mut c_void,
) -> Result<*mut c_void> {
    if local_copy.is_null() {
        // No buffer: only objects whose payload lies in one page can be served.
        // SAFETY: `word` is aligned and live; the core validates its contents.
        let (segs, n) = unsafe { pool.read_sg_begin_raw(word, mem_len) }?;
        if n == 1 {
            return Ok(segs[0].0.cast_mut().cast());
        }
        // SAFETY: ends the section just begun on the same handle.
        unsafe { pool.read_end_raw(word, Some(mem_len)) }?;
        return Err(invalid(
            "local_copy is NULL but the object crosses a page boundary (pass a page-sized \
             buffer)",
        ));
    }
    // SAFETY: `local_copy` is writable for mem_len + ZS_HANDLE_SIZE bytes (caller's promise;
    // the core checks mem_len against the stored length before copying).
    let ptr = unsafe { pool.read_begin_raw(word, mem_len, local_copy.cast()) }?;
    Ok(ptr.cast_mut().cast())
}

/// `zs_obj_read_begin`: see the header. With `local_copy == NULL` the object is read in place
/// when it lies in one page and refused (`-EINVAL`) when it crosses a page boundary.
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`crate::object::handle_word`]; `local_copy` is NULL or writable for
/// `mem_len + ZS_HANDLE_SIZE` bytes and stays so until the matching `zs_obj_read_end`.
pub unsafe fn zs_obj_read_begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: size_t,
    local_copy: *mut c_void,
) -> *mut c_void {
    const FUNC: &str = "zs_obj_read_begin";
    // SAFETY: `word` is the caller's live handle word and the section ends with
    // `zs_obj_read_end` (forwarded contract).
    let begin =
        |pool: &Pool, word: &AtomicUsize| unsafe { pool.read_begin_in_place(word, mem_len) };
    let in_place = |ptr: *const u8| ptr.cast_mut().cast();
    // SAFETY: forwarded contract.
    if let Some(r) = unsafe { fast(FUNC, p, h, begin) }.settled(in_place, std::ptr::null_mut()) {
        return r;
    }
    guard::call(FUNC, std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        // SAFETY: forwarded contract on `local_copy`.
        unsafe { read_begin(pool, word, mem_len, local_copy) }
    })
}

/// `zs_obj_read_end`: ends the read section begun on `*h`; `mem_len` must match the begin.
/// `handle_mem` (the pointer `zs_obj_read_begin` returned) is accepted for kernel parity.
///
/// # Safety
/// As [`zs_obj_read_begin`].
pub unsafe fn zs_obj_read_end(
    p: *mut zs_pool,
    h: *mut zs_handle,
    mem_len: size_t,
    _handle_mem: *mut c_void,
) -> c_int {
    const FUNC: &str = "zs_obj_read_end";
    let end = |pool: &Pool, word: &AtomicUsize| {
        // SAFETY: `word` is the caller's live handle word (forwarded contract).
        unsafe { pool.read_end_recorded(word, mem_len) }.then_some(())
    };
    // SAFETY: forwarded contract.
    if let Some(r) = unsafe { fast(FUNC, p, h, end) }.settled(|()| 0, -PANIC_ERRNO) {
        return r;
    }
    guard::call_int(FUNC, || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        // SAFETY: `word` is aligned and live; the core checks a section is open on it.
        unsafe { pool.read_end_raw(word, Some(mem_len)) }?;
        Ok(0)
    })
}

/// `zs_obj_read_sg_begin`: fills `sg[0..n]` (n = 1 or 2, returned) with the object's bytes in
/// place; nothing is copied. Unused entries are zeroed.
///
/// # Safety
/// As [`zs_obj_read_begin`]; `sg` is NULL or writable for two `struct zs_sg`.
pub unsafe fn zs_obj_read_sg_begin(
    p: *mut zs_pool,
    h: *mut zs_handle,
    sg: *mut zs_sg,
    mem_len: size_t,
) -> c_int {
    guard::call_int("zs_obj_read_sg_begin", || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        if sg.is_null() {
            return Err(invalid("sg is NULL"));
        }
        // SAFETY: `word` is aligned and live; the core validates its contents.
        let (segs, n) = unsafe { pool.read_sg_begin_raw(word, mem_len) }?;
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
    })
}

/// `zs_obj_read_sg_end`: ends a scatter-gather read section of `*h`.
///
/// # Safety
/// As [`zs_obj_read_begin`].
pub unsafe fn zs_obj_read_sg_end(p: *mut zs_pool, h: *mut zs_handle) -> c_int {
    guard::call_int("zs_obj_read_sg_end", || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        // SAFETY: `word` is aligned and live; the core checks a section is open on it.
        unsafe { pool.read_end_raw(word, None) }?;
        Ok(0)
    })
}
