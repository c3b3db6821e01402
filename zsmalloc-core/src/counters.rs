//! Read and write counters, sharded by thread index (`tid.rs`, cache-line padded) so
//! concurrent readers never share a counter line; summed on demand. Store/free counters live in
//! each class's locked state instead (`size_class.rs`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::tid::{self, Tid};

/// One thread index's counters. An owned index's shard has a single writer (plain loads and
/// stores, no locked read-modify-write); shared ones are updated atomically.
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

/// Read and write counters, sharded by thread so readers never share a counter line.
pub(crate) struct AccessCounters {
    shards: Box<[Shard]>,
}

impl AccessCounters {
    pub fn new() -> Self {
        AccessCounters { shards: (0..tid::OWNED + tid::SHARED).map(|_| Shard::default()).collect() }
    }

    #[inline]
    pub fn record_read(&self, spanning: bool, copied: u64) {
        self.record_read_by(Tid::current(), spanning, copied);
    }

    /// `record_read` for the thread whose shard the caller looked up.
    #[inline]
    pub(crate) fn record_read_by(&self, t: Tid, spanning: bool, copied: u64) {
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
            let t = Tid::current();
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
