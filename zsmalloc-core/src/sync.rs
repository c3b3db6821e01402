//! Atomics of the concurrency protocol, swapped for loom's when built with `--cfg loom`, so
//! `tests/loom_protocol.rs` can model-check the code that runs in production (the one switch:
//! `scripts/test-loom.sh` sets it).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU32;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU32;

pub(crate) use std::sync::atomic::Ordering;

/// Back off while another thread finishes a short critical step (a migration of one zspage).
#[inline]
pub(crate) fn backoff() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// Wait a moment for another thread's next few instructions (a reader retracting an announce).
#[inline]
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
