//! The loops shared by the bulk calls (`store_many`, `read_many`): chunking, spans of source
//! bytes, the undo of a failed store, and output checks.

use std::sync::atomic::AtomicUsize;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use zsmalloc_core::{AnyPool as CorePool, Backend, Error};

use crate::buffers::{list_of, new_bytes, Exported};
use crate::errors::{freed_error, to_py};

/// Bytes per chunk of a bulk read into new `bytes` objects: a chunk is allocated with the GIL,
/// then filled without it while its memory is still in cache.
const READ_CHUNK_BYTES: usize = 256 * 1024;

/// Bytes of sources per chunk of `store_many(items)`: taken with the GIL, stored without it.
pub const STORE_CHUNK_BYTES: usize = 256 * 1024;

/// How many items ahead `store_many(items)` prefetches.
pub const PREFETCH_AHEAD: usize = 8;

/// Reads `n` objects (lengths `len_of(i)`) into new bytes objects: chunk by chunk, allocation
/// with the GIL, copies with the GIL released (`copy(first, dsts)` fills objects
/// `first..first + dsts.len()`; a freed object is `Err(None)`).
pub fn read_into_new_bytes<'py>(
    py: Python<'py>,
    n: usize,
    len_of: impl Fn(usize) -> usize,
    copy: impl Fn(usize, &[usize]) -> Result<(), Option<Error>> + Sync,
) -> PyResult<Bound<'py, PyList>> {
    let mut out = Vec::with_capacity(n);
    let mut dsts: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < n {
        let start = i;
        let mut bytes = 0;
        dsts.clear();
        while i < n && (i == start || bytes < READ_CHUNK_BYTES) {
            let len = len_of(i);
            let (b, p) = new_bytes(py, len)?;
            out.push(b);
            dsts.push(p as usize);
            bytes += len;
            i += 1;
        }
        let dsts = &dsts;
        let copy = &copy;
        py.allow_threads(move || copy(start, dsts)).map_err(bulk_error)?;
    }
    list_of(py, out)
}

/// The exception of a bulk read: `None` is an object freed meanwhile.
pub fn bulk_error(e: Option<Error>) -> PyErr {
    e.map_or_else(freed_error, to_py)
}

/// Refuses an output buffer shorter than the `total` bytes to be read into it.
pub fn check_out(out: &Exported, total: usize) -> PyResult<()> {
    if out.len() < total {
        return Err(PyValueError::new_err(format!(
            "output buffer of {} bytes is smaller than the objects ({} bytes)",
            out.len(),
            total
        )));
    }
    Ok(())
}

/// A cache prefetch hint for `p` (no-op where unsupported; a hint never faults).
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint: it never faults, whatever the address (even NULL).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Stores `spans[i]` (address, length) into `words[i]`. Returns how many were stored; on error
/// also the error (the caller frees what was stored).
pub fn store_spans(
    pool: &CorePool,
    words: &[AtomicUsize],
    spans: &[(usize, usize)],
) -> Result<usize, (usize, Error)> {
    for (i, (w, &(ptr, len))) in words.iter().zip(spans).enumerate() {
        // SAFETY: each span is the bytes of a source the caller keeps alive (a referenced
        // `bytes` object, which is immutable, or a held buffer export) for this call.
        let data = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        // SAFETY: `words` belongs to a boxed slice that moves into a `Handles` (heap contents
        // never move), which frees every object before it is dropped.
        unsafe { pool.store_raw(w, data) }.map_err(|e| (i, e))?;
    }
    Ok(words.len())
}

/// Frees the objects of `words` (the undo of a failed bulk store).
pub fn free_words(pool: &CorePool, words: &[AtomicUsize]) {
    for w in words {
        // SAFETY: words just filled by `store_spans`, not yet shared with anyone.
        let _ = unsafe { pool.free_raw(w) };
    }
}
