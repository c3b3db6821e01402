//! Objects: store, malloc + write, free, handle move.

use std::ffi::{c_int, c_void};

use zsmalloc_core::{Backend, Error, Result};

use crate::errors::invalid;
use crate::handle::{self, zs_handle};
use crate::pool::zs_pool;

/// Stores `len` bytes of `src` in a new object owned by the empty handle `*h`.
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`handle::word`] and live until the object is freed
/// or moved; `src` readable for `len` bytes.
#[inline(always)]
pub(crate) unsafe fn store(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    let too_long =
        || Error::TooLarge { len, max: Backend::config(pool).max_object_size() as usize };
    // SAFETY: forwarded contract on `src`.
    let data = unsafe { handle::bytes(src, len, too_long) }?;
    // SAFETY: `word` is a live, aligned handle word that the caller keeps in place until the
    // object is freed or moved (the C contract, documented on `struct zs_handle`).
    unsafe { Backend::store_raw(pool, word, data) }?;
    Ok(0)
}

/// Allocates an object of `size` bytes for the empty handle `*h`.
///
/// # Safety
/// As [`store`].
pub(crate) unsafe fn malloc(p: *mut zs_pool, h: *mut zs_handle, size: usize) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    // SAFETY: as in `store`.
    unsafe { Backend::malloc_raw(pool, word, size) }?;
    Ok(0)
}

/// Writes the whole object of `*h` (`len` must be its length).
///
/// # Safety
/// As [`store`]; no read section of this object runs meanwhile.
pub(crate) unsafe fn write(
    p: *mut zs_pool,
    h: *mut zs_handle,
    src: *const c_void,
    len: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    let max = Backend::config(pool).max_object_size() as usize;
    // SAFETY: forwarded contract on `src`.
    let data = unsafe { handle::bytes(src, len, || too_long_write(len, max)) }?;
    // SAFETY: the caller promises no concurrent read of this object (C contract).
    unsafe { Backend::write_raw(pool, word, data) }?;
    Ok(0)
}

#[cold]
pub(crate) fn too_long_write(len: usize, max: usize) -> Error {
    invalid(format!("write length {len} is larger than the pool's largest object ({max})"))
}

/// Frees the object of `*h` and empties the handle (an empty handle: no-op).
///
/// # Safety
/// `p` as for [`zs_pool::get`], `h` as for [`handle::word`].
#[inline(always)]
pub(crate) unsafe fn free(p: *mut zs_pool, h: *mut zs_handle) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, word) = unsafe { handle::pool_and_word(p, h) }?;
    // SAFETY: an aligned live word; the core validates its contents before use.
    unsafe { Backend::free_raw(pool, word) }?;
    Ok(0)
}

/// Moves the object of `*from` to the empty handle `*to`; `*from` empties.
///
/// # Safety
/// As [`free`] for both handles; `to` obeys the [`store`] contract from now on.
pub(crate) unsafe fn handle_move(
    p: *mut zs_pool,
    from: *mut zs_handle,
    to: *mut zs_handle,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let (pool, from) = unsafe { handle::pool_and_word(p, from) }?;
    // SAFETY: forwarded contract.
    let to = unsafe { handle::word(to) }?;
    // SAFETY: both words are aligned and live; the caller keeps `to` in place from now on.
    unsafe { Backend::handle_move_raw(pool, from, to) }?;
    Ok(0)
}
