//! `Handles`: a packed array of stored objects, made by `pool.store_many`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use zsmalloc_core::{AnyPool as CorePool, Backend, Error};

use crate::buffers::{new_bytes, Exported};
use crate::bulk::{
    bulk_error, check_out, free_words, prefetch, read_into_new_bytes, store_spans, PREFETCH_AHEAD,
    STORE_CHUNK_BYTES,
};
use crate::errors::{to_py, PyRes};
use crate::gate::{exclusive, shared, Refused, GIL_RELEASE_BYTES};
use crate::handle::Handle;
use crate::pool::Pool;
use crate::raw::copy_object;

/// What a bulk store made: the handle words and the objects' lengths.
type Stored = (Box<[AtomicUsize]>, Box<[u32]>);

/// A packed array of stored objects (`pool.store_many`): one `struct zs_handle` word and one
/// length per object, not one Python object each. Dropping it frees every live object.
#[pyclass(frozen, weakref, module = "zsmalloc._zsmalloc")]
pub struct Handles {
    words: Box<[AtomicUsize]>,
    lens: Box<[u32]>,
    gate: RwLock<()>,
    pool: Py<Pool>,
}

impl Handles {
    pub fn pool_ref(&self) -> &Pool {
        self.pool.get()
    }

    fn core(&self) -> &CorePool {
        self.pool.get().core()
    }

    pub fn store_many(
        pool_obj: &Bound<'_, Pool>,
        items: &Bound<'_, PyAny>,
        lengths: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Handles> {
        let (words, lens) = match lengths {
            None => Self::store_items(pool_obj, items)?,
            Some(lengths) => Self::store_packed(pool_obj, items, lengths)?,
        };
        Ok(Handles { words, lens, gate: RwLock::new(()), pool: pool_obj.clone().unbind() })
    }

    /// Stores each bytes-like item of a list, tuple or other iterable, chunk by chunk: a chunk's
    /// sources are taken (and referenced) with the GIL, stored without it while their memory is
    /// still in cache, and let go. All or nothing.
    fn store_items(pool_obj: &Bound<'_, Pool>, items: &Bound<'_, PyAny>) -> PyResult<Stored> {
        let py = pool_obj.py();
        let pool = pool_obj.get().core();
        let seq = if items.is_instance_of::<PyList>() || items.is_instance_of::<PyTuple>() {
            items.clone()
        } else {
            // SAFETY: `items` is a live object; the result is a new reference or NULL with an
            // exception set, which `from_owned_ptr_or_err` turns into the error.
            unsafe { Bound::from_owned_ptr_or_err(py, ffi::PySequence_Tuple(items.as_ptr())) }?
        };
        let (list, tuple) = (seq.downcast::<PyList>().ok(), seq.downcast::<PyTuple>().ok());
        let n = seq.len()?;
        let words: Box<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let mut lens: Vec<u32> = Vec::with_capacity(n);
        let mut stored = 0;
        let mut run = || -> PyResult<()> {
            while stored < n {
                // The chunk's sources: referenced (so they outlive the GIL-free stores even if
                // the list changes meanwhile) and exported when they are not `bytes`.
                let mut refs: Vec<Bound<'_, PyAny>> = Vec::new();
                let mut exports: Vec<Exported> = Vec::new();
                let mut spans: Vec<(usize, usize)> = Vec::new();
                let (first, mut bytes) = (stored, 0);
                while first + spans.len() < n && (spans.is_empty() || bytes < STORE_CHUNK_BYTES) {
                    let i = first + spans.len();
                    // The items are scattered objects reached through pointers: ask for the
                    // header of one a few places ahead so its cache miss overlaps this one.
                    if i + PREFETCH_AHEAD < n {
                        let ahead = match (list, tuple) {
                            // SAFETY: in bounds (checked above, GIL held); borrowed pointers,
                            // only used as a prefetch hint, never dereferenced here.
                            (Some(l), _) => unsafe {
                                ffi::PyList_GetItem(l.as_ptr(), (i + PREFETCH_AHEAD) as isize)
                            },
                            // SAFETY: as above.
                            (_, Some(t)) => unsafe {
                                ffi::PyTuple_GetItem(t.as_ptr(), (i + PREFETCH_AHEAD) as isize)
                            },
                            _ => std::ptr::null_mut(),
                        };
                        prefetch(ahead as *const u8);
                    }
                    let item = match (list, tuple) {
                        (Some(l), _) => l.get_item(i)?,
                        (_, Some(t)) => t.get_item(i)?,
                        _ => unreachable!("a list or a tuple"),
                    };
                    let span = match item.downcast::<PyBytes>() {
                        Ok(b) => {
                            let s = b.as_bytes();
                            (s.as_ptr() as usize, s.len())
                        }
                        Err(_) => {
                            let e = Exported::get(&item, false)?;
                            let span = (e.as_slice().as_ptr() as usize, e.len());
                            exports.push(e);
                            span
                        }
                    };
                    lens.push(span.1.min(u32::MAX as usize) as u32);
                    bytes += span.1;
                    spans.push(span);
                    refs.push(item);
                }
                let chunk = &words[first..first + spans.len()];
                let done = py.allow_threads(|| store_spans(pool, chunk, &spans));
                stored += done.as_ref().map_or_else(|(k, _)| *k, |k| *k);
                done.map_err(|(_, e)| to_py(e))?;
                drop(exports);
                drop(refs);
            }
            Ok(())
        };
        if let Err(e) = run() {
            free_words(pool, &words[..stored]);
            return Err(e);
        }
        Ok((words, lens.into_boxed_slice()))
    }

    /// Stores consecutive pieces of one buffer. All or nothing.
    fn store_packed(
        pool_obj: &Bound<'_, Pool>,
        data: &Bound<'_, PyAny>,
        lengths: &Bound<'_, PyAny>,
    ) -> PyResult<Stored> {
        let py = pool_obj.py();
        let pool = pool_obj.get().core();
        let data = Exported::get(data, false)?;
        let lens: Vec<usize> = lengths.extract()?;
        let total: usize = lens.iter().sum();
        if total != data.len() {
            return Err(PyValueError::new_err(format!(
                "lengths add up to {total} bytes but the buffer holds {}",
                data.len()
            )));
        }
        let max = pool.config().max_object_size() as usize;
        if let Some(&l) = lens.iter().find(|&&l| l > max) {
            return Err(Error::TooLarge { len: l, max }).py();
        }
        let base = data.as_slice().as_ptr() as usize;
        let mut off = 0;
        let spans: Vec<(usize, usize)> = lens
            .iter()
            .map(|&l| {
                off += l;
                (base + off - l, l)
            })
            .collect();
        let words: Box<[AtomicUsize]> = spans.iter().map(|_| AtomicUsize::new(0)).collect();
        if let Err((stored, e)) = py.allow_threads(|| store_spans(pool, &words, &spans)) {
            free_words(pool, &words[..stored]);
            return Err(e).py();
        }
        drop(data);
        Ok((words, lens.iter().map(|&l| l as u32).collect()))
    }

    pub fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pool = self.core();
        read_into_new_bytes(
            py,
            self.lens.len(),
            |i| self.lens[i] as usize,
            |first, dsts| {
                let _g = self.gate.read().unwrap_or_else(PoisonError::into_inner);
                let words = self.words[first..].iter().zip(&self.lens[first..]);
                for ((word, &len), &dst) in words.zip(dsts) {
                    if word.load(Ordering::Acquire) == 0 {
                        return Err(None);
                    }
                    // SAFETY: `dst` is its own new, unshared bytes object of `len` bytes.
                    unsafe { copy_object(pool, word, len as usize, dst as *mut u8) }
                        .map_err(Some)?;
                }
                Ok(())
            },
        )
    }

    pub fn read_all_into(&self, py: Python<'_>, out: &Exported) -> PyResult<usize> {
        let total: usize = self.lens.iter().map(|&l| l as usize).sum();
        check_out(out, total)?;
        let base = out.as_mut_ptr() as usize;
        let pool = self.core();
        py.allow_threads(|| {
            let _g = self.gate.read().unwrap_or_else(PoisonError::into_inner);
            // In store order (hardware prefetch follows the pages); each object copied once.
            let mut off = 0;
            for (word, &len) in self.words.iter().zip(self.lens.iter()) {
                let len = len as usize;
                if word.load(Ordering::Acquire) == 0 {
                    return Err(None);
                }
                let dst = (base + off) as *mut u8;
                // SAFETY: `dst .. dst + len` lies in the export (total checked above).
                unsafe { copy_object(pool, word, len, dst) }.map_err(Some)?;
                off += len;
            }
            Ok(())
        })
        .map_err(bulk_error)?;
        Ok(total)
    }

    /// Frees every live object; returns how many were freed. Keeps going past a refusal and
    /// raises the first one at the end.
    pub fn free_all(&self, py: Python<'_>) -> PyResult<usize> {
        let pool = self.core();
        exclusive(py, &self.gate, true, || {
            let mut freed = 0;
            let mut first_err = None;
            for w in self.words.iter() {
                if w.load(Ordering::Acquire) == 0 {
                    continue;
                }
                // SAFETY: words of this array.
                match unsafe { pool.free_raw(w) } {
                    Ok(()) => freed += 1,
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            match first_err {
                Some(e) => Err(e),
                None => Ok(freed),
            }
        })
        .py()
    }

    fn index(&self, i: isize) -> PyResult<usize> {
        let n = self.words.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if (0..n).contains(&j) {
            Ok(j as usize)
        } else {
            Err(PyIndexError::new_err("Handles index out of range"))
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        let pool = self.pool.get().core();
        for w in self.words.iter() {
            if w.load(Ordering::Relaxed) != 0 {
                // SAFETY: words of this array; no other user remains.
                let _ = unsafe { pool.free_raw(w) };
            }
        }
    }
}

#[pymethods]
impl Handles {
    fn __len__(&self) -> usize {
        self.words.len()
    }

    /// Each object's length (also of freed ones).
    #[getter]
    fn lengths(&self) -> Vec<u32> {
        self.lens.to_vec()
    }

    /// Total bytes of all objects (the size `read_many(handles, out=...)` needs).
    #[getter]
    fn nbytes(&self) -> usize {
        self.lens.iter().map(|&l| l as usize).sum()
    }

    /// Live (not freed, not taken) objects.
    #[getter]
    fn live(&self) -> usize {
        self.words.iter().filter(|w| w.load(Ordering::Acquire) != 0).count()
    }

    /// Whether object `i` is still held here.
    fn alive(&self, i: isize) -> PyResult<bool> {
        Ok(self.words[self.index(i)?].load(Ordering::Acquire) != 0)
    }

    /// The `struct zs_handle *` of object `i` (the words are contiguous, 8 bytes apart).
    fn address(&self, i: isize) -> PyResult<usize> {
        Ok(&self.words[self.index(i)?] as *const AtomicUsize as usize)
    }

    /// Reads object `i`.
    fn read(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyBytes>> {
        let i = self.index(i)?;
        let len = self.lens[i] as usize;
        let (bytes, dst) = new_bytes(py, len)?;
        let dst = dst as usize;
        let (pool, word) = (self.core(), &self.words[i]);
        shared(py, &self.gate, len >= GIL_RELEASE_BYTES, move || {
            if word.load(Ordering::Acquire) == 0 {
                return Err(Refused::Freed);
            }
            // SAFETY: `dst` is the new, unshared bytes object's `len` bytes.
            unsafe { copy_object(pool, word, len, dst as *mut u8) }.map_err(Refused::Core)
        })?;
        Ok(bytes)
    }

    /// Moves object `i` out into its own `Handle` (`zs_handle_move`); slot `i` becomes empty.
    fn take(&self, py: Python<'_>, i: isize) -> PyResult<Handle> {
        let i = self.index(i)?;
        let to = Box::new(AtomicUsize::new(0));
        let (pool, from) = (self.core(), &self.words[i]);
        exclusive(py, &self.gate, false, || {
            if from.load(Ordering::Acquire) == 0 {
                return Err(Refused::Freed);
            }
            // SAFETY: `to` is a fresh heap word that moves into the new Handle (stable address).
            unsafe { pool.handle_move_raw(from, &to) }.map_err(Refused::Core)
        })?;
        Ok(Handle::new(self.pool.clone_ref(py), to, self.lens[i] as usize))
    }

    /// Frees every live object (as `pool.free(handles)`); returns how many were freed.
    fn free(&self, py: Python<'_>) -> PyResult<usize> {
        self.free_all(py)
    }

    #[getter]
    fn pool(&self, py: Python<'_>) -> Py<Pool> {
        self.pool.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!("<zsmalloc.Handles {} objects, {} live>", self.words.len(), self.live())
    }
}
