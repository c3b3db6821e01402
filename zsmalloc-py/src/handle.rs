//! `Handle`: one stored object, and the bulk reads of a list of them.
//!
//! Each handle is a `struct zs_handle` word at a stable heap address, owned by the Python object
//! and given to the core's raw layer. Its gate ([`gate`](crate::gate)) orders whole-object writes
//! against reads on other threads; frees need it exclusively and are refused (`EBUSY`) while a
//! `View` is open.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use zsmalloc_core::{AnyPool as CorePool, Backend};

use crate::buffers::{new_bytes, Exported};
use crate::bulk::{check_out, read_into_new_bytes};
use crate::errors::{freed_error, PyRes};
use crate::gate::{exclusive, shared, Refused, GIL_RELEASE_BYTES};
use crate::pool::Pool;
use crate::raw::copy_object;

/// A stored object. Dropping the last reference to a live handle frees the object.
///
/// `len(h)` is the object's length; `h.address` is its `struct zs_handle *` for C code.
#[pyclass(frozen, weakref, module = "zsmalloc._zsmalloc")]
pub struct Handle {
    pub(crate) word: Box<AtomicUsize>,
    pub(crate) len: usize,
    pub(crate) gate: RwLock<()>,
    /// Open `View`s of this object.
    pub(crate) views: AtomicUsize,
    pool: Py<Pool>,
}

impl Handle {
    /// The handle owning the object `word` holds (`len` bytes) in `pool`.
    pub fn new(pool: Py<Pool>, word: Box<AtomicUsize>, len: usize) -> Self {
        Handle { word, len, gate: RwLock::new(()), views: AtomicUsize::new(0), pool }
    }

    pub fn pool_ref(&self) -> &Pool {
        self.pool.get()
    }

    pub fn core(&self) -> &CorePool {
        self.pool.get().core()
    }

    pub fn live(&self) -> bool {
        self.word.load(Ordering::Acquire) != 0
    }

    pub fn read(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        if !self.live() {
            return Err(freed_error());
        }
        let (bytes, dst) = new_bytes(py, self.len)?;
        let dst = dst as usize;
        let (pool, word, len) = (self.core(), &*self.word, self.len);
        shared(py, &self.gate, len >= GIL_RELEASE_BYTES, move || {
            // SAFETY: `dst` is the new, unshared bytes object's `len` bytes; `word` is this
            // handle's word, alive as long as `self`.
            unsafe { copy_object(pool, word, len, dst as *mut u8) }
        })
        .py()?;
        Ok(bytes)
    }

    pub fn read_into(&self, py: Python<'_>, out: &Exported) -> PyResult<usize> {
        if !self.live() {
            return Err(freed_error());
        }
        if out.len() < self.len {
            return Err(PyValueError::new_err(format!(
                "buffer of {} bytes is smaller than the object ({} bytes)",
                out.len(),
                self.len
            )));
        }
        let dst = out.as_mut_ptr() as usize;
        let (pool, word, len) = (self.core(), &*self.word, self.len);
        shared(py, &self.gate, len >= GIL_RELEASE_BYTES, move || {
            // SAFETY: `dst` is a writable export of at least `len` bytes, held by the caller.
            unsafe { copy_object(pool, word, len, dst as *mut u8) }
        })
        .py()?;
        Ok(self.len)
    }

    pub fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        if !self.live() {
            return Err(freed_error());
        }
        if data.len() != self.len {
            return Err(PyValueError::new_err(format!(
                "write of {} bytes to an object of {} bytes (lengths must match)",
                data.len(),
                self.len
            )));
        }
        let (pool, word, views) = (self.core(), &*self.word, &self.views);
        exclusive(py, &self.gate, data.len() >= GIL_RELEASE_BYTES, move || {
            if views.load(Ordering::Acquire) != 0 {
                return Err(Refused::ViewOpen);
            }
            // SAFETY: the exclusive gate excludes every other read of this object through this
            // handle, and no view is open; C readers of `h.address` must not overlap (C ABI).
            unsafe { pool.write_raw(word, data) }.map_err(Refused::Core)
        })
        .map_err(PyErr::from)
    }

    pub fn free_now(&self, py: Python<'_>) -> PyResult<()> {
        let (pool, word, views) = (self.core(), &*self.word, &self.views);
        exclusive(py, &self.gate, false, move || {
            if word.load(Ordering::Acquire) == 0 {
                return Err(Refused::Freed);
            }
            if views.load(Ordering::Acquire) != 0 {
                return Err(Refused::ViewOpen);
            }
            // SAFETY: this handle's own word.
            unsafe { pool.free_raw(word) }.map_err(Refused::Core)
        })
        .map_err(PyErr::from)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if *self.word.get_mut() != 0 {
            // SAFETY: this handle's own word; nobody else can use it any more (views hold a
            // reference to the handle). An error leaves the object allocated, never dangling.
            let _ = unsafe { self.pool.get().core().free_raw(&self.word) };
        }
    }
}

#[pymethods]
impl Handle {
    fn __len__(&self) -> usize {
        self.len
    }

    /// The object's length in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.len
    }

    /// False once the object was freed.
    #[getter]
    fn alive(&self) -> bool {
        self.live()
    }

    /// The `struct zs_handle *` of this object (for the C ABI and `Pool.read_raw`).
    #[getter]
    fn address(&self) -> usize {
        &*self.word as *const AtomicUsize as usize
    }

    /// The current handle word (changes when compaction moves the object; 0 once freed).
    #[getter]
    fn word(&self) -> usize {
        self.word.load(Ordering::Acquire)
    }

    /// The pool holding the object.
    #[getter]
    fn pool(&self, py: Python<'_>) -> Py<Pool> {
        self.pool.clone_ref(py)
    }

    /// Frees the object now (as `pool.free(h)`).
    fn free(&self, py: Python<'_>) -> PyResult<()> {
        self.free_now(py)
    }

    fn __repr__(&self) -> String {
        if self.live() {
            format!("<zsmalloc.Handle {} bytes word={:#x}>", self.len, self.word())
        } else {
            format!("<zsmalloc.Handle {} bytes freed>", self.len)
        }
    }
}

/// Reads `handles` (all of `pool`) into new bytes objects, with the GIL released for the copies.
pub fn read_handles<'py>(
    py: Python<'py>,
    pool: &CorePool,
    handles: &[&Handle],
) -> PyResult<Bound<'py, PyList>> {
    read_into_new_bytes(
        py,
        handles.len(),
        |i| handles[i].len,
        |first, dsts| {
            for (h, &dst) in handles[first..].iter().zip(dsts) {
                let _g = h.gate.read().unwrap_or_else(PoisonError::into_inner);
                if !h.live() {
                    return Err(None);
                }
                // SAFETY: `dst` is its own new, unshared bytes object of `h.len` bytes; `h.word`
                // lives as long as `h`, which the caller holds.
                unsafe { copy_object(pool, &h.word, h.len, dst as *mut u8) }.map_err(Some)?;
            }
            Ok(())
        },
    )
}

/// Reads `handles` back to back into `out`; returns the bytes written.
pub fn read_handles_into(
    py: Python<'_>,
    pool: &CorePool,
    handles: &[&Handle],
    out: &Exported,
) -> PyResult<usize> {
    let total: usize = handles.iter().map(|h| h.len).sum();
    check_out(out, total)?;
    let base = out.as_mut_ptr() as usize;
    py.allow_threads(|| {
        let mut off = 0;
        for h in handles {
            let _g = h.gate.read().unwrap_or_else(PoisonError::into_inner);
            // SAFETY: `base + off .. + len` lies within the export (total checked above).
            unsafe { copy_object(pool, &h.word, h.len, (base + off) as *mut u8) }?;
            off += h.len;
        }
        Ok(())
    })
    .py()?;
    Ok(total)
}
