//! `Handle` (one object), `Handles` (a packed array of objects) and `View` (a read section).
//!
//! Each handle is a `struct zs_handle` word at a stable heap address, owned by the Python object
//! and given to the core's raw layer. A per-handle gate orders whole-object writes against reads
//! of the same object on other threads (the core pins objects but does not order their bytes);
//! frees need the gate exclusively and are refused (`EBUSY`) while a `View` is open.
//!
//! Lock rule (no deadlock with the GIL): a gate is only ever waited for with the GIL released;
//! with the GIL held it is only tried.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use zsmalloc_core::{Error, Pool as CorePool, HANDLE_SIZE};

use crate::buffers::{list_of, new_bytes, Exported};
use crate::errors::{buffer_error, zs_error, PyRes};
use crate::pool::{Pool, GIL_RELEASE_BYTES};
use crate::raw::copy_object;

/// Runs `f` holding `gate` shared. Waits only with the GIL released.
fn shared<R: Send>(
    py: Python<'_>,
    gate: &RwLock<()>,
    release_gil: bool,
    f: impl FnOnce() -> R + Send,
) -> R {
    if !release_gil {
        if let Ok(_g) = gate.try_read() {
            return f();
        }
    }
    py.allow_threads(|| {
        let _g = gate.read().unwrap_or_else(PoisonError::into_inner);
        f()
    })
}

/// Runs `f` holding `gate` exclusively. Waits only with the GIL released.
fn exclusive<R: Send>(
    py: Python<'_>,
    gate: &RwLock<()>,
    release_gil: bool,
    f: impl FnOnce() -> R + Send,
) -> R {
    if !release_gil {
        if let Ok(_g) = gate.try_write() {
            return f();
        }
    }
    py.allow_threads(|| {
        let _g = gate.write().unwrap_or_else(PoisonError::into_inner);
        f()
    })
}

fn freed_error() -> PyErr {
    zs_error(Error::InvalidHandle("").errno(), "invalid handle: its object was freed")
}

/// Why a gated operation was refused. Built with the GIL released (while the gate is held) and
/// turned into an exception once the gate is let go.
enum Refused {
    Freed,
    ViewOpen,
    Core(Error),
}

impl From<Refused> for PyErr {
    fn from(r: Refused) -> PyErr {
        match r {
            Refused::Freed => freed_error(),
            Refused::ViewOpen => busy_error(),
            Refused::Core(e) => crate::errors::to_py(e),
        }
    }
}

fn busy_error() -> PyErr {
    zs_error(
        Error::Busy.errno(),
        "object is being read: a view of it is open (leave its `with` block first)",
    )
}

/// A stored object. Dropping the last reference to a live handle frees the object.
///
/// `len(h)` is the object's length; `h.address` is its `struct zs_handle *` for C code.
#[pyclass(frozen, weakref, module = "zsmalloc._zsmalloc")]
pub struct Handle {
    word: Box<AtomicUsize>,
    len: usize,
    gate: RwLock<()>,
    /// Open `View`s of this object.
    views: AtomicUsize,
    pool: Py<Pool>,
}

impl Handle {
    pub(crate) fn new(pool: Py<Pool>, word: Box<AtomicUsize>, len: usize) -> Self {
        Handle { word, len, gate: RwLock::new(()), views: AtomicUsize::new(0), pool }
    }

    pub(crate) fn pool_ref(&self) -> &Pool {
        self.pool.get()
    }

    fn core(&self) -> &CorePool {
        self.pool.get().core()
    }

    fn live(&self) -> bool {
        self.word.load(Ordering::Acquire) != 0
    }

    pub(crate) fn read(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
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

    pub(crate) fn read_into(&self, py: Python<'_>, out: &Exported) -> PyResult<usize> {
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

    pub(crate) fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
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

    pub(crate) fn free_now(&self, py: Python<'_>) -> PyResult<()> {
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

/// Bytes per chunk of a bulk read into new `bytes` objects: a chunk is allocated with the GIL,
/// then filled without it while its memory is still in cache.
const READ_CHUNK_BYTES: usize = 256 * 1024;

/// Reads `n` objects (lengths `len_of(i)`) into new bytes objects: chunk by chunk, allocation
/// with the GIL, copies with the GIL released (`copy(first, dsts)` fills objects
/// `first..first + dsts.len()`; an empty handle is `Err(None)`).
fn read_into_new_bytes<'py>(
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
        py.allow_threads(move || copy(start, dsts))
            .map_err(|e: Option<Error>| e.map_or_else(freed_error, crate::errors::to_py))?;
    }
    list_of(py, out)
}

/// Reads `handles` (all of `pool`) into new bytes objects, with the GIL released for the copies.
pub(crate) fn read_handles<'py>(
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
pub(crate) fn read_handles_into(
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

fn check_out(out: &Exported, total: usize) -> PyResult<()> {
    if out.len() < total {
        return Err(PyValueError::new_err(format!(
            "output buffer of {} bytes is smaller than the objects ({} bytes)",
            out.len(),
            total
        )));
    }
    Ok(())
}

/// How many items ahead `store_many(items)` prefetches.
const PREFETCH_AHEAD: usize = 8;

/// A cache prefetch hint for `p` (no-op where unsupported; a hint never faults).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint: it never faults, whatever the address (even NULL).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// What a bulk store made: the handle words and the objects' lengths.
type Stored = (Box<[AtomicUsize]>, Box<[u32]>);

/// Bytes of sources per chunk of `store_many(items)` (see `Handles::store_items`).
const STORE_CHUNK_BYTES: usize = 256 * 1024;

/// Stores `spans[i]` (address, length) into `words[i]`. Returns how many were stored; on error
/// also the error (the caller frees what was stored).
fn store_spans(
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
fn free_words(pool: &CorePool, words: &[AtomicUsize]) {
    for w in words {
        // SAFETY: words just filled by `store_spans`.
        let _ = unsafe { pool.free_raw(w) };
    }
}

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
    pub(crate) fn pool_ref(&self) -> &Pool {
        self.pool.get()
    }

    fn core(&self) -> &CorePool {
        self.pool.get().core()
    }

    pub(crate) fn store_many(
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
                done.map_err(|(_, e)| crate::errors::to_py(e))?;
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
        let page = pool.config().page_size as usize;
        if let Some(&l) = lens.iter().find(|&&l| l > page) {
            return Err(Error::TooLarge { len: l, max: page }).py();
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

    pub(crate) fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
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

    pub(crate) fn read_all_into(&self, py: Python<'_>, out: &Exported) -> PyResult<usize> {
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
        .map_err(|e| e.map_or_else(freed_error, crate::errors::to_py))?;
        Ok(total)
    }

    /// Frees every live object; returns how many were freed. Keeps going past a refusal and
    /// raises the first one at the end.
    pub(crate) fn free_all(&self, py: Python<'_>) -> PyResult<usize> {
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

struct ViewState {
    open: bool,
    exports: usize,
    /// Exit was asked while exported: end the section when the last export goes.
    closing: bool,
    memoryview: Option<PyObject>,
}

/// An open read section of one object, exporting its bytes read-only (zero-copy unless the
/// object spans two pages). Use as a context manager; see `Pool.view`.
#[pyclass(frozen, module = "zsmalloc._zsmalloc")]
pub struct View {
    handle: Py<Handle>,
    /// Object bytes: in a page, or in `local` after the header when spanning.
    ptr: usize,
    len: usize,
    copied: bool,
    state: Mutex<ViewState>,
    /// `local_copy` of the read section (kept until the section ends).
    _local: Box<[u8]>,
}

impl View {
    pub(crate) fn begin(handle: &Bound<'_, Handle>) -> PyResult<View> {
        let py = handle.py();
        let h = handle.get();
        if !h.live() {
            return Err(freed_error());
        }
        let mut local = vec![0u8; h.len + HANDLE_SIZE].into_boxed_slice();
        let local_ptr = local.as_mut_ptr() as usize;
        let (pool, word, views, len) = (h.core(), &*h.word, &h.views, h.len);
        let ptr = shared(py, &h.gate, false, move || {
            views.fetch_add(1, Ordering::AcqRel);
            // SAFETY: `local` is len + 8 bytes and lives in the View as long as the section.
            let r = unsafe { pool.read_begin_raw(word, len, local_ptr as *mut u8) };
            if r.is_err() {
                views.fetch_sub(1, Ordering::AcqRel);
            }
            r.map(|p| p as usize)
        })
        .py()?;
        Ok(View {
            handle: handle.clone().unbind(),
            ptr,
            len: h.len,
            copied: ptr == local_ptr + HANDLE_SIZE,
            state: Mutex::new(ViewState {
                open: true,
                exports: 0,
                closing: false,
                memoryview: None,
            }),
            _local: local,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ViewState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the read section (state locked by the caller).
    fn end(&self, st: &mut ViewState) {
        if st.open {
            st.open = false;
            let h = self.handle.get();
            // SAFETY: the section begun in `open` on this handle's word.
            let _ = unsafe { h.core().read_end_raw(&h.word, Some(self.len)) };
            h.views.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mv = self.lock().memoryview.take();
        let mut err = None;
        if let Some(mv) = mv {
            if let Err(e) = mv.call_method0(py, "release") {
                err = Some(e);
            }
            drop(mv);
        }
        let mut st = self.lock();
        if st.exports > 0 {
            st.closing = true;
            drop(st);
            return Err(err.unwrap_or_else(|| {
                buffer_error(
                    "the view's buffer is still exported (a memoryview, slice or array of it is \
                     alive); the read section ends when the last export is released",
                )
            }));
        }
        self.end(&mut st);
        Ok(())
    }
}

impl Drop for View {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if st.open {
            st.open = false;
            let h = self.handle.get();
            // SAFETY: the section begun in `open`; no export remains (each holds the View).
            let _ = unsafe { h.core().read_end_raw(&h.word, Some(self.len)) };
            h.views.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[pymethods]
impl View {
    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        let mv = PyMemoryView::from_bound(slf.as_any())?.into_any().unbind();
        let old = slf.get().lock().memoryview.replace(mv.clone_ref(slf.py()));
        drop(old);
        Ok(mv)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// Ends the read section now (as leaving the `with` block).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.close(py)
    }

    /// A copy of the bytes.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let st = self.lock();
        if !st.open || st.closing {
            return Err(buffer_error("the view is closed"));
        }
        // SAFETY: the section is open (state locked), so `ptr` covers `len` pinned bytes.
        let b = unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) };
        Ok(PyBytes::new_bound(py, b))
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// True if the object spans two pages and was copied into a local buffer (the kernel's
    /// `local_copy` path); false when the view is zero-copy.
    #[getter]
    fn copied(&self) -> bool {
        self.copied
    }

    /// True until the read section ends.
    #[getter]
    #[pyo3(name = "open")]
    fn is_open(&self) -> bool {
        let st = self.lock();
        st.open && !st.closing
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE != 0 {
            return Err(buffer_error("a zsmalloc view is read-only"));
        }
        let this = slf.get();
        let mut st = this.lock();
        if !st.open || st.closing {
            return Err(buffer_error("the view is closed"));
        }
        // SAFETY: `view` is the caller's Py_buffer; the bytes stay valid and unwritten while the
        // export lasts (the section ends only once `exports` is back to 0). FillInfo takes a
        // new reference to the View.
        let rc = ffi::PyBuffer_FillInfo(
            view,
            slf.as_ptr(),
            this.ptr as *mut std::os::raw::c_void,
            this.len as ffi::Py_ssize_t,
            1,
            flags,
        );
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        st.exports += 1;
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {
        let mut st = self.lock();
        st.exports = st.exports.saturating_sub(1);
        if st.exports == 0 && st.closing {
            self.end(&mut st);
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.handle)?;
        if let Ok(st) = self.state.try_lock() {
            if let Some(mv) = &st.memoryview {
                visit.call(mv)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let mv = self.state.try_lock().ok().and_then(|mut st| st.memoryview.take());
        drop(mv);
    }

    fn __repr__(&self) -> String {
        format!(
            "<zsmalloc.View {} bytes{}{}>",
            self.len,
            if self.copied { " copied" } else { " in place" },
            if self.is_open() { "" } else { " closed" }
        )
    }
}
