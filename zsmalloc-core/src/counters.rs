//! Read counters per class and write counters, sharded by thread index (`tid.rs`, cache-line padded) so
//! concurrent readers never share a counter line; summed on demand. Store/free counters live in
//! each class's locked state instead (`size_class.rs`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::tid::{self, Tid};

/// One thread index's write counter. An owned index's shard has a single writer (plain loads
/// and stores, no locked read-modify-write); shared ones are updated atomically.
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    writes_spanning: AtomicU64,
}

/// Adds `n` to `c`. An owned shard has a single writer, so a load and a store suffice.
#[inline(always)]
fn add(c: &AtomicU64, n: u64, owned: bool) {
    if owned {
        c.store(c.load(Relaxed) + n, Relaxed);
    } else {
        c.fetch_add(n, Relaxed);
    }
}

/// One (thread index, class) cell of read counters.
#[repr(C, align(32))]
#[derive(Default)]
struct ClassCell {
    reads: AtomicU64,
    spanning: AtomicU64,
    copy_bytes: AtomicU64,
}

/// Four cells: one cache line pair, so a thread's cells never share a line with another's.
#[repr(C, align(128))]
#[derive(Default)]
struct Line([ClassCell; 4]);

/// Read counters per class and write counters, sharded by thread so readers never share a
/// counter line. The pool's read counters are the sums over its classes.
pub(crate) struct AccessCounters {
    shards: Box<[Shard]>,
    /// Thread index `t`'s cell of class position `pos`: `(t << class_shift) + pos`.
    cells: Box<[Line]>,
    class_shift: u32,
    classes: usize,
}

impl AccessCounters {
    /// Counters for a pool of `classes` class positions.
    pub fn new(classes: usize) -> Self {
        let threads = tid::OWNED + tid::SHARED;
        let class_shift = classes.next_power_of_two().max(4).trailing_zeros();
        let lines = (threads << class_shift) / 4;
        AccessCounters {
            shards: (0..threads).map(|_| Shard::default()).collect(),
            cells: (0..lines).map(|_| Line::default()).collect(),
            class_shift,
            classes,
        }
    }

    #[inline(always)]
    fn cell(&self, t: usize, pos: usize) -> &ClassCell {
        let i = (t << self.class_shift) + pos;
        debug_assert!(pos < self.classes && i / 4 < self.cells.len());
        // SAFETY: `t` is a thread index (below OWNED + SHARED) and `pos` a class position (below
        // `classes`, at most 1 << class_shift), so `i` indexes a cell of `cells`, which are laid
        // out contiguously (`Line` is `repr(C)` of 4 cells, the boxed slice is contiguous).
        unsafe { &*(self.cells.as_ptr() as *const ClassCell).add(i) }
    }

    /// Records a read section on class position `pos`.
    #[inline]
    pub fn record_read(&self, pos: usize, spanning: bool, copied: u64) {
        self.record_read_by(Tid::current(), pos, spanning, copied);
    }

    /// `record_read` for the thread whose shard the caller looked up.
    #[inline(always)]
    pub(crate) fn record_read_by(&self, t: Tid, pos: usize, spanning: bool, copied: u64) {
        let owned = t.owned;
        let c = self.cell(t.index, pos);
        add(&c.reads, 1, owned);
        if spanning {
            add(&c.spanning, 1, owned);
        }
        if copied != 0 {
            add(&c.copy_bytes, copied, owned);
        }
    }

    #[inline]
    pub fn record_write(&self, spanning: bool) {
        if spanning {
            let t = Tid::current();
            add(&self.shards[t.index].writes_spanning, 1, t.owned);
        }
    }

    /// (reads, spanning reads, bytes copied) of class position `pos`.
    pub fn class_sum(&self, pos: usize) -> (u64, u64, u64) {
        (0..self.shards.len()).fold((0, 0, 0), |(r, s, b), t| {
            let c = self.cell(t, pos);
            (
                r + c.reads.load(Relaxed),
                s + c.spanning.load(Relaxed),
                b + c.copy_bytes.load(Relaxed),
            )
        })
    }

    /// (reads, spanning reads, bytes copied, spanning writes).
    pub fn sum(&self) -> (u64, u64, u64, u64) {
        let (r, s, c) = (0..self.classes).fold((0, 0, 0), |(r, s, b), pos| {
            let (cr, cs, cb) = self.class_sum(pos);
            (r + cr, s + cs, b + cb)
        });
        let w = self.shards.iter().map(|sh| sh.writes_spanning.load(Relaxed)).sum();
        (r, s, c, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let c = AccessCounters::new(5);
        std::thread::scope(|s| {
            for _ in 0..100 {
                s.spawn(|| {
                    for i in 0..1000 {
                        c.record_read(i % 5, i % 2 == 0, 3);
                        c.record_write(true);
                    }
                });
            }
        });
        assert_eq!(c.sum(), (100_000, 50_000, 300_000, 100_000));
        assert_eq!(c.class_sum(0), (20_000, 10_000, 60_000));
    }
}
