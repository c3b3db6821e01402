//! The panic boundary: every exported function runs its body through one of these helpers, so no
//! Rust panic unwinds into C. A caught panic becomes `-ENOTRECOVERABLE` (or NULL/0) with the panic
//! message in `zs_last_error_message()`.

use std::any::Any;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use zsmalloc_core::{Error, Result};

use crate::errors::{self, PANIC_ERRNO};

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

fn record_panic(func: &str, payload: &(dyn Any + Send)) {
    let msg = format!("internal error (Rust panic caught): {}", panic_message(payload));
    errors::record(func, PANIC_ERRNO, &msg);
}

/// Runs `f` for `func`: clears the thread's last error, returns `f`'s value, or `on_error` after
/// recording the error (or the caught panic).
pub fn call<T>(func: &str, on_error: T, f: impl FnOnce() -> Result<T>) -> T {
    errors::clear();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            errors::record_error(func, &e);
            on_error
        }
        Err(payload) => {
            record_panic(func, payload.as_ref());
            on_error
        }
    }
}

/// [`call`] for functions returning `int`: the value on success, the negative errno on failure.
pub fn call_int(func: &str, f: impl FnOnce() -> Result<c_int>) -> c_int {
    errors::clear();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => errors::record_error(func, &e),
        Err(payload) => {
            record_panic(func, payload.as_ref());
            -PANIC_ERRNO
        }
    }
}

/// [`call`] where the value returned on failure depends on the negative errno (e.g. the kernel's
/// `(unsigned long)-errno` handles).
pub fn call_errno<T>(
    func: &str,
    on_error: impl FnOnce(c_int) -> T,
    f: impl FnOnce() -> Result<T>,
) -> T {
    errors::clear();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => on_error(errors::record_error(func, &e)),
        Err(payload) => {
            record_panic(func, payload.as_ref());
            on_error(-PANIC_ERRNO)
        }
    }
}

/// [`call`] for functions that cannot fail (besides a panic) and return a plain value.
pub fn call_infallible<T>(func: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    call(func, on_panic, || Ok(f()))
}

/// Runs `f` behind the panic boundary without touching the thread's last error (for
/// `zs_last_error`, `zs_last_error_message`, `zs_strerror` and `zs_version`, which report it).
pub fn call_quiet<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// What a fast path did: its value, nothing (the caller takes its general path), or a panic,
/// already recorded for `func`, after which the caller returns its error value.
pub enum Fast<T> {
    Done(T),
    NotTaken,
    Panicked,
}

impl<T> Fast<T> {
    /// The exported function's return value if the fast path settled the call: `done(v)`, or
    /// `on_panic` after a (recorded) panic; `None` sends the caller to its general path.
    #[inline]
    pub fn settled<R>(self, done: impl FnOnce(T) -> R, on_panic: R) -> Option<R> {
        match self {
            Fast::Done(v) => Some(done(v)),
            Fast::Panicked => Some(on_panic),
            Fast::NotTaken => None,
        }
    }
}

/// Runs the fast path `f` of `func` behind the panic boundary, after clearing the thread's last
/// error as [`call`] does. `f` returns `None` only when it changed nothing.
#[inline]
pub fn fast_path<T>(func: &str, f: impl FnOnce() -> Option<T>) -> Fast<T> {
    errors::clear();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Some(v)) => Fast::Done(v),
        Ok(None) => Fast::NotTaken,
        Err(payload) => {
            record_panic(func, payload.as_ref());
            Fast::Panicked
        }
    }
}

/// An `InvalidArgument` error.
#[cold]
pub fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors;

    #[test]
    fn panics_become_errors() {
        let r = call_int("zs_test", || panic!("boom"));
        assert_eq!(r, -PANIC_ERRNO);
        assert_eq!(errors::last_error(), -PANIC_ERRNO);
        // SAFETY: the message pointer is valid until the next failing call on this thread.
        let msg = unsafe { std::ffi::CStr::from_ptr(errors::last_error_message()) };
        assert!(msg
            .to_string_lossy()
            .contains("zs_test: internal error (Rust panic caught): boom"));
        let p: *mut u8 = call("zs_test", std::ptr::null_mut(), || panic!("{}", 42));
        assert!(p.is_null());
        assert_eq!(
            call_errno("zs_test", |e| e as i64, || -> Result<i64> { panic!() }),
            -i64::from(PANIC_ERRNO)
        );
    }

    #[test]
    fn success_clears_the_last_error() {
        assert_eq!(call_int("zs_test", || Err(Error::Busy)), -libc::EBUSY);
        assert_eq!(errors::last_error(), -libc::EBUSY);
        assert_eq!(call_int("zs_test", || Ok(3)), 3);
        assert_eq!(errors::last_error(), 0);
    }
}
