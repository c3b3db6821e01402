//! Frees, read from the traces: how often a free falls in the same class as the free before it
//! (and within 1, 4 and 16 classes), the classes being mainline's (4K pages, chain 8, merged),
//! each object's class that of the length it was stored with. Frees of the same class in a row
//! are what a batched or deferred release could take under one class lock.

use serde::Serialize;

use super::{Corpus, Progress};
use crate::error::LabResult;
use crate::trace_format::TraceOp;
use crate::trace_format::TraceReader;
use zsmalloc_core::{ClassTable, PoolConfig, HDR};

/// Distances (in class positions) the table counts frees within.
pub const WITHIN: [u32; 3] = [1, 4, 16];

#[derive(Debug, Clone, Serialize)]
pub struct FreeRow {
    pub trace: String,
    pub frees: u64,
    /// Frees of an id the trace never stored (not counted in the pairs).
    pub unknown: u64,
    /// Pairs of consecutive frees (other operations between them ignored).
    pub pairs: u64,
    pub same_class_pct: f64,
    pub within_1_pct: f64,
    pub within_4_pct: f64,
    pub within_16_pct: f64,
    /// Pairs with no other operation between them, and the share of those in the same class.
    pub adjacent_pairs: u64,
    pub adjacent_same_class_pct: f64,
}

pub fn study(corpus: &Corpus, p: &Progress) -> LabResult<Vec<FreeRow>> {
    let table = ClassTable::new(&PoolConfig::default())?;
    let mut rows = Vec::new();
    for (t, path) in corpus.page_traces() {
        p.step(&format!("frees: {}", t.program));
        rows.push(count(&Corpus::name(t), &path, &table)?);
    }
    Ok(rows)
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        (1000.0 * n as f64 / of as f64).round() / 10.0
    }
}

/// The counts of one trace.
pub fn count(name: &str, path: &std::path::Path, table: &ClassTable) -> LabResult<FreeRow> {
    let mut reader = TraceReader::open(path)?;
    let mut class_of = std::collections::HashMap::<u64, u32>::new();
    let (mut frees, mut unknown, mut pairs, mut same) = (0u64, 0u64, 0u64, 0u64);
    let mut within = [0u64; WITHIN.len()];
    let (mut adjacent, mut adjacent_same) = (0u64, 0u64);
    let mut last: Option<u32> = None;
    let mut last_was_free = false;
    let class = |len: usize| table.position(len + HDR as usize) as u32;
    while let Some(op) = reader.next_op()? {
        let mut is_free = false;
        match op {
            TraceOp::Store { id, len } | TraceOp::Malloc { id, len } => {
                class_of.insert(id, class(len));
            }
            TraceOp::Move { from, to } => {
                if let Some(c) = class_of.remove(&from) {
                    class_of.insert(to, c);
                }
            }
            TraceOp::Free { id } => {
                is_free = true;
                frees += 1;
                match class_of.remove(&id) {
                    None => {
                        unknown += 1;
                        last = None;
                    }
                    Some(c) => {
                        if let Some(prev) = last {
                            pairs += 1;
                            let d = prev.abs_diff(c);
                            same += u64::from(d == 0);
                            for (k, w) in WITHIN.iter().enumerate() {
                                within[k] += u64::from(d <= *w);
                            }
                            if last_was_free {
                                adjacent += 1;
                                adjacent_same += u64::from(d == 0);
                            }
                        }
                        last = Some(c);
                    }
                }
            }
            _ => {}
        }
        last_was_free = is_free;
    }
    Ok(FreeRow {
        trace: name.to_string(),
        frees,
        unknown,
        pairs,
        same_class_pct: pct(same, pairs),
        within_1_pct: pct(within[0], pairs),
        within_4_pct: pct(within[1], pairs),
        within_16_pct: pct(within[2], pairs),
        adjacent_pairs: adjacent,
        adjacent_same_class_pct: pct(adjacent_same, adjacent),
    })
}
