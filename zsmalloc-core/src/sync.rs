//! Atomics of the concurrency protocol, swapped for loom's under the `loom` feature so
//! `tests/loom_protocol.rs` can model-check the code that runs in production.

#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::AtomicU32;
#[cfg(not(feature = "loom"))]
pub(crate) use std::sync::atomic::AtomicU32;

pub(crate) use std::sync::atomic::Ordering;

/// Back off while another thread finishes a short critical step (a migration of one zspage).
#[inline]
pub(crate) fn backoff() {
    #[cfg(feature = "loom")]
    loom::thread::yield_now();
    #[cfg(not(feature = "loom"))]
    std::thread::yield_now();
}

/// Wait a moment for another thread's next few instructions (a reader retracting an announce).
#[inline]
pub(crate) fn spin() {
    #[cfg(feature = "loom")]
    loom::thread::yield_now();
    #[cfg(not(feature = "loom"))]
    std::hint::spin_loop();
}
