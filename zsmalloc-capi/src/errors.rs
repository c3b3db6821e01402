//! Errors at the C boundary: the thread-local last error (`zs_last_error`,
//! `zs_last_error_message`) and `zs_strerror`.
//!
//! Convention: functions returning `int` return 0 (or a count) on success and a negative
//! errno on failure; functions returning a pointer or a number return NULL/0 on failure. In both
//! cases the failure is also recorded here, per thread. Every exported function clears the record
//! when it starts, so `zs_last_error()` right after a call tells whether that call failed.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use zsmalloc_core::text_input::escape;
use zsmalloc_core::Error;

/// Errno reported when a Rust panic was caught at the boundary (an internal bug).
pub(crate) const PANIC_ERRNO: c_int = libc::ENOTRECOVERABLE;

thread_local! {
    static LAST_ERRNO: Cell<c_int> = const { Cell::new(0) };
    static LAST_MESSAGE: RefCell<CString> = RefCell::new(CString::default());
}

/// Whether any thread has recorded an error yet. Until one has, every thread's last error is
/// 0 and `clear` has nothing to do: it skips the thread-local access, a call to
/// `__tls_get_addr` in the shared library, on every exported function's way in.
static ANY_RECORDED: AtomicBool = AtomicBool::new(false);

/// Forgets the last error of this thread (called when an exported function starts).
#[inline]
pub(crate) fn clear() {
    // A thread that recorded an error set the flag itself before, so it sees it (program
    // order); threads that see it unset have nothing recorded.
    if ANY_RECORDED.load(Ordering::Relaxed) {
        let _ = LAST_ERRNO.try_with(|e| e.set(0));
    }
}

/// Records a failure of `func` with positive errno `errno` and a message.
#[cold]
pub(crate) fn record(func: &str, errno: c_int, message: &str) {
    ANY_RECORDED.store(true, Ordering::Relaxed);
    let _ = LAST_ERRNO.try_with(|e| e.set(errno));
    // C callers print the message as one line: a control character quoted from an input (an
    // environment value, a path) is written as its escape, and a NUL cannot end it early.
    let text = escape(&format!("{func}: {message}")).into_owned();
    let _ = LAST_MESSAGE.try_with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            *m = CString::new(text).unwrap_or_default();
        }
    });
}

/// Records a core error; returns its negative errno.
#[cold]
#[inline(never)]
pub(crate) fn record_error(func: &str, err: Error) -> c_int {
    record(func, err.errno(), &err.to_string());
    -err.errno()
}

/// An `InvalidArgument` error.
#[cold]
#[inline(never)]
pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// The last error of this thread as a negative errno (0: the last call succeeded).
pub(crate) fn last_error() -> c_int {
    -LAST_ERRNO.try_with(Cell::get).unwrap_or(0)
}

/// The message of the last failure on this thread ("" when the last call succeeded). The pointer
/// stays valid until the next failing call on this thread.
pub(crate) fn last_error_message() -> *const c_char {
    if last_error() == 0 {
        return c"".as_ptr();
    }
    LAST_MESSAGE
        .try_with(|m| m.try_borrow().map(|m| m.as_ptr()).unwrap_or(c"".as_ptr()))
        .unwrap_or(c"".as_ptr())
}

/// A static description of an errno; accepts it negated or not.
pub(crate) fn strerror(errno: c_int) -> &'static CStr {
    match errno.checked_abs().unwrap_or(0) {
        0 => c"success",
        libc::EINVAL => c"invalid argument (bad pool, handle, length, buffer or configuration)",
        libc::ENOSPC => c"object larger than the pool stores",
        libc::ENOMEM => c"out of memory (the pool's page limit is reached)",
        libc::EBUSY => c"object is being read (end the read section first)",
        libc::EAGAIN => c"too many read sections of the object are open (end one first)",
        libc::EEXIST => c"handle already holds an object (free it first)",
        PANIC_ERRNO => c"internal error in libzsmalloc (a Rust panic was caught)",
        _ => c"unknown error",
    }
}
