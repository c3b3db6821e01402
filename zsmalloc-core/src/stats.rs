//! Statistics: pool counters (`struct zs_pool_stats`) and per-class rows (debugfs `classes`).
//!
//! Store/free counters live in each class's locked state; read counters are sharded per thread
//! (cache-line padded) so concurrent readers never share a counter line. Both are summed on demand.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// Pool-wide counters (SPEC §6 `zs_pool_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pages released by compaction since the pool was created.
    pub pages_compacted: u64,
    /// Pages held by zspages now (`zs_get_total_pages`).
    pub pages_allocated: u64,
    /// Highest `pages_allocated` seen.
    pub pages_peak: u64,
    /// Released pages kept resident for reuse (not counted in `pages_allocated`).
    pub pages_cached: u64,
    /// Object slots in existing zspages.
    pub objs_allocated: u64,
    /// Live objects.
    pub objs_inuse: u64,
    /// Sum of live objects' lengths (headers excluded).
    pub bytes_stored: u64,
    /// Read sections begun (copy and scatter-gather).
    pub reads: u64,
    /// Read sections on objects that cross a page boundary.
    pub reads_spanning: u64,
    /// Object bytes (not header bytes) copied by those read sections.
    pub read_copy_bytes: u64,
    /// Stores and writes of objects that cross a page boundary.
    pub writes_spanning: u64,
    /// Objects moved by compaction since the pool was created.
    pub objs_moved: u64,
}

/// One class's row: the kernel's debugfs `classes` line plus layout facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassStats {
    pub index: u32,
    pub size: u32,
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
    pub huge: bool,
    /// Zspages per fullness group: 0 empty, 1..=10 by tenths of inuse ratio, 11 full.
    pub fullness: [u64; 12],
    pub obj_allocated: u64,
    pub obj_used: u64,
    pub pages_used: u64,
    /// Pages compaction could free now (`zs_can_compact`).
    pub freeable: u64,
    /// Objects of a full zspage crossing a page boundary.
    pub spanning_per_zspage: u32,
    pub tail_waste: u32,
    pub worst_merge_waste: u32,
    /// Smallest and largest class index served by this class.
    pub first_index: u32,
    pub last_index: u32,
    pub bytes_stored: u64,
}

/// Shards owned by one thread each (updated with plain loads and stores, no locked RMW); the
/// same indices own the threads' reader slots (`hazard.rs`).
pub(crate) const OWNED_SHARDS: usize = 64;
/// Shards shared by threads beyond the first `OWNED_SHARDS` live ones (atomic RMW).
const SHARED_SHARDS: usize = 8;

#[repr(align(128))]
#[derive(Default)]
struct Shard {
    reads: AtomicU64,
    spanning: AtomicU64,
    copy_bytes: AtomicU64,
    writes_spanning: AtomicU64,
}

impl Shard {
    /// Adds `n` to `c`. An owned shard has a single writer, so a load and a store suffice.
    #[inline]
    fn add(c: &AtomicU64, n: u64, owned: bool) {
        if owned {
            c.store(c.load(Relaxed) + n, Relaxed);
        } else {
            c.fetch_add(n, Relaxed);
        }
    }
}

/// A small per-thread id, recycled when the thread exits. Ids below `OWNED_SHARDS` own a shard
/// in every pool; the mutex orders one owner's last update before the next owner's first.
struct ThreadSlot(usize);

static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

impl ThreadSlot {
    fn acquire() -> ThreadSlot {
        let reused = FREE_SLOTS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        ThreadSlot(reused.unwrap_or_else(|| NEXT_SLOT.fetch_add(1, Relaxed)))
    }
}

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        // Forget the cached shard first: once the id is back in the pool, another thread may own it.
        let _ = SHARD.try_with(|c| c.set(0));
        FREE_SLOTS.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
    }
}

thread_local! {
    static THREAD_SLOT: ThreadSlot = ThreadSlot::acquire();
    /// `ThreadShard::current()` cached as `(index << 1 | owned) + 1` (0: not yet). A `const` slot
    /// with no destructor, so reading it is one load (the id's slot above checks its state).
    static SHARD: Cell<usize> = const { Cell::new(0) };
}

/// This thread's shard, and its reader slot when it owns the shard: looked up once per
/// operation (in a shared library each thread-local access is a call).
#[derive(Clone, Copy)]
pub(crate) struct ThreadShard {
    index: usize,
    owned: bool,
}

impl ThreadShard {
    #[inline(always)]
    pub(crate) fn current() -> ThreadShard {
        if let Some(v) = SHARD.try_with(|c| c.get()).ok().and_then(|c| c.checked_sub(1)) {
            return ThreadShard { index: v >> 1, owned: v & 1 == 1 };
        }
        Self::first()
    }

    #[cold]
    fn first() -> ThreadShard {
        THREAD_SLOT
            .try_with(|s| {
                let shard = if s.0 < OWNED_SHARDS {
                    crate::hazard::register(s.0);
                    ThreadShard { index: s.0, owned: true }
                } else {
                    ThreadShard { index: OWNED_SHARDS + s.0 % SHARED_SHARDS, owned: false }
                };
                let _ = SHARD.try_with(|c| c.set(((shard.index << 1) | shard.owned as usize) + 1));
                shard
            })
            // During thread teardown the slot may be gone: use a shared shard.
            .unwrap_or(ThreadShard { index: OWNED_SHARDS, owned: false })
    }

    /// The thread's index if it owns one (below `OWNED_SHARDS`): its shard and reader slot.
    #[inline(always)]
    pub(crate) fn owned_index(self) -> Option<usize> {
        self.owned.then_some(self.index)
    }
}

/// Read and write counters, sharded by thread so readers never share a counter line.
pub(crate) struct AccessCounters {
    shards: Box<[Shard]>,
}

impl AccessCounters {
    pub fn new() -> Self {
        AccessCounters {
            shards: (0..OWNED_SHARDS + SHARED_SHARDS).map(|_| Shard::default()).collect(),
        }
    }

    #[inline]
    pub fn record_read(&self, spanning: bool, copied: u64) {
        self.record_read_by(ThreadShard::current(), spanning, copied);
    }

    /// `record_read` for the thread whose shard the caller looked up.
    #[inline]
    pub(crate) fn record_read_by(&self, t: ThreadShard, spanning: bool, copied: u64) {
        let (i, owned) = (t.index, t.owned);
        let s = &self.shards[i];
        Shard::add(&s.reads, 1, owned);
        if spanning {
            Shard::add(&s.spanning, 1, owned);
        }
        if copied != 0 {
            Shard::add(&s.copy_bytes, copied, owned);
        }
    }

    #[inline]
    pub fn record_write(&self, spanning: bool) {
        if spanning {
            let t = ThreadShard::current();
            Shard::add(&self.shards[t.index].writes_spanning, 1, t.owned);
        }
    }
    /// (reads, spanning reads, bytes copied, spanning writes).
    pub fn sum(&self) -> (u64, u64, u64, u64) {
        self.shards.iter().fold((0, 0, 0, 0), |(r, s, c, w), sh| {
            (
                r + sh.reads.load(Relaxed),
                s + sh.spanning.load(Relaxed),
                c + sh.copy_bytes.load(Relaxed),
                w + sh.writes_spanning.load(Relaxed),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let c = AccessCounters::new();
        std::thread::scope(|s| {
            for _ in 0..100 {
                s.spawn(|| {
                    for i in 0..1000 {
                        c.record_read(i % 2 == 0, 3);
                        c.record_write(true);
                    }
                });
            }
        });
        assert_eq!(c.sum(), (100_000, 50_000, 300_000, 100_000));
    }
}
