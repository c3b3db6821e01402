//! `View`: an open read section of one object, exporting its bytes through the buffer protocol.

use std::os::raw::c_int;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use zsmalloc_core::{Backend, HANDLE_SIZE};

use crate::errors::{buffer_error, freed_error, PyRes};
use crate::gate::shared;
use crate::handle::Handle;

/// A view's mutable state, behind its lock.
struct ViewState {
    /// The read section is open (not yet ended).
    open: bool,
    /// Buffer exports alive (memoryviews and the like).
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
    /// Object bytes: in a page, or when spanning in `local` after the header (`copy`), in a map
    /// slot (`map`) or in place (`contiguous`).
    ptr: usize,
    len: usize,
    copied: bool,
    state: Mutex<ViewState>,
    /// `local_copy` of the read section (kept until the section ends).
    _local: Box<[u8]>,
}

impl View {
    pub fn begin(handle: &Bound<'_, Handle>) -> PyResult<View> {
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
        end_section(self.handle.get(), self.len, self.ptr, st);
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

/// Ends the read section of `len` bytes on `h`'s word, if still open (`ptr`: the address its
/// begin returned, which names its map slot in `map` mode).
fn end_section(h: &Handle, len: usize, ptr: usize, st: &mut ViewState) {
    if st.open {
        st.open = false;
        // SAFETY: the section `View::begin` opened on this handle's word, ended once.
        let _ = unsafe { h.core().read_end_at_raw(&h.word, Some(len), ptr as *const u8) };
        h.views.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // No export remains: each holds a reference to the View.
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        end_section(self.handle.get(), self.len, self.ptr, st);
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
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
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
