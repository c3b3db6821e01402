//! Bytes-like arguments: `bytes` read directly, anything else through the buffer protocol.

use std::os::raw::c_int;

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// An exported buffer (`PyObject_GetBuffer`), released on drop. Boxed: exporters may keep
/// pointers into the `Py_buffer` they filled.
pub struct Exported {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the export pins the exporter's memory until `PyBuffer_Release` (in `Drop`, which
// takes the GIL); the struct itself is plain data. Sharing the bytes across threads is what every
// GIL-releasing extension does with buffers (the exporter may still mutate them, which can tear
// data but not memory).
unsafe impl Send for Exported {}
// SAFETY: see `Send`; `&Exported` only reads the immutable `Py_buffer` fields.
unsafe impl Sync for Exported {}

impl Exported {
    /// Exports `obj`'s buffer as contiguous bytes (writable if asked).
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Exported> {
        let mut view = Box::new(ffi::Py_buffer::new());
        let flags: c_int = if writable { ffi::PyBUF_WRITABLE } else { ffi::PyBUF_SIMPLE };
        // SAFETY: `obj` is a live object (GIL held via the Bound); `view` is a writable
        // Py_buffer; on success it must be released exactly once, which `Drop` does.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            let err = PyErr::fetch(obj.py());
            if err.is_instance_of::<PyBufferError>(obj.py()) && writable {
                return Err(PyTypeError::new_err(format!(
                    "a writable bytes-like object is required, not '{}'",
                    type_name(obj)
                )));
            }
            return Err(PyTypeError::new_err(format!(
                "a bytes-like object is required, not '{}'",
                type_name(obj)
            )));
        }
        Ok(Exported { view })
    }

    pub fn len(&self) -> usize {
        self.view.len as usize
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.view.len == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: a PyBUF_SIMPLE/WRITABLE export is `len` contiguous bytes at `buf`, valid until
        // release (which needs `&mut self`).
        unsafe { std::slice::from_raw_parts(self.view.buf as *const u8, self.len()) }
    }

    /// Start of a writable export.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.view.buf as *mut u8
    }
}

impl Drop for Exported {
    fn drop(&mut self) {
        Python::with_gil(|_| {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer and is released once.
            unsafe { ffi::PyBuffer_Release(&mut *self.view) }
        });
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

/// Bytes of a bytes-like argument, kept alive as long as this value.
pub enum BytesArg<'py> {
    Bytes(Bound<'py, PyBytes>),
    Buffer(Exported),
}

impl<'py> BytesArg<'py> {
    pub fn get(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        match obj.downcast::<PyBytes>() {
            Ok(b) => Ok(BytesArg::Bytes(b.clone())),
            Err(_) => Exported::get(obj, false).map(BytesArg::Buffer),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            BytesArg::Bytes(b) => b.as_bytes(),
            BytesArg::Buffer(e) => e.as_slice(),
        }
    }
}

/// A new, not yet shared `bytes` of `len` bytes and its writable data pointer.
pub fn new_bytes(py: Python<'_>, len: usize) -> PyResult<(Py<PyBytes>, *mut u8)> {
    // SAFETY: a NULL source asks CPython for an uninitialised object of `len` bytes, which we
    // own (new reference) and fill before anyone else can see it.
    unsafe {
        let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as ffi::Py_ssize_t);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let data = ffi::PyBytes_AsString(obj) as *mut u8;
        Ok((Py::from_owned_ptr(py, obj), data))
    }
}

/// A list owning `items`, built without touching reference counts (abi3 makes each
/// `Py_INCREF`/`Py_DECREF` a function call; a 100k-object read would pay 200k of them).
pub fn list_of<T>(py: Python<'_>, items: Vec<Py<T>>) -> PyResult<Bound<'_, PyList>> {
    // SAFETY: PyList_New returns a new list of `len` NULL slots (or NULL with an exception);
    // PyList_SetItem steals the reference `into_ptr` hands over, for each index exactly once.
    unsafe {
        let list = ffi::PyList_New(items.len() as ffi::Py_ssize_t);
        let list = Bound::from_owned_ptr_or_err(py, list)?;
        for (i, item) in items.into_iter().enumerate() {
            ffi::PyList_SetItem(list.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(list.downcast_into_unchecked())
    }
}
