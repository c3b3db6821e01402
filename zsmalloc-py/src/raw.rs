//! Handle words at addresses: the core's raw layer as the binding uses it.
//!
//! Every Python handle is a `struct zs_handle` (one atomic machine word at a stable heap
//! address) given to the core's raw layer, so C code can use it directly (`Handle.address`,
//! `Handles.address(i)`), and `Pool.read_raw` reads handles that live in C memory.

use std::sync::atomic::AtomicUsize;

use pyo3::prelude::*;
use zsmalloc_core::{AnyPool as CorePool, Backend, Error, Result};

use crate::errors::PyRes;

/// Copies the object of `word` (`len` bytes, checked against the stored length) to `dst` in one
/// read section (the core's `read_into_raw`: one lookup, one copy), so statistics count it as the
/// kernel would (`reads_spanning`, `read_copy_bytes`).
///
/// # Safety
/// `dst` is writable for `len` bytes; `word` is a handle word that stays at its address for the
/// call (or any 8-aligned readable word: garbage is refused by the core).
pub unsafe fn copy_object(
    pool: &CorePool,
    word: &AtomicUsize,
    len: usize,
    dst: *mut u8,
) -> Result<()> {
    // SAFETY: `dst` is writable for `len` bytes (the caller's promise).
    let out = unsafe { std::slice::from_raw_parts_mut(dst, len) };
    // SAFETY: `word` stays at its address for the call (the caller's promise).
    let stored = unsafe { pool.read_into_raw(word, out) }?;
    if stored != len {
        return Err(Error::InvalidArgument(format!(
            "read length {len} differs from the stored length {stored}"
        )));
    }
    Ok(())
}

/// The handle word at a caller-provided address, after the checks that can be made.
pub fn handle_word<'a>(address: usize) -> PyResult<&'a AtomicUsize> {
    if address == 0 {
        return Err(Error::InvalidArgument("handle address is NULL".into())).py();
    }
    let word = address as *const AtomicUsize;
    if !word.is_aligned() {
        return Err(Error::InvalidArgument(format!(
            "handle address {address:#x} is not 8-byte aligned"
        )))
        .py();
    }
    // SAFETY: non-null and aligned; that it points to a live `struct zs_handle` is the caller's
    // promise (documented on `read_raw`), as for the C ABI.
    Ok(unsafe { &*word })
}
