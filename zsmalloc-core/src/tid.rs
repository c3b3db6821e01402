//! The thread registry: a small index per thread, recycled when the thread exits.
//!
//! Indices below [`OWNED`] are *owned*: each such thread has, in every pool, a counter shard it
//! alone writes (`counters.rs`) and, process-wide, an announce slot (`announce.rs`). Threads
//! beyond the first `OWNED` live ones share [`SHARED`] shards (updated with atomic
//! read-modify-writes) and have no announce slot. The index is looked up once per operation: in
//! a shared library each thread-local access is a call.
//!
//! Invariants:
//! - An index is held by at most one live thread; the free list's mutex orders one holder's last
//!   use before the next holder's first.
//! - [`owned_high`] covers every owned index ever handed out: a thread raises it (`SeqCst`) when
//!   it gets its index, before its first announce, and it never falls. Writers scan the announce
//!   slots below it.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Indices owned by one thread each.
pub(crate) const OWNED: usize = 64;
/// Shards shared by the threads beyond the first `OWNED` live ones.
pub(crate) const SHARED: usize = 8;

/// A thread's hold on its index, given back when the thread exits.
struct Lease(usize);

static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// One past the highest owned index handed out.
static OWNED_HIGH: AtomicUsize = AtomicUsize::new(0);

impl Lease {
    fn acquire() -> Lease {
        let reused = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Lease(reused.unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed)))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Forget the cached index first: once it is back on the free list, another thread may
        // hold it.
        let _ = CACHED.try_with(|c| c.set(0));
        FREE.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
    }
}

thread_local! {
    static LEASE: Lease = Lease::acquire();
    /// `Tid::current()` cached as `(index << 1 | owned) + 1` (0: not yet). A `const` slot with no
    /// destructor, so reading it is one load (the lease above checks its state).
    static CACHED: Cell<usize> = const { Cell::new(0) };
}

/// This thread's index: owned (its own shard and announce slot) or shared.
#[derive(Clone, Copy)]
pub(crate) struct Tid {
    /// Below `OWNED` when owned; `OWNED..OWNED + SHARED` otherwise.
    pub(crate) index: usize,
    pub(crate) owned: bool,
}

impl Tid {
    #[inline(always)]
    pub(crate) fn current() -> Tid {
        if let Some(v) = CACHED.try_with(|c| c.get()).ok().and_then(|c| c.checked_sub(1)) {
            return Tid { index: v >> 1, owned: v & 1 == 1 };
        }
        Self::first()
    }

    #[cold]
    fn first() -> Tid {
        LEASE
            .try_with(|s| {
                let tid = if s.0 < OWNED {
                    OWNED_HIGH.fetch_max(s.0 + 1, Ordering::SeqCst);
                    Tid { index: s.0, owned: true }
                } else {
                    Tid { index: OWNED + s.0 % SHARED, owned: false }
                };
                let _ = CACHED.try_with(|c| c.set(((tid.index << 1) | tid.owned as usize) + 1));
                tid
            })
            // During thread teardown the lease may be gone: use a shared index.
            .unwrap_or(Tid { index: OWNED, owned: false })
    }

    /// The thread's index if it owns one (below `OWNED`): its shard and announce slot.
    #[inline(always)]
    pub(crate) fn owned_index(self) -> Option<usize> {
        self.owned.then_some(self.index)
    }
}

/// One past the highest owned index handed out (`SeqCst`; see the invariants above).
#[inline]
pub(crate) fn owned_high() -> usize {
    OWNED_HIGH.load(Ordering::SeqCst).min(OWNED)
}
