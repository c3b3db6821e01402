//! What a run's driver counted and hands back.

use crate::timeline::Sample;
use crate::timing::CpuTimer;

/// Operation counters of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Successful stores (and mallocs).
    pub stores: u64,
    pub frees: u64,
    /// Read sections (copy and scatter-gather).
    pub reads: u64,
    /// Stores the pool refused (memory limit, bad length).
    pub store_failures: u64,
    /// Trace operations the pool refused (unknown handle, wrong length, double use).
    pub op_errors: u64,
    pub compactions: u64,
    /// Stores of objects of `huge_class_size` bytes or more: pages zram stores whole
    /// (`ZRAM_HUGE`), ever (zram's `huge_pages_since`).
    pub huge_stores: u64,
    /// Spanning reads detected the kernel way, and the object bytes they copied.
    pub kernel_spanning: u64,
    pub kernel_memcpy: u64,
    /// Same-filled pages seen (stored or skipped), and stores of them into the pool.
    pub same_seen: u64,
}

/// The pool's state when its page count peaked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peak {
    pub pages: u64,
    /// Live objects and their bytes after the last store that left the pool at its peak.
    pub objects: u64,
    pub bytes: u64,
}

/// What a finished driver hands back.
pub struct RunOutcome {
    pub counters: Counters,
    pub samples: Vec<Sample>,
    /// Same-filled pages currently kept outside the pool.
    pub same_pages: u64,
    /// Thread CPU time of the pool calls (the timed phase).
    pub cpu: CpuTimer,
    pub peak: Peak,
    /// Per class, in the pool's class order (empty without a class table): bytes the live
    /// objects lose to class merging (the class they are in is larger than the class of their
    /// size would be without merging).
    pub merge_waste: Vec<u64>,
    /// Live objects of `huge_class_size` bytes or more: the pages zram would hold whole
    /// (zram's `huge_pages`; never above [`Counters::huge_stores`]).
    pub huge_pages: u64,
}
