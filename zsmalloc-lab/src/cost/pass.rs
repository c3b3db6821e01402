//! One timed pass: a batch of operations between two clock reads, with the minor faults and
//! (where a counter exists) the instructions it took. Nothing in the batch allocates, formats
//! or locks.

use super::hw::{self, InstructionCounter};
use crate::timing::{Clock, Samples};

/// The raw figures of one timed pass: totals over its batches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pass {
    pub ns: u64,
    pub batches: u64,
    pub ops: u64,
    pub faults: u64,
    pub instructions: Option<u64>,
}

impl Pass {
    /// Per operation, with the empty batch's cost (`overhead` per batch) taken off.
    pub fn per_op(&self, overhead_ns: f64) -> f64 {
        ((self.ns as f64 - overhead_ns * self.batches as f64) / self.ops.max(1) as f64).max(0.0)
    }

    /// Instructions per operation, with the empty batch's (`empty` per batch) taken off.
    pub fn instructions_per_op(&self, empty: Option<u64>) -> Option<f64> {
        let i = self.instructions? as f64 - empty? as f64 * self.batches as f64;
        Some((i / self.ops.max(1) as f64).max(0.0))
    }

    /// Minor faults per operation.
    pub fn faults_per_op(&self) -> f64 {
        self.faults as f64 / self.ops.max(1) as f64
    }
}

/// How passes are run: operations per batch, the hardware counter, callgrind collection.
#[derive(Clone, Copy)]
pub struct PassCtx<'a> {
    pub batch: usize,
    pub counter: Option<&'a InstructionCounter>,
    /// Under callgrind: each pass is collected and listed ([`super::instructions::pass`]).
    pub callgrind: bool,
}

/// Runs `op` on the first `batch` objects of `order` (cycled when it is shorter), one timed
/// batch; `op` answers whether the operation succeeded.
#[inline(never)]
pub fn timed_pass<F: FnMut(u32) -> bool>(
    order: &[u32],
    batch: usize,
    counter: Option<&InstructionCounter>,
    mut op: F,
) -> Option<Pass> {
    if order.is_empty() {
        return None;
    }
    let f0 = hw::minor_faults();
    let i0 = counter.and_then(|c| c.read());
    let t0 = Clock::now_ns();
    let mut ok = true;
    let mut pos = 0usize;
    for _ in 0..batch {
        // `pos` stays below `order.len()`: no bounds failure in the timed loop.
        ok &= op(order[pos]);
        pos += 1;
        if pos == order.len() {
            pos = 0;
        }
    }
    let t1 = Clock::now_ns();
    let i1 = counter.and_then(|c| c.read());
    let faults = hw::minor_faults().saturating_sub(f0);
    if !ok {
        return None;
    }
    let instructions = match (counter, i0, i1) {
        (Some(_), Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    Some(Pass { ns: t1.saturating_sub(t0), batches: 1, ops: batch as u64, faults, instructions })
}

/// The median of `v` (0 when empty).
pub fn median(v: &[f64]) -> f64 {
    Samples::of(v).map_or(0.0, |s| s.median)
}

/// `{min, median, max}` of `v`, rounded to 2 decimals (zeros when empty).
pub fn samples(v: &[f64]) -> Samples {
    Samples::of(v).unwrap_or(Samples { min: 0.0, median: 0.0, max: 0.0, n: 0 }).rounded(2)
}
