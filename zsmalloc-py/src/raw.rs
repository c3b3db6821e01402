//! The raw layer: handle words at addresses, object copies, and pools by address.
//!
//! Every Python handle is a `struct zs_handle` (one atomic machine word at a stable heap
//! address) given to the core's raw layer, so C code can use it directly (`Handle.address`,
//! `Handles.address(i)`), and `Pool.read_raw` reads handles that live in C memory.

use std::cell::RefCell;
use std::sync::atomic::AtomicUsize;

use pyo3::prelude::*;
use zsmalloc_core::{Error, Pool as CorePool, Result, HANDLE_SIZE};

use crate::errors::PyRes;
use crate::pool::{Hold, Pool};
use zsmalloc::zs_pool;

thread_local! {
    /// Local copy buffer for reads of spanning objects (`local_copy` of `zs_obj_read_begin`).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Copies the object of `word` (`len` bytes, checked by the core) to `dst` through a copy read
/// section, so statistics count it as the kernel would (`reads_spanning`, `read_copy_bytes`).
///
/// `local` is where a spanning object (with its header) may be copied: `dst - 8` when those 8
/// bytes are free to clobber (the object then lands at `dst` with no second copy); `None` uses a
/// per-thread scratch buffer and copies again.
///
/// # Safety
/// `dst` is writable for `len` bytes and `local`, if given, for `len + 8` bytes; `word` is a
/// handle word that stays at its address for the call (or any 8-aligned readable word: garbage
/// is refused by the core).
pub unsafe fn copy_object(
    pool: &CorePool,
    word: &AtomicUsize,
    len: usize,
    dst: *mut u8,
    local: Option<*mut u8>,
) -> Result<()> {
    let run = |local: *mut u8| -> Result<()> {
        let p = pool.read_begin_raw(word, len, local)?;
        if !std::ptr::eq(p, dst) {
            // Non-overlapping: `p` is in a page or in the scratch buffer, `dst` is neither.
            std::ptr::copy_nonoverlapping(p, dst, len);
        }
        pool.read_end_raw(word, Some(len))
    };
    match local {
        Some(l) => run(l),
        None => SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < len + HANDLE_SIZE {
                s.resize(len + HANDLE_SIZE, 0);
            }
            run(s.as_mut_ptr())
        }),
    }
}

/// The handle word at a caller-provided address, after the checks that can be made.
pub fn handle_word<'a>(address: usize) -> PyResult<&'a AtomicUsize> {
    if address == 0 {
        return Err(Error::InvalidArgument("handle address is NULL".into())).py();
    }
    if address % std::mem::align_of::<AtomicUsize>() != 0 {
        return Err(Error::InvalidArgument(format!(
            "handle address {address:#x} is not 8-byte aligned"
        )))
        .py();
    }
    // SAFETY: non-null and aligned; that it points to a live `struct zs_handle` is the caller's
    // promise (documented on `read_raw`), as for the C ABI.
    Ok(unsafe { &*(address as *const AtomicUsize) })
}

/// The `struct zs_pool *` of a pool.
pub fn pool_address(pool: &Pool) -> usize {
    pool.hold.c_pool() as usize
}

/// A Python pool borrowing the C pool at `address`.
pub fn wrap_pool(address: usize) -> PyResult<Pool> {
    if address == 0 || address % std::mem::align_of::<zs_pool>() != 0 {
        return Err(Error::InvalidArgument(format!(
            "{address:#x} is not a struct zs_pool pointer"
        )))
        .py();
    }
    // SAFETY: non-NULL and aligned; that it is a live pool of this library is `Pool.wrap`'s
    // documented contract (as for any C caller of the ABI).
    let hold = unsafe { Hold::borrow(address as *mut zs_pool) }.py()?;
    Ok(Pool { hold })
}
