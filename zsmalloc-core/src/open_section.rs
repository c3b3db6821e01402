//! The raw layer's per-thread record of the read section a thread began last.
//!
//! `read_end_raw` is given only the handle. Without a record it must resolve the handle word
//! again and prove again that it names an object start of a live zspage before it may touch the
//! header, which costs a read section a tenth to a fifth of its instructions. The
//! record carries that proof from the begin: this thread registered on the header of exactly
//! this (pool, handle address, handle word), and pinned the zspage if the object is huge.
//!
//! Invariants:
//! - A record is written only by a begin that succeeded, and is cleared by the end that uses it.
//! - `pool` is a pool id, never reused, so a record cannot match another pool that happens to
//!   live at the same address; a matching `&Pool` is therefore the pool whose zspage table and
//!   arena the record's pointers point into, and they stay valid while that pool lives.
//! - Matching also needs the handle word unchanged. If a caller ended the section some other way
//!   (another thread's end: a broken contract), the header check of `header::end_read` still
//!   refuses a handle without a reader, exactly as the re-validating path does.

use std::cell::Cell;
use std::sync::atomic::AtomicU64;

use crate::pin::PinWord;

/// One begun read section: whose it is, and what the begin validated.
#[derive(Clone, Copy)]
pub(crate) struct OpenSection {
    /// Pool id (0: no record).
    pub pool: u64,
    /// Address of the handle word.
    pub handle: usize,
    /// The handle word the section was begun on.
    pub word: usize,
    /// The zspage pin the begin took (huge objects only; null otherwise).
    pub pin: *const PinWord,
    /// The header word holding this section's reader registration.
    pub header: *const AtomicU64,
    /// The object's length.
    pub len: usize,
}

const NONE: OpenSection = OpenSection {
    pool: 0,
    handle: 0,
    word: 0,
    pin: std::ptr::null(),
    header: std::ptr::null(),
    len: 0,
};

thread_local! {
    static LAST: Cell<OpenSection> = const { Cell::new(NONE) };
}

/// Remembers the section this thread has just begun.
#[inline]
pub(crate) fn record(open: OpenSection) {
    // During thread teardown the record is gone: ends then take the re-validating path.
    let _ = LAST.try_with(|c| c.set(open));
}

/// The record of this thread's section on `(pool, handle, word)`, if it is the last one begun.
#[inline]
pub(crate) fn matching(pool: u64, handle: usize, word: usize) -> Option<OpenSection> {
    LAST.try_with(|c| c.get())
        .ok()
        .filter(|o| o.pool == pool && o.handle == handle && o.word == word && pool != 0)
}

/// Forgets this thread's record (its section has ended).
#[inline]
pub(crate) fn clear() {
    let _ = LAST.try_with(|c| c.set(NONE));
}
