//! Statistics: pool counters (`struct zs_pool_stats`) and per-class rows (debugfs `classes`).
//!
//! Store/free counters live in each class's locked state; read counters are sharded per thread
//! (cache-line padded) so concurrent readers never share a counter line. Both are summed on demand.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

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

const SHARDS: usize = 32;

#[repr(align(128))]
#[derive(Default)]
struct Shard {
    reads: AtomicU64,
    spanning: AtomicU64,
    copy_bytes: AtomicU64,
    writes_spanning: AtomicU64,
}

/// Read and write counters sharded by thread.
pub(crate) struct AccessCounters {
    shards: Box<[Shard]>,
}

fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static SHARD: Cell<usize> = const { Cell::new(usize::MAX) });
    SHARD.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT.fetch_add(1, Relaxed) % SHARDS);
        }
        s.get()
    })
}

impl AccessCounters {
    pub fn new() -> Self {
        AccessCounters { shards: (0..SHARDS).map(|_| Shard::default()).collect() }
    }

    #[inline]
    pub fn record_read(&self, spanning: bool, copied: u64) {
        let s = &self.shards[shard_index()];
        s.reads.fetch_add(1, Relaxed);
        if spanning {
            s.spanning.fetch_add(1, Relaxed);
        }
        if copied != 0 {
            s.copy_bytes.fetch_add(copied, Relaxed);
        }
    }

    #[inline]
    pub fn record_write(&self, spanning: bool) {
        if spanning {
            self.shards[shard_index()].writes_spanning.fetch_add(1, Relaxed);
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
