//! The panic boundary. Every exported function runs its body through [`boundary`] once: the
//! body returns a `Result`, and the boundary turns it into the C return value, so a failure is
//! reported by the same call that met it (nothing is run twice). No Rust panic unwinds into C: a
//! caught panic is an internal error, `-ENOTRECOVERABLE`, with its message in
//! `zs_last_error_message()`.
//!
//! What a C function returns on failure depends only on its return type ([`ErrorValue`]).

use std::any::Any;
use std::ffi::{c_int, c_uint, c_ulong};
use std::panic::{catch_unwind, AssertUnwindSafe};

use zsmalloc_core::Result;

use crate::errors::{self, PANIC_ERRNO};

/// The value a C function of this return type gives on failure.
pub(crate) trait ErrorValue {
    /// The return value for the (negative) errno `neg`.
    fn error_value(neg: c_int) -> Self;
}

/// `int`: the negative errno.
impl ErrorValue for c_int {
    #[inline]
    fn error_value(neg: c_int) -> Self {
        neg
    }
}

/// Pointers: NULL.
impl<T> ErrorValue for *mut T {
    #[inline]
    fn error_value(_: c_int) -> Self {
        std::ptr::null_mut()
    }
}

/// `unsigned int`: 0.
impl ErrorValue for c_uint {
    #[inline]
    fn error_value(_: c_int) -> Self {
        0
    }
}

/// `unsigned long` counts: 0.
impl ErrorValue for c_ulong {
    #[inline]
    fn error_value(_: c_int) -> Self {
        0
    }
}

/// `size_t`: 0.
impl ErrorValue for usize {
    #[inline]
    fn error_value(_: c_int) -> Self {
        0
    }
}

/// `void`: nothing (the error is in `zs_last_error()`).
impl ErrorValue for () {
    #[inline]
    fn error_value(_: c_int) -> Self {}
}

/// A kernel-style `unsigned long` handle: `(unsigned long)-errno` on failure (`IS_ERR_VALUE`).
pub(crate) struct ErrValueHandle(pub(crate) c_ulong);

impl ErrorValue for ErrValueHandle {
    #[inline]
    fn error_value(neg: c_int) -> Self {
        ErrValueHandle(neg as std::ffi::c_long as c_ulong)
    }
}

/// Runs the body of the C function `func`: clears the thread's last error, then returns the
/// body's value, or records its error (or the caught panic) and returns `T`'s error value.
#[inline(always)]
pub(crate) fn boundary<T: ErrorValue>(func: &'static str, body: impl FnOnce() -> Result<T>) -> T {
    errors::clear();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => T::error_value(errors::record_error(func, e)),
        Err(payload) => T::error_value(panicked(func, payload)),
    }
}

/// [`boundary`] for the functions that report the last error (`zs_last_error`, ...): they leave
/// it as it is, and cannot fail but by a panic, which gives `on_panic`.
#[inline]
pub(crate) fn quiet<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

#[cold]
#[inline(never)]
fn panicked(func: &str, payload: Box<dyn Any + Send>) -> c_int {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    };
    // Dropping a payload may itself panic: keep it from unwinding out of here.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    errors::record(func, PANIC_ERRNO, &format!("internal error (Rust panic caught): {text}"));
    -PANIC_ERRNO
}

#[cfg(test)]
mod tests {
    use super::*;
    use zsmalloc_core::Error;

    #[test]
    fn panics_become_errors() {
        let r: c_int = boundary("zs_test", || panic!("boom"));
        assert_eq!(r, -PANIC_ERRNO);
        assert_eq!(errors::last_error(), -PANIC_ERRNO);
        // SAFETY: the message pointer is valid until the next failing call on this thread.
        let msg = unsafe { std::ffi::CStr::from_ptr(errors::last_error_message()) };
        assert!(msg
            .to_string_lossy()
            .contains("zs_test: internal error (Rust panic caught): boom"));
        let p: *mut u8 = boundary("zs_test", || panic!("{}", 42));
        assert!(p.is_null());
        let h: ErrValueHandle = boundary("zs_test", || panic!());
        assert_eq!(h.0, -PANIC_ERRNO as std::ffi::c_long as c_ulong);
        assert_eq!(quiet(7, || panic!()), 7);
    }

    #[test]
    fn success_clears_the_last_error() {
        assert_eq!(boundary::<c_int>("zs_test", || Err(Error::Busy)), -libc::EBUSY);
        assert_eq!(errors::last_error(), -libc::EBUSY);
        assert_eq!(boundary::<c_int>("zs_test", || Ok(3)), 3);
        assert_eq!(errors::last_error(), 0);
        assert_eq!(boundary::<c_ulong>("zs_test", || Err(Error::OutOfMemory)), 0);
        assert_eq!(errors::last_error(), -libc::ENOMEM);
    }
}
