//! From a phase's timed passes to the report's rows: per operation, the phase's empty batch
//! taken off, `{min, median, max}` over rounds.

use super::fill::Filled;
use super::model::{PoolFacts, ReadRow, WriteRow};
use super::options::Mode;
use super::pass::{median, samples, Pass};
use super::rounds::{ReadRound, WritePath, WriteRound};

/// Where a row goes in the report: (corpus, configuration, mode) indexes, the order rows have
/// always been listed in whatever phase measured them.
pub type RowKey = (usize, usize, usize);

/// The rows of one phase.
pub struct PhaseRows {
    /// The empty batch's passes, one per round.
    pub empties: Vec<Pass>,
    /// Its cost per batch, ns (median over rounds).
    overhead_ns: f64,
    /// Its instructions per batch, when counted.
    empty_instructions: Option<u64>,
    scope: Option<&'static str>,
    pub reads: Vec<(RowKey, ReadRow)>,
    pub writes: Vec<(RowKey, WriteRow)>,
    pub pools: Vec<(RowKey, PoolFacts)>,
}

impl PhaseRows {
    pub fn new(empties: Vec<Pass>, scope: Option<&'static str>) -> PhaseRows {
        let overhead_ns = median(&per_batch_ns(&empties));
        let counted: Vec<f64> = empties
            .iter()
            .filter_map(|p| p.instructions.map(|i| i as f64 / p.batches.max(1) as f64))
            .collect();
        let empty_instructions = (!counted.is_empty()).then(|| median(&counted).round() as u64);
        PhaseRows {
            empties,
            overhead_ns,
            empty_instructions,
            scope,
            reads: Vec::new(),
            writes: Vec::new(),
            pools: Vec::new(),
        }
    }

    /// Instructions per operation over `passes` (median), when every pass counted them.
    fn instructions(&self, passes: &[Pass]) -> Option<u64> {
        let v: Vec<f64> =
            passes.iter().filter_map(|p| p.instructions_per_op(self.empty_instructions)).collect();
        (v.len() == passes.len() && !v.is_empty()).then(|| median(&v).round() as u64)
    }

    fn per_op(&self, passes: &[Pass]) -> Vec<f64> {
        passes.iter().map(|p| p.per_op(self.overhead_ns)).collect()
    }

    /// The rows of `f` read in `mode`, one per group, from its rounds.
    pub fn add_reads(&mut self, at: RowKey, f: &Filled<'_>, mode: Mode, rounds: &[ReadRound]) {
        for (gi, g) in f.groups.iter().enumerate() {
            let section: Vec<Pass> = rounds.iter().map(|r| r[gi].section).collect();
            let read: Vec<Pass> = rounds.iter().map(|r| r[gi].read).collect();
            let zswap: Vec<Pass> =
                rounds.iter().map(|r| r[gi].zswap.unwrap_or(r[gi].read)).collect();
            let sv = self.per_op(&section);
            let rv = self.per_op(&read);
            let dv: Vec<f64> = sv.iter().zip(&rv).map(|(s, r)| (r - s).max(0.0)).collect();
            let faults: Vec<f64> = section.iter().map(Pass::faults_per_op).collect();
            let row = ReadRow {
                label: f.facts.label.clone(),
                compressor: f.facts.compressor.clone(),
                mode: mode.name().to_string(),
                kind: g.kind,
                spanning: g.spanning,
                objects: g.order.len() as u64,
                reads: section.first().map_or(0, |p| p.ops),
                ns_per_section: samples(&sv),
                ns_per_decompress: samples(&dv),
                ns_per_read: samples(&rv),
                ns_per_read_zswap: samples(&self.per_op(&zswap)),
                zswap_copies: rounds.first().is_some_and(|r| r[gi].zswap.is_some()),
                instructions_per_section: self.instructions(&section),
                instructions_per_read: self.instructions(&read),
                instructions_scope: self.scope,
                minor_faults_per_section: round4(median(&faults)),
                mean_len: (g.mean_len * 10.0).round() / 10.0,
            };
            self.reads.push((at, row));
        }
    }

    /// The write rows of `f` (one per path) and its pool facts, from its rounds.
    pub fn add_writes(&mut self, at: RowKey, f: &Filled<'_>, rounds: &[WriteRound]) {
        for (pi, path) in WritePath::ALL.into_iter().enumerate() {
            let passes: Vec<Pass> = rounds.iter().map(|r| r[pi]).collect();
            let faults: Vec<f64> = passes.iter().map(Pass::faults_per_op).collect();
            let row = WriteRow {
                label: f.facts.label.clone(),
                compressor: f.facts.compressor.clone(),
                path: path.name(),
                writes: passes.first().map_or(0, |p| p.ops),
                ns_per_write: samples(&self.per_op(&passes)),
                instructions_per_write: self.instructions(&passes),
                instructions_scope: self.scope,
                minor_faults_per_write: round4(median(&faults)),
            };
            self.writes.push((at, row));
        }
        self.pools.push((at, f.facts.clone()));
    }
}

/// The empty batch's cost per batch of each pass, ns.
pub fn per_batch_ns(empties: &[Pass]) -> Vec<f64> {
    empties.iter().map(|p| p.ns as f64 / p.batches.max(1) as f64).collect()
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}
