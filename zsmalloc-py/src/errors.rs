//! Core errors as Python exceptions.
//!
//! `OutOfMemory` is a `MemoryError`; a bad setting, a bad argument or an oversized object is a
//! `ValueError`; everything about handles (foreign, freed, stale, busy, already used) is a
//! `zsmalloc.ZsError`, an `OSError` subclass whose `errno` is the C ABI's (positive) errno.
//! Every exception raised here carries that `errno` attribute.

use pyo3::exceptions::{PyBufferError, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use zsmalloc_core::Error;

pyo3::create_exception!(
    zsmalloc,
    ZsError,
    PyOSError,
    "A handle was refused: freed, stale, of another pool, already in use, or busy (a read \
     section is open, or 65,535 are). `errno` holds the C ABI's errno (EINVAL, EEXIST, EBUSY, \
     EAGAIN)."
);

/// The Python exception for a core error.
pub fn to_py(e: Error) -> PyErr {
    let errno = e.errno();
    let msg = e.to_string();
    let err = match e {
        Error::OutOfMemory => PyMemoryError::new_err(msg),
        Error::Config { .. }
        | Error::InvalidArgument(_)
        | Error::TooLarge { .. }
        | Error::NoPayload => PyValueError::new_err(msg),
        Error::InvalidHandle(_)
        | Error::HandleInUse
        | Error::Busy
        | Error::Again(_)
        | Error::MapFailed { .. }
        | Error::TooManyReaders => {
            return ZsError::new_err((errno, msg));
        }
    };
    Python::with_gil(|py| {
        // Best effort: built-in exception instances take attributes.
        let _ = err.value_bound(py).setattr("errno", errno);
    });
    err
}

/// Extension for `zsmalloc_core::Result`.
pub trait PyRes<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> PyRes<T> for zsmalloc_core::Result<T> {
    #[inline]
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// `ZsError` with an explicit errno.
pub fn zs_error(errno: i32, msg: impl Into<String>) -> PyErr {
    ZsError::new_err((errno, msg.into()))
}

/// `BufferError` (a view's buffer is still exported, or the view is closed).
pub fn buffer_error(msg: impl Into<String>) -> PyErr {
    PyBufferError::new_err(msg.into())
}

/// The `ZsError` of a handle whose object was freed.
pub fn freed_error() -> PyErr {
    zs_error(Error::InvalidHandle("").errno(), "invalid handle: its object was freed")
}

/// The `ZsError` of a handle given to a pool it does not belong to.
pub fn other_pool_error() -> PyErr {
    zs_error(Error::InvalidHandle("").errno(), "invalid handle: handle belongs to another pool")
}

/// The `ZsError` of a free or write refused while a view of the object is open.
pub fn busy_error() -> PyErr {
    zs_error(
        Error::Busy.errno(),
        "object is being read: a view of it is open (leave its `with` block first)",
    )
}
