//! What a free costs in the pool, by the parts the code can time apart.
//!
//! `Pool::free` looks the handle's zspage up, takes its class lock, pushes the object on the
//! zspage's freelist and, when that empties the zspage, releases it there and then, under the
//! same lock (mainline's `free_zspage`). From outside, two of those parts can be timed apart:
//! the release (frees that empty their zspage against frees that do not) and the class lock
//! under two threads (both freeing in one class against each in its own). The lookup cannot:
//! it is the first step of the same call, with no entry point of its own. Nor can a deferred
//! release be measured: the core releases an empty zspage at once, and defers only one a reader
//! still pins (to the next free or compaction of its class); there is no setting that defers
//! every release. What deferring would take off a free's path is the release's own time, the
//! table's `release` row.

use std::time::Instant;

use serde::Serialize;

use super::{Progress, StudyOptions};
use crate::error::{LabError, LabResult};
use zsmalloc_core::{Handle, Pool, PoolConfig};

/// Frees timed per measurement by default.
pub const DEFAULT_OPS: usize = 50_000;
/// Measurements of each kind; the median is reported.
const ROUNDS: usize = 5;
/// The object lengths: two classes of several objects per zspage.
const LEN_A: usize = 1000;
const LEN_B: usize = 2000;

#[derive(Debug, Clone, Serialize)]
pub struct FreeCostRow {
    /// What was timed.
    pub case: String,
    pub threads: u32,
    /// Frees timed per measurement (each thread's, under two threads).
    pub frees: u64,
    /// Median over the measurements of the wall time per free.
    pub ns_per_free: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct FreeCost {
    pub rows: Vec<FreeCostRow>,
    /// The parts derived from the rows: release = (emptying - keeping), lock contention = (two
    /// threads in one class - two threads in two classes), nanoseconds per free.
    pub release_ns: Option<f64>,
    pub lock_contention_ns: Option<f64>,
    /// What the code cannot split.
    pub cannot_split: Vec<String>,
}

/// Objects stored in a fresh pool, split by whether freeing them empties their zspage: for
/// each zspage, its first object is kept for last.
struct Filled<'p> {
    keeping: Vec<Handle<&'p Pool>>,
    emptying: Vec<Handle<&'p Pool>>,
}

fn fill(pool: &Pool, len: usize, n: usize) -> LabResult<Filled<'_>> {
    let data = vec![0x5au8; len];
    let mut seen = std::collections::HashSet::new();
    let (mut keeping, mut emptying) = (Vec::with_capacity(n), Vec::new());
    for _ in 0..n {
        let h = pool.store(&data).map_err(LabError::from)?;
        let z = h.location().map_err(LabError::from)?.zspage;
        if seen.insert(z) {
            emptying.push(h);
        } else {
            keeping.push(h);
        }
    }
    Ok(Filled { keeping, emptying })
}

/// Frees `handles`, giving the wall nanoseconds per free.
fn free_all(handles: Vec<Handle<&Pool>>) -> LabResult<f64> {
    let n = handles.len().max(1);
    let t = Instant::now();
    for h in handles {
        h.free().map_err(LabError::from)?;
    }
    Ok(t.elapsed().as_nanos() as f64 / n as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2] * 10.0).round() / 10.0
}

/// Serial frees: those that keep their zspage, then those that empty it.
fn serial(ops: usize) -> LabResult<(f64, f64, u64)> {
    let (mut keep, mut empty, mut n_empty) = (Vec::new(), Vec::new(), 0);
    for _ in 0..ROUNDS {
        let pool = Pool::new(PoolConfig::default()).map_err(LabError::from)?;
        let f = fill(&pool, LEN_A, ops)?;
        n_empty = f.emptying.len() as u64;
        keep.push(free_all(f.keeping)?);
        empty.push(free_all(f.emptying)?);
    }
    Ok((median(keep), median(empty), n_empty))
}

/// Two threads freeing at once (zspages kept): both in one class, or each in its own.
fn two_threads(ops: usize, same_class: bool) -> LabResult<f64> {
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        let pool = Pool::new(PoolConfig::default()).map_err(LabError::from)?;
        let a = fill(&pool, LEN_A, ops)?;
        let b = fill(&pool, if same_class { LEN_A } else { LEN_B }, ops)?;
        let times: Vec<LabResult<f64>> = std::thread::scope(|s| {
            let ta = s.spawn(|| free_all(a.keeping));
            let tb = s.spawn(|| free_all(b.keeping));
            [ta, tb]
                .map(|t| t.join().unwrap_or_else(|_| Err(LabError::runtime("a thread died"))))
                .into_iter()
                .collect()
        });
        let times: Vec<f64> = times.into_iter().collect::<LabResult<_>>()?;
        samples.push(times.iter().sum::<f64>() / times.len() as f64);
        drop((a.emptying, b.emptying));
    }
    Ok(median(samples))
}

pub fn study(opts: &StudyOptions, p: &Progress) -> LabResult<FreeCost> {
    let ops = opts.free_ops;
    let mut cost = FreeCost {
        cannot_split: vec![
            "lookup: the handle's zspage is found inside the free itself, no entry point of its \
             own"
            .into(),
            "deferred release: the core defers only the release of a zspage a reader pins; no \
             setting defers every release, so only its share (release_ns) is measured"
                .into(),
        ],
        ..FreeCost::default()
    };
    if ops == 0 {
        return Ok(cost);
    }
    p.step(&format!("free cost: {ops} frees, serial and under 2 threads"));
    let (keep, empty, n_empty) = serial(ops)?;
    let same = two_threads(ops, true)?;
    let apart = two_threads(ops, false)?;
    let row = |case: &str, threads, frees: u64, ns| FreeCostRow {
        case: case.into(),
        threads,
        frees,
        ns_per_free: ns,
    };
    let kept = ops as u64 - n_empty;
    cost.rows = vec![
        row("free, zspage kept", 1, kept, keep),
        row("free, zspage emptied and released", 1, n_empty, empty),
        row("free, zspage kept, 2 threads in one class", 2, kept, same),
        row("free, zspage kept, 2 threads in two classes", 2, kept, apart),
    ];
    cost.release_ns = Some(((empty - keep) * 10.0).round() / 10.0);
    cost.lock_contention_ns = Some(((same - apart) * 10.0).round() / 10.0);
    Ok(cost)
}
