//! The study's plan, made before any pool is filled: which pools exist (a configuration may
//! refuse a read mode), how many copies of the corpus each holds, and in which phase.
//!
//! Phases: the pools of one corpus (page size and compressor), one per configuration and pool
//! read mode, are filled, measured round by round (interleaved, A B A B) and freed before the
//! next phase; so the configurations that a summary compares, and the read modes that its rows
//! compare, are always measured side by side in the same rounds (a mode measured in a phase of
//! its own met another machine: in-place reads, the same code in every mode, came out up to 2x
//! apart), and memory holds one phase's pools at a time, never every pool of the run.
//!
//! Copies: every pool of a corpus holds it the same number of times (so pages compare), enough
//! to store the target size and to give each regular row a batch of distinct objects, at most
//! [`MAX_REPLICA_FACTOR`] times the count the target asks for. The counts come from a probe of
//! each configuration: the copies the target asks for, stored in a pool that is then freed (one
//! more for zblock and malloc, whose growth per copy is measured rather than read from a class
//! table).

use zsmalloc_core::{Backend, ReadMode, HDR};

use super::compressed::Compressed;
use super::fill::{make_pool, Filled, PoolRefusal, RegularCounts, LAB_BYTES_PER_OBJECT};
use super::model::{Kind, Skipped};
use super::options::{CostOptions, Mode};
use crate::error::LabResult;

/// Most times the corpus is stored to give every row a batch of distinct objects, relative to
/// the count the target size asks for.
pub const MAX_REPLICA_FACTOR: u64 = 16;

/// Released pages a pool keeps ready for reuse (the core's page cache, at most 2 MiB).
const ARENA_CACHE_BYTES: u64 = 2 << 20;

/// Heap metadata a pool keeps per object at most (its zspages' or blocks' records and
/// handle tables, which grow in chunks): about 35 bytes measured for zsmalloc and zblock.
const METADATA_BYTES_PER_OBJECT: u64 = 64;

/// One pool of a phase.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    /// Index of its configuration in [`CostOptions::specs`].
    pub spec: usize,
    pub pool_mode: ReadMode,
    /// The study modes read on this pool, in the order asked.
    pub modes: Vec<Mode>,
    /// Its write rows are measured on this pool (the configuration's first pool).
    pub writes: bool,
    /// Estimated pool pages once filled.
    pub pages: u64,
    /// Estimated memory of the filled pool: its pages, its metadata and the lab's records of
    /// its objects.
    pub bytes: u64,
}

/// A group of pools filled, measured and freed together.
#[derive(Debug, Clone)]
pub struct PoolPhase {
    /// Index of the corpus (page size and compressor).
    pub corpus: usize,
    /// By configuration, then pool read mode.
    pub pools: Vec<PoolPlan>,
    /// Copies of the corpus in each pool.
    pub replicas: u64,
    /// What a write batch adds to a pool before it is freed (one at a time).
    pub write_batch_bytes: u64,
}

impl PoolPhase {
    /// Estimated peak memory of the phase's pools.
    pub fn bytes(&self) -> u64 {
        let writes = self.pools.iter().any(|p| p.writes);
        self.pools.iter().map(|p| p.bytes).sum::<u64>()
            + if writes { self.write_batch_bytes } else { 0 }
    }
}

/// What one configuration's probe found.
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// Copies the target size asks for.
    target_replicas: u64,
    /// Regular objects with that many copies stored.
    counts: RegularCounts,
    growth: Growth,
    /// The pool's heap metadata with the probe's copies stored.
    metadata_bytes: u64,
}

/// The plan of a whole run.
pub struct StudyPlan {
    pub phases: Vec<PoolPhase>,
    pub skipped: Vec<Skipped>,
    /// The modes are measured in phases of their own ([`StudyPlan::split_modes`]).
    pub modes_apart: bool,
}

impl StudyPlan {
    /// Decides pools and phases for `corpora` (as built, in order: page size, then compressor).
    pub fn new(opts: &CostOptions, corpora: &[Compressed]) -> LabResult<StudyPlan> {
        let pool_modes = pool_modes(&opts.modes);
        // Which pools can be made, once per configuration and pool read mode.
        let refusals: Vec<Vec<Option<PoolRefusal>>> = opts
            .specs
            .iter()
            .map(|s| pool_modes.iter().map(|&m| make_pool(s, m).err()).collect())
            .collect();
        let mut skipped = Vec::new();
        let mut phases = Vec::new();
        for (ci, corpus) in corpora.iter().enumerate() {
            let specs: Vec<usize> = (0..opts.specs.len())
                .filter(|&i| opts.specs[i].config.page_size as usize == corpus.page)
                .collect();
            for &si in &specs {
                for &m in &opts.modes {
                    let pm = pool_modes.iter().position(|&p| p == m.pool_mode()).unwrap_or(0);
                    let Some(refusal) = &refusals[si][pm] else { continue };
                    // A refused mode is skipped, unless it is the only one asked for.
                    if opts.modes.len() == 1 {
                        return Err(refusal.for_mode(m));
                    }
                    skipped.push(Skipped {
                        mode: m.name().to_string(),
                        label: opts.specs[si].label.clone(),
                        reason: refusal.for_mode(m).to_string(),
                    });
                }
            }
            let accepted = |si: usize| -> Vec<ReadMode> {
                (0..pool_modes.len())
                    .filter(|&pm| refusals[si][pm].is_none())
                    .map(|pm| pool_modes[pm])
                    .collect()
            };
            let mut probes = Vec::new();
            for &si in &specs {
                if let Some(&first) = accepted(si).first() {
                    probes.push((si, probe(opts, si, first, corpus)?));
                }
            }
            let replicas =
                corpus_replicas(probes.iter().map(|p| p.1), opts.batch, opts.pool_bytes_fixed);
            let objects = corpus.objects() as u64 * replicas;
            let page = corpus.page as u64;
            // A batch of stores of objects of the corpus's mean size, at most half wasted.
            let mean = corpus.bytes_per_replica(corpus.page).div_ceil(corpus.objects() as u64);
            let write_batch_bytes = 2 * opts.batch as u64 * (mean + LAB_BYTES_PER_OBJECT);
            let mut pools = Vec::new();
            for &(si, p) in &probes {
                for &pm in &accepted(si) {
                    pools.push(PoolPlan {
                        spec: si,
                        pool_mode: pm,
                        modes: opts.modes.iter().copied().filter(|m| m.pool_mode() == pm).collect(),
                        writes: accepted(si).first() == Some(&pm),
                        pages: p.pages_for(replicas),
                        bytes: p.pages_for(replicas) * page
                            + p.metadata_bytes
                            + objects * (LAB_BYTES_PER_OBJECT + METADATA_BYTES_PER_OBJECT)
                            + ARENA_CACHE_BYTES,
                    });
                }
            }
            if !pools.is_empty() {
                phases.push(PoolPhase { corpus: ci, pools, replicas, write_batch_bytes });
            }
        }
        Ok(StudyPlan { phases, skipped, modes_apart: false })
    }

    /// Splits every phase into one per pool read mode, for a machine without the memory to
    /// hold every mode's pools at once; `false` when no phase has two pool modes.
    pub fn split_modes(&mut self) -> bool {
        let mut phases = Vec::new();
        for ph in &self.phases {
            let mut modes: Vec<ReadMode> = Vec::new();
            for p in &ph.pools {
                if !modes.contains(&p.pool_mode) {
                    modes.push(p.pool_mode);
                }
            }
            for m in modes {
                let pools = ph.pools.iter().filter(|p| p.pool_mode == m).cloned().collect();
                phases.push(PoolPhase { pools, ..ph.clone() });
            }
        }
        let split = phases.len() > self.phases.len();
        if split {
            self.phases = phases;
            self.modes_apart = true;
        }
        split
    }
}

/// The pool read modes behind `modes`, each once, in the order first asked.
fn pool_modes(modes: &[Mode]) -> Vec<ReadMode> {
    let mut out = Vec::new();
    for m in modes {
        if !out.contains(&m.pool_mode()) {
            out.push(m.pool_mode());
        }
    }
    out
}

/// Copies of the corpus for every pool of it: the most any configuration needs, at most the
/// cap of the configuration with the smallest one; with a `fixed` size (`--pool-mib`), the
/// most the target asks for in any configuration, so every pool reaches it and none grows
/// further for the rows' batches.
fn corpus_replicas(probes: impl Iterator<Item = Probe> + Clone, batch: usize, fixed: bool) -> u64 {
    let target = probes.clone().map(|p| p.target_replicas).max().unwrap_or(1);
    if fixed {
        return target.max(1);
    }
    let want = probes
        .clone()
        .map(|p| p.counts.replicas_for_batch(batch, p.target_replicas).max(p.target_replicas))
        .max()
        .unwrap_or(1);
    let cap = probes.map(|p| p.target_replicas * MAX_REPLICA_FACTOR).min().unwrap_or(1);
    want.min(cap).max(1)
}

/// Stores in a pool of configuration `si` the copies of `corpus` the target asks for, as the
/// run will first (then frees it): the regular rows' counts there, and how pages grow.
fn probe(opts: &CostOptions, si: usize, mode: ReadMode, corpus: &Compressed) -> LabResult<Probe> {
    let spec = &opts.specs[si];
    let pool = make_pool(spec, mode).map_err(|e| e.for_mode(Mode::Copy))?;
    let huge = pool.huge_class_size();
    let target_replicas = opts.pool_bytes.div_ceil(corpus.bytes_per_replica(huge).max(1)).max(1);
    let mut f = Filled::new(spec, pool, corpus, target_replicas + 1)?;
    f.extend_to(target_replicas)?;
    let counts = f.regular_counts();
    let growth = match zsmalloc_growth(&f, target_replicas) {
        Some(g) => g,
        None => {
            // zblock and malloc: what one more copy adds, with a margin.
            let held = f.pool.total_pages();
            f.extend_to(target_replicas + 1)?;
            let step = f.pool.total_pages().saturating_sub(held) as f64;
            let per_replica = step.max(held as f64 / target_replicas as f64) * 1.05;
            Growth { per_replica, partial_pages: (held as f64 / target_replicas as f64) as u64 }
        }
    };
    let (meta, handles) = f.pool.metadata_bytes();
    Ok(Probe { target_replicas, counts, growth, metadata_bytes: (meta + handles) as u64 })
}

/// How a pool's pages grow with the copies of the corpus it holds: at most `per_replica`
/// pages a copy, plus `partial_pages` at most in zspages not yet full.
#[derive(Debug, Clone, Copy)]
struct Growth {
    per_replica: f64,
    partial_pages: u64,
}

/// zsmalloc's growth, exact from the class table: each object takes its share of its class's
/// zspage (pages per zspage over objects per zspage), and since nothing is freed, each class
/// has at most one zspage not yet full. `None` for the other backends.
fn zsmalloc_growth(f: &Filled<'_>, copies: u64) -> Option<Growth> {
    let z = f.pool.as_zsmalloc()?;
    let table = z.class_table();
    let mut per_replica = 0.0;
    let mut used = std::collections::BTreeMap::new();
    for p in f.placed.iter().filter(|p| p.kind != Kind::Refused) {
        let c = &table.classes()[table.position(p.len as usize + HDR as usize)];
        per_replica += f64::from(c.pages_per_zspage) / f64::from(c.objs_per_zspage.max(1));
        used.insert(c.index, u64::from(c.pages_per_zspage));
    }
    Some(Growth { per_replica: per_replica / copies as f64, partial_pages: used.values().sum() })
}

impl Probe {
    /// Pages of a pool holding `replicas` copies, at most.
    fn pages_for(self, replicas: u64) -> u64 {
        (replicas as f64 * self.growth.per_replica).ceil() as u64 + self.growth.partial_pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(target: u64, spanning: u64, in_place: u64) -> Probe {
        Probe {
            target_replicas: target,
            counts: RegularCounts { spanning, in_place },
            growth: Growth { per_replica: 2.5, partial_pages: 10 },
            metadata_bytes: 0,
        }
    }

    #[test]
    fn every_pool_of_a_corpus_holds_the_most_copies_any_needs_within_the_cap() {
        // 10^4 objects a batch; 1500 spanning objects in 3 copies need 20 copies.
        let ps = [probe(3, 1500, 12000), probe(4, 8000, 12000)];
        assert_eq!(corpus_replicas(ps.iter().copied(), 10_000, false), 20);
        // A size the user gave: the target's copies, whatever the rows would want.
        assert_eq!(corpus_replicas(ps.iter().copied(), 10_000, true), 4);
        // A configuration with 30 spanning objects in 3 copies would need 1000: capped at 16 x 3.
        let ps = [probe(3, 30, 12000), probe(4, 8000, 12000)];
        assert_eq!(corpus_replicas(ps.iter().copied(), 10_000, false), 48);
        // The target alone.
        let ps = [probe(30, 150_000, 150_000)];
        assert_eq!(corpus_replicas(ps.iter().copied(), 10_000, false), 30);
        assert_eq!(probe(1, 1, 1).pages_for(1), 13);
        assert_eq!(probe(1, 1, 1).pages_for(4), 20);
    }

    #[test]
    fn pool_modes_are_shared_by_copy_and_sg() {
        assert_eq!(pool_modes(&[Mode::Sg, Mode::Map, Mode::Copy]), [ReadMode::Copy, ReadMode::Map]);
    }
}
