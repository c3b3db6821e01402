//! Counted readers beyond what a header word holds: the slow path of a popular object.
//!
//! A header's reader bits (`header.rs`) count up to 5 sections exactly; the value 6 means
//! *saturated*: 6 sections plus the number this table keeps for that header word's address. The
//! table is process-wide, behind one short mutex, and is used only by the 7th and later counted
//! sections of one object (a thread's nested sections, threads without an announce slot, huge
//! objects' readers) and by their ends. Nothing ever waits on it for a reader to end: a begin past
//! [`MAX_EXCESS`] is refused (`EAGAIN`), never delayed.
//!
//! Invariants (`tests/loom_saturation.rs` checks them against claims):
//! - An entry exists only while its header is saturated, and every move out of or within the
//!   saturated state (a 7th begin, an end at 6) runs under the table's lock; so under the lock a
//!   saturated header stays saturated, and claims (which need a reader count of 0) cannot start.
//! - The entry of a header goes away with its last excess section, so an object that is freed
//!   later leaves nothing behind; a pool dropped with sections still open (a broken contract)
//!   has its range forgotten with its mapping (`forget_range`).

use std::collections::BTreeMap;

/// Counted sections of one object beyond the header's 6, at most: with them at least 65,535
/// sections of one object can be open at once.
pub const MAX_EXCESS: u32 = 65_535 - 6;

#[cfg(not(loom))]
static TABLE: std::sync::Mutex<BTreeMap<usize, u32>> = std::sync::Mutex::new(BTreeMap::new());

#[cfg(loom)]
loom::lazy_static! {
    static ref TABLE: loom::sync::Mutex<BTreeMap<usize, u32>> =
        loom::sync::Mutex::new(BTreeMap::new());
}

/// The table, locked.
#[cfg(not(loom))]
pub(crate) fn lock() -> std::sync::MutexGuard<'static, BTreeMap<usize, u32>> {
    // Nothing panics while holding it; a poisoned lock still holds a consistent map.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The table, locked.
#[cfg(loom)]
pub(crate) fn lock() -> loom::sync::MutexGuard<'static, BTreeMap<usize, u32>> {
    TABLE.lock().unwrap()
}

/// Sections beyond the header's 6 on the header word at `header` (a racy snapshot, for tests).
pub fn excess_of(header: usize) -> u32 {
    lock().get(&header).copied().unwrap_or(0)
}

/// Forgets every entry for a header in `lo..hi` (a mapping about to go away).
pub(crate) fn forget_range(lo: usize, hi: usize) {
    lock().retain(|&at, _| !(lo..hi).contains(&at));
}
