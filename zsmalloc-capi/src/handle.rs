//! `struct zs_handle` and the checks of the pointers and lengths C passes in. Each is checked
//! once, here; the core checks what only it can (the handle word's contents, a length against
//! the pool's page and the stored object).

use std::ffi::c_void;
use std::sync::atomic::AtomicUsize;

use zsmalloc_core::config::MAX_PAGE_SIZE;
use zsmalloc_core::{AnyPool, Error, Result};

use crate::errors::invalid;
use crate::pool::{self, zs_pool};

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
#[inline(always)]
pub(crate) unsafe fn word<'a>(h: *mut zs_handle) -> Result<&'a AtomicUsize> {
    if h.is_null() {
        return Err(invalid("handle is NULL"));
    }
    if (h as usize) & (std::mem::align_of::<AtomicUsize>() - 1) != 0 {
        return Err(misaligned(h));
    }
    // SAFETY: non-NULL, aligned, and live by the caller's promise; `struct zs_handle` is one
    // `uintptr_t`, which has the size and alignment of `AtomicUsize`; the library only accesses
    // it atomically (the C contract forbids concurrent plain writes while it holds an object).
    Ok(unsafe { &*(h as *const AtomicUsize) })
}

#[cold]
#[inline(never)]
fn misaligned(h: *mut zs_handle) -> Error {
    invalid(format!("handle {h:p} is not 8-byte aligned"))
}

/// The allocator and handle word behind C pointers.
///
/// # Safety
/// As [`zs_pool::get`] and [`word`].
#[inline(always)]
pub(crate) unsafe fn pool_and_word<'a>(
    p: *mut zs_pool,
    h: *mut zs_handle,
) -> Result<(&'a AnyPool, &'a AtomicUsize)> {
    // SAFETY: forwarded contract.
    let pool = unsafe { pool::core(p) }?;
    // SAFETY: forwarded contract.
    let word = unsafe { word(h) }?;
    Ok((pool, word))
}

/// The caller's buffer of `len` bytes as a slice. `len` 0 gives an empty slice (the core
/// refuses it with its own message); a `len` above the largest page is `too_long()`, and the core
/// refuses any other `len` above this pool's page before touching a byte.
///
/// # Safety
/// `src` is NULL or readable for `len` bytes for `'a`.
#[inline(always)]
pub(crate) unsafe fn bytes<'a>(
    src: *const c_void,
    len: usize,
    too_long: impl FnOnce() -> Error,
) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if len > MAX_PAGE_SIZE as usize {
        return Err(too_long());
    }
    if src.is_null() {
        return Err(invalid("source buffer is NULL"));
    }
    // SAFETY: non-NULL, readable for `len` bytes by the caller's promise, and `len` is at most
    // the largest page (so below isize::MAX).
    Ok(unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) })
}
