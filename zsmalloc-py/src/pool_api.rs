//! The Python methods of `zsmalloc.Pool`: configuration, stores, reads, statistics, compaction
//! and the bridges to C. Top of the crate: it hands out `Handle`, `Handles` and `View` objects.

use std::sync::atomic::AtomicUsize;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};
use zsmalloc_core::{Backend, PoolConfig};

use crate::buffers::{new_bytes, BytesArg, Exported};
use crate::config;
use crate::errors::PyRes;
use crate::gate::GIL_RELEASE_BYTES;
use crate::handle::{read_handles, read_handles_into, Handle};
use crate::handles::Handles;
use crate::int_keywords;
use crate::pool::Pool;
use crate::raw::{copy_object, handle_word};
use crate::view::View;

#[pymethods]
impl Pool {
    #[new]
    #[pyo3(signature = (name = "pool", *, page_size = 4096, chain_size = 8, class_delta = 0,
        chain_policy = None, read_mode = "copy", mem_limit_pages = 0, backing = "anonymous",
        backend = "zsmalloc", class_table = None, multi_page_size = 0, payload = true),
        text_signature = "(name='pool', *, page_size=4096, chain_size=8, class_delta=0, \
            chain_policy='classic', read_mode='copy', mem_limit_pages=0, backing='anonymous', \
            backend='zsmalloc', class_table=None, multi_page_size=0, payload=True)")]
    // One argument per keyword of the Python signature.
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        #[pyo3(from_py_with = "int_keywords::page_size")] page_size: u32,
        #[pyo3(from_py_with = "int_keywords::chain_size")] chain_size: u32,
        #[pyo3(from_py_with = "int_keywords::class_delta")] class_delta: u32,
        chain_policy: Option<&Bound<'_, PyAny>>,
        read_mode: &str,
        #[pyo3(from_py_with = "int_keywords::mem_limit_pages")] mem_limit_pages: u64,
        backing: &str,
        backend: &str,
        class_table: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = "int_keywords::multi_page_size")] multi_page_size: u32,
        payload: bool,
    ) -> PyResult<Self> {
        let (mut cfg, failed) = config::build(
            page_size,
            chain_size,
            class_delta,
            chain_policy,
            read_mode,
            mem_limit_pages,
            backing,
            class_table,
            multi_page_size,
        )?;
        cfg.backend = zsmalloc_core::BackendKind::parse(backend).py()?;
        cfg.payload = payload;
        let pool = Pool::create(name, cfg);
        config::take_policy_error(&failed)?;
        pool
    }

    /// A pool configured by the `ZSMALLOC_*` environment variables (a bad value raises
    /// `ValueError` naming the variable).
    #[classmethod]
    #[pyo3(signature = (name = "pool"))]
    fn from_env(_cls: &Bound<'_, PyType>, name: &str) -> PyResult<Self> {
        Pool::create(name, PoolConfig::from_env().py()?)
    }

    /// Borrows a pool made by C (`struct zs_pool *` as an int). Python never destroys it; the C
    /// side must keep it alive while this object or any handle of it is in use.
    #[classmethod]
    fn wrap(_cls: &Bound<'_, PyType>, address: usize) -> PyResult<Self> {
        Pool::borrow_c_pool(address)
    }

    /// The `struct zs_pool *` the C ABI uses for this pool, as an int.
    #[getter]
    fn address(&self) -> usize {
        self.c_pool() as usize
    }

    /// True if this object borrows a pool made by C (`Pool.wrap`).
    #[getter]
    #[pyo3(name = "borrowed")]
    fn is_borrowed(&self) -> bool {
        self.borrowed()
    }

    #[getter]
    fn name(&self) -> String {
        self.core().name().to_owned()
    }

    /// The settings as a dict (`class_delta` as effective: `page_size >> 8` when 0 was given).
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config::config_dict(py, self.core().config())
    }

    #[getter]
    fn page_size(&self) -> u32 {
        self.core().config().page_size
    }

    /// Pages held by zspages (`zs_get_total_pages`).
    #[getter]
    fn total_pages(&self) -> u64 {
        self.core().total_pages()
    }

    /// Objects of this length or more go to huge classes (`zs_huge_class_size`).
    #[getter]
    fn huge_class_size(&self) -> usize {
        self.core().huge_class_size()
    }

    /// The longest object the pool stores: `multi_page_size` if set, else `page_size`.
    #[getter]
    fn max_object_size(&self) -> u32 {
        self.core().config().max_object_size()
    }

    /// `huge_class_size` of one band of classes (`zs_huge_class_size_band`): 0 the base band
    /// (as `huge_class_size`), 1 the multi-page band; 0 for a band the pool does not have.
    fn huge_class_size_band(&self, band: u32) -> usize {
        match self.core().as_zsmalloc() {
            Some(p) => p.huge_class_size_of_band(band).unwrap_or(0),
            None if band == 0 => self.core().huge_class_size(),
            None => 0,
        }
    }

    /// Index of the class serving `size` bytes as given (`zs_lookup_class_index`).
    fn lookup_class_index(&self, size: usize) -> u32 {
        self.core().lookup_class_index(size)
    }

    /// Stores a copy of `data` (any bytes-like object, 1..=max_object_size bytes).
    fn store(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<Handle> {
        let py = slf.py();
        let bytes = BytesArg::get(data)?;
        let data = bytes.as_slice();
        let word = Box::new(AtomicUsize::new(0));
        let pool = slf.get().core();
        let store = || {
            // SAFETY: `word` is heap-allocated and moves into the Handle, which frees the object
            // before the box is dropped; the address is stable meanwhile.
            unsafe { pool.store_raw(&word, data) }
        };
        if data.len() >= GIL_RELEASE_BYTES { py.allow_threads(store) } else { store() }.py()?;
        Ok(Handle::new(slf.clone().unbind(), word, data.len()))
    }

    /// Allocates an object of `size` bytes, to be filled by `write`.
    fn malloc(slf: &Bound<'_, Self>, size: usize) -> PyResult<Handle> {
        let word = Box::new(AtomicUsize::new(0));
        // SAFETY: as in `store`.
        unsafe { slf.get().core().malloc_raw(&word, size) }.py()?;
        Ok(Handle::new(slf.clone().unbind(), word, size))
    }

    /// Overwrites the whole object (`len(data)` must equal its length).
    fn write(&self, py: Python<'_>, handle: &Handle, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.check_same(handle.pool_ref())?;
        let bytes = BytesArg::get(data)?;
        handle.write(py, bytes.as_slice())
    }

    /// Where a read finds the object, counted as one read section: `{"len", "spanning",
    /// "copied"}` (bytes the read mode copies). The read of a pool without payload.
    fn read_placement<'py>(
        &self,
        py: Python<'py>,
        handle: &Handle,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.check_same(handle.pool_ref())?;
        let kind = zsmalloc_core::ReadKind::Section;
        // SAFETY: the handle's word lives in its box as long as `handle`; a freed or moved
        // word is refused by the core, never dereferenced.
        let p = unsafe { self.core().read_placement_raw(&handle.word, None, kind) }.py()?;
        let d = PyDict::new_bound(py);
        d.set_item("len", p.len)?;
        d.set_item("spanning", p.spanning)?;
        d.set_item("copied", p.copied)?;
        Ok(d)
    }

    /// Whether the pool keeps the objects' bytes (`Pool(payload=False)`: placement only).
    #[getter]
    fn payload(&self) -> bool {
        self.core().keeps_bytes()
    }

    /// The object's bytes.
    fn read(&self, py: Python<'_>, handle: &Handle) -> PyResult<Py<PyBytes>> {
        self.check_same(handle.pool_ref())?;
        handle.read(py)
    }

    /// Copies the object into `buffer` (a writable bytes-like object at least as long);
    /// returns its length.
    fn read_into(
        &self,
        py: Python<'_>,
        handle: &Handle,
        buffer: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        self.check_same(handle.pool_ref())?;
        let out = Exported::get(buffer, true)?;
        handle.read_into(py, &out)
    }

    /// A read section as a context manager: `with pool.view(h) as mv:` gives a read-only
    /// memoryview of the object, in place (zero-copy) unless it spans two pages. Leaving the
    /// block ends the section; it raises `BufferError` if the buffer is still exported elsewhere
    /// (the section then ends when the last export is released).
    fn view(&self, handle: &Bound<'_, Handle>) -> PyResult<View> {
        self.check_same(handle.get().pool_ref())?;
        View::begin(handle)
    }

    /// Frees a `Handle`'s object, or every live object of a `Handles` array.
    fn free(&self, py: Python<'_>, handle: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(h) = handle.downcast::<Handle>() {
            self.check_same(h.get().pool_ref())?;
            return h.get().free_now(py);
        }
        if let Ok(hs) = handle.downcast::<Handles>() {
            self.check_same(hs.get().pool_ref())?;
            return hs.get().free_all(py).map(|_| ());
        }
        Err(PyTypeError::new_err("free() takes a Handle or Handles"))
    }

    /// Moves objects out of sparse zspages and releases emptied ones (`zs_compact`); returns
    /// the pages freed.
    fn compact(&self, py: Python<'_>) -> u64 {
        let pool = self.core();
        py.allow_threads(|| pool.compact())
    }

    /// Pool counters (`struct zs_pool_stats` names) as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let pool = self.core();
        let s = py.allow_threads(|| pool.stats());
        config::stats_dict(py, &s)
    }

    /// One dict per class (`struct zs_class_stats` names), ascending by size.
    fn class_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pool = self.core();
        let rows = py.allow_threads(|| pool.class_stats());
        let page_size = pool.config().page_size;
        let list = PyList::empty_bound(py);
        for r in &rows {
            list.append(config::class_stats_dict(py, r, page_size)?)?;
        }
        Ok(list)
    }

    /// The class table of this pool (as `zsmalloc.class_table(**pool.config)`).
    fn class_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self.core().as_zsmalloc() {
            Some(z) => config::class_table_rows(py, z.class_table()),
            None => Err(PyValueError::new_err(format!(
                "the {} backend has no size classes; class_stats() lists its rows",
                self.core().kind().name()
            ))),
        }
    }

    /// Stores many objects at once, with the GIL released, into a packed `Handles` array.
    ///
    /// `items` is an iterable of bytes-like objects; or, with `lengths`, one bytes-like buffer
    /// cut into consecutive pieces of those lengths. All or nothing: on error every object
    /// stored by this call is freed before the exception is raised.
    #[pyo3(signature = (items, lengths = None))]
    fn store_many(
        slf: &Bound<'_, Self>,
        items: &Bound<'_, PyAny>,
        lengths: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Handles> {
        Handles::store_many(slf, items, lengths)
    }

    /// Reads many objects with the GIL released: `Handles` or an iterable of `Handle`.
    ///
    /// Without `out`, returns a list of bytes. With `out` (a writable bytes-like object at least
    /// as long as all objects together), copies the objects back to back into it and returns
    /// the number of bytes written.
    #[pyo3(signature = (handles, out = None))]
    fn read_many(
        &self,
        py: Python<'_>,
        handles: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        if let Ok(hs) = handles.downcast::<Handles>() {
            self.check_same(hs.get().pool_ref())?;
            return match out {
                None => hs.get().read_all(py).map(|l| l.into_any().unbind()),
                Some(o) => {
                    let out = Exported::get(o, true)?;
                    hs.get().read_all_into(py, &out).map(|n| n.into_py(py))
                }
            };
        }
        let seq: Vec<Bound<'_, Handle>> = handles
            .iter()?
            .map(|h| h.and_then(|h| h.downcast_into::<Handle>().map_err(PyErr::from)))
            .collect::<PyResult<_>>()?;
        for h in &seq {
            self.check_same(h.get().pool_ref())?;
        }
        let refs: Vec<&Handle> = seq.iter().map(|h| h.get()).collect();
        match out {
            None => read_handles(py, self.core(), &refs).map(|l| l.into_any().unbind()),
            Some(o) => {
                let out = Exported::get(o, true)?;
                read_handles_into(py, self.core(), &refs, &out).map(|n| n.into_py(py))
            }
        }
    }

    /// Reads an object whose `struct zs_handle` lives at `handle_address` (C memory, or a
    /// `Handle.address` / `Handles.address(i)`). The address must point to a live handle word.
    fn read_raw(&self, py: Python<'_>, handle_address: usize) -> PyResult<Py<PyBytes>> {
        let word = handle_word(handle_address)?;
        let pool = self.core();
        // SAFETY: `word` is a caller-provided handle word (read_raw's contract); garbage values
        // are refused by the core, never dereferenced.
        let len = unsafe { pool.object_len_raw(word) }.py()?;
        let (bytes, dst) = new_bytes(py, len)?;
        let dst = dst as usize;
        let copy = move || {
            // SAFETY: `dst` is the new bytes object's `len` bytes (owned, unshared); `word` as
            // above. A length changed meanwhile (freed and re-stored) is refused by the core.
            unsafe { copy_object(pool, word, len, dst as *mut u8) }
        };
        if len >= GIL_RELEASE_BYTES { py.allow_threads(copy) } else { copy() }.py()?;
        Ok(bytes)
    }

    fn __repr__(&self) -> String {
        let c = self.core();
        let cfg = c.config();
        format!(
            "<zsmalloc.Pool {:?} page_size={} chain_size={} class_delta={} chain_policy={} \
             total_pages={}{}>",
            c.name(),
            cfg.page_size,
            cfg.chain_size,
            cfg.effective_delta(),
            cfg.chain_policy.name(),
            c.total_pages(),
            if self.borrowed() { " borrowed" } else { "" }
        )
    }

    fn __reduce__(&self) -> PyResult<Py<PyTuple>> {
        Err(PyTypeError::new_err("zsmalloc.Pool cannot be pickled"))
    }
}
