//! `struct zs_handle` and object operations: store, malloc + write, free, handle move.

use std::ffi::{c_int, c_void};
use std::sync::atomic::AtomicUsize;

use zsmalloc_core::config::MAX_PAGE_SIZE;
use zsmalloc_core::{Error, Pool, Result};

use crate::errors::PANIC_ERRNO;
use crate::guard::{self, invalid, Fast};
use crate::pool::zs_pool;
use crate::{gfp_t, size_t};

/// A handle: one machine word in the caller's own record (zram's slot, zswap's entry). 0 means
/// empty. The library reads and writes it only atomically, because compaction rewrites it from
/// other threads: do not write it yourself while it holds an object. It must be 8-byte aligned
/// and stay at one address while it holds an object (use `zs_handle_move` to relocate it).
#[repr(C)]
#[derive(Debug, Default)]
pub struct zs_handle {
    pub obj: usize,
}

/// The handle word behind a C handle pointer, after the NULL and alignment checks.
///
/// # Safety
/// `h` is NULL, misaligned, or points to a `struct zs_handle` that stays live for `'a`.
#[inline]
pub unsafe fn handle_word<'a>(h: *mut zs_handle) -> Result<&'a AtomicUsize> {
    if h.is_null() {
        return Err(invalid("handle is NULL"));
    }
    if !(h as usize).is_multiple_of(std::mem::align_of::<AtomicUsize>()) {
        return Err(misaligned(h));
    }
    // SAFETY: non-NULL, aligned, and live by the caller's promise; `struct zs_handle` is one
    // `uintptr_t`, which has the size and alignment of `AtomicUsize`; the library only accesses
    // it atomically (the C contract forbids concurrent plain writes while it holds an object).
    Ok(unsafe { &*(h as *const AtomicUsize) })
}

#[cold]
fn misaligned(h: *mut zs_handle) -> Error {
    invalid(format!("handle {h:p} is not 8-byte aligned"))
}

/// The pool and handle word behind C pointers, after the NULL and alignment checks.
///
/// # Safety
/// As [`zs_pool::get`] and [`handle_word`].
#[inline]
pub unsafe fn pool_and_handle<'a>(
    p: *mut zs_pool,
    h: *mut zs_handle,
) -> Result<(&'a Pool, &'a AtomicUsize)> {
    // SAFETY: forwarded contract.
    let pool = unsafe { zs_pool::get(p) }?.pool();
    // SAFETY: forwarded contract.
    let word = unsafe { handle_word(h) }?;
    Ok((pool, word))
}

/// An operation's common case without the general path's `Result` plumbing (a third of a read's
/// instructions, a fifth of a store+free step's): `f` runs on the checked pool and handle word
/// behind the panic boundary (see [`guard::fast_path`]). Bad pointers, or `f`'s `None` (it
/// changed nothing): not taken, and the caller's general path does the work or says what is
/// wrong.
///
/// # Safety
/// As [`pool_and_handle`], and `f`'s own contract.
#[inline]
pub(crate) unsafe fn fast<T>(
    func: &str,
    p: *mut zs_pool,
    h: *mut zs_handle,
    f: impl FnOnce(&Pool, &AtomicUsize) -> Option<T>,
) -> Fast<T> {
    // SAFETY: forwarded contract.
    match unsafe { pool_and_handle(p, h) } {
        Ok((pool, word)) => guard::fast_path(func, || f(pool, word)),
        Err(_) => Fast::NotTaken,
    }
}

/// A byte slice from a C buffer of `len` bytes; `len` must not exceed `max` (a page).
///
/// # Safety
/// `src` is NULL or readable for `len` bytes for `'a`.
pub(crate) unsafe fn src_slice<'a>(
    src: *const c_void,
    len: size_t,
    max: usize,
    too_long: impl FnOnce() -> Error,
) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]); // the core refuses the length with its own message
    }
    if len > max {
        return Err(too_long());
    }
    if src.is_null() {
        return Err(invalid("source buffer is NULL"));
    }
    // SAFETY: non-NULL, `len` bytes readable by the caller's promise, and `len` is at most a
    // page (so below isize::MAX).
    Ok(unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) })
}

/// `zs_store`: allocates an object of `len` bytes (1..=page), copies `src` into it and
/// publishes it in the empty handle `*h`. `gfp` is accepted and ignored.
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`handle_word`] and live until the object is freed or
/// moved; `src` readable for `len` bytes.
pub unsafe fn zs_store(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: size_t,
    _gfp: gfp_t,
) -> c_int {
    const FUNC: &str = "zs_store";
    if !src.is_null() && len > 0 && len <= MAX_PAGE_SIZE as usize {
        // SAFETY: non-NULL and readable for `len` bytes (forwarded contract), at most the largest
        // page; the core refuses a `len` above this pool's page before touching the bytes.
        let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) };
        // SAFETY: as below; a failed store changes nothing, so the general path may repeat it.
        let store = |pool: &Pool, word: &AtomicUsize| unsafe { pool.store_raw(word, data) }.ok();
        // SAFETY: forwarded contract.
        if let Some(r) = unsafe { fast(FUNC, p, h, store) }.settled(|()| 0, -PANIC_ERRNO) {
            return r;
        }
    }
    guard::call_int(FUNC, || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        let page = pool.config().page_size as usize;
        // SAFETY: forwarded contract on `src`.
        let data = unsafe { src_slice(src, len, page, || Error::TooLarge { len, max: page }) }?;
        // SAFETY: `word` is a live, aligned handle word that the caller keeps in place until the
        // object is freed or moved (the C contract, documented on `struct zs_handle`).
        unsafe { pool.store_raw(word, data) }?;
        Ok(0)
    })
}

/// `zs_malloc`: allocates an object of `size` bytes for the empty handle `*h`; fill it with
/// `zs_obj_write`.
///
/// # Safety
/// As [`zs_store`].
pub unsafe fn zs_malloc(p: *mut zs_pool, h: *mut zs_handle, size: size_t, _gfp: gfp_t) -> c_int {
    guard::call_int("zs_malloc", || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        // SAFETY: as in `zs_store`.
        unsafe { pool.malloc_raw(word, size) }?;
        Ok(0)
    })
}

/// `zs_obj_write`: writes the whole object of `*h`; `len` must equal its length.
///
/// # Safety
/// As [`zs_store`]; no read section of this object runs meanwhile.
pub unsafe fn zs_obj_write(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: size_t,
) -> c_int {
    guard::call_int("zs_obj_write", || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        let page = pool.config().page_size as usize;
        // SAFETY: forwarded contract on `src`.
        let data = unsafe {
            src_slice(src, len, page, || {
                invalid(format!("write length {len} is larger than a page ({page})"))
            })
        }?;
        // SAFETY: the caller promises no concurrent read of this object (C contract).
        unsafe { pool.write_raw(word, data) }?;
        Ok(0)
    })
}

/// `zs_free`: frees the object of `*h` and empties the handle; an empty handle is a no-op.
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`handle_word`].
pub unsafe fn zs_free(p: *mut zs_pool, h: *mut zs_handle) -> c_int {
    const FUNC: &str = "zs_free";
    // SAFETY: an aligned live word (forwarded contract); a failed free changes nothing, so the
    // general path may repeat it to report why.
    let free = |pool: &Pool, word: &AtomicUsize| unsafe { pool.free_raw(word) }.ok();
    // SAFETY: forwarded contract.
    if let Some(r) = unsafe { fast(FUNC, p, h, free) }.settled(|()| 0, -PANIC_ERRNO) {
        return r;
    }
    guard::call_int(FUNC, || {
        // SAFETY: forwarded contract.
        let (pool, word) = unsafe { pool_and_handle(p, h) }?;
        // SAFETY: an aligned live word; the core validates its contents before use.
        unsafe { pool.free_raw(word) }?;
        Ok(0)
    })
}

/// `zs_handle_move`: moves the object of `*from` to the empty handle `*to`; `*from` empties.
///
/// # Safety
/// As [`zs_free`] for both handles; `to` obeys the `zs_store` contract from now on.
pub unsafe fn zs_handle_move(p: *mut zs_pool, from: *mut zs_handle, to: *mut zs_handle) -> c_int {
    guard::call_int("zs_handle_move", || {
        // SAFETY: forwarded contract.
        let (pool, from) = unsafe { pool_and_handle(p, from) }?;
        // SAFETY: forwarded contract.
        let to = unsafe { handle_word(to) }?;
        // SAFETY: both words are aligned and live; the caller keeps `to` in place from now on.
        unsafe { pool.handle_move_raw(from, to) }?;
        Ok(0)
    })
}
