//! `zsmalloc cost`: what a read of a spanning object costs in CPU time, once decompression is
//! counted, per configuration and per read mode — the question of the thread "zsmalloc:
//! chain-length configuration should consider other metrics" (January 2026).
//!
//! Pages of a corpus ([`corpus::Source`]) are compressed with the reference libraries
//! ([`zsmalloc_codec`]) and stored as zram stores them ([`crate::zram_page`]: same-filled pages kept
//! outside the pool, pages that do not compress below `huge_class_size` stored raw). The corpus
//! is stored over and over until the pool holds the target size (twice the last-level cache by
//! default, within a bound) and every row has a batch of distinct objects. Then, per
//! configuration, compressor and mode, objects are read in a seeded random order in timed
//! batches of at least 10^4 operations per clock read, the caches evicted before each pass:
//!
//! - the read section alone (begin + end), split into spanning and in-place objects, huge and
//!   incompressible objects in rows of their own;
//! - the section plus decompressing the object into a page beside it (the zram consumer:
//!   decompress from the returned pointer) — the headline, since a copy warms the payload for
//!   the decompressor; `ns_per_decompress` is the difference of the two;
//! - the zswap consumer where it differs: zswap cannot put a virtually mapped address in a
//!   scatter list and copies such an object into its buffer first (modes `map`, `contiguous`);
//! - the two write paths, `store` (`zs_store`) and `malloc_write` (`zs_malloc` +
//!   `zs_obj_write`), each batch freed untimed.
//!
//! The empty batch's cost is measured the same way, subtracted and reported
//! (`timer_overhead_ns`). Rounds are interleaved (A B A B) with [`crate::timing::interleave`]
//! within a phase (one corpus and pool read mode: [`plan`]) and reported as
//! `{min, median, max}`. Nothing in a timed batch allocates, formats or locks. The memory the
//! run takes is planned and announced before any pool is filled ([`memory`]).
//!
//! By phase of a run, one file each: [`options`] (what is asked), [`compressed`] (the corpus
//! compressed), [`plan`] (pools, copies, phases), [`memory`] (the plan's memory and its
//! limits), [`fill`] (a pool filled and classified), [`pass`] (one timed batch), [`rounds`]
//! (a read or write round), [`phase`] (a phase's jobs interleaved), [`figures`] (rows from
//! passes), [`model`] (the report's data), [`report`] (its forms).
//!
//! `copy`, `map` and `contiguous` are the pool's read modes (a configuration that refuses one
//! reports it as skipped, with the core's reason); `sg` is a scatter-gather read of a `copy`
//! pool whose two segments the consumer linearises, as the crypto layer's scomp fallback does.

pub mod compressed;
pub mod corpus;
pub mod figures;
pub mod fill;
pub mod handle_memory;
pub mod hw;
pub mod instructions;
pub mod memory;
pub mod model;
pub mod options;
pub mod pass;
pub mod phase;
pub mod plan;
pub mod report;
pub mod rounds;

use std::cell::RefCell;
use std::sync::Arc;

pub use memory::{parse_memory, MemoryPlan};
pub use model::{
    CorpusFacts, CostReport, Environment, HandleMemory, Kind, PoolFacts, ReadRow, Skipped, WriteRow,
};
pub use options::{
    default_pool_bytes, default_pool_bytes_for, default_specs, evict_bytes_for, parse_modes,
    CostOptions, InstructionSource, Mode, DEFAULT_MAX_PAGES, DEFAULT_SYNTHETIC_PAGES,
    FALLBACK_POOL_BYTES, MIN_BATCH,
};
pub use pass::{timed_pass, Pass};

use crate::error::{LabError, LabResult};
use crate::progress::{Progress, ProgressSink};
use compressed::Compressed;
use figures::PhaseRows;
use phase::{Counting, RunCtx};
use plan::StudyPlan;

/// Runs the study.
pub fn run(opts: &CostOptions, sink: &ProgressSink) -> LabResult<CostReport> {
    opts.check()?;
    memory::check_corpus(opts)?;
    let counting = Counting::new(opts.instructions);
    let load_before = hw::load_average();
    let corpora = compress_corpora(opts)?;
    let handle_memory = handle_memory::measure(opts, &corpora)?;
    let (plan, memory) = plan_within_memory(opts, &corpora)?;
    if plan.phases.is_empty() {
        let why: Vec<String> = plan
            .skipped
            .iter()
            .map(|s| format!("{} ({}): {}", s.mode, s.label, s.reason))
            .collect();
        return Err(LabError::usage(format!("no mode can run: {}", why.join("; "))));
    }
    eprint!("{}", memory.describe());
    memory.check(opts.max_memory)?;

    // Under callgrind the caches do not matter (and the buffer would cost minutes).
    let evict = if counting.callgrind { 0 } else { opts.evict_bytes as usize };
    let evictor = RefCell::new(hw::Evictor::new(evict));
    let progress = RefCell::new(Progress::new(sink, "cost"));
    let jobs: usize = plan.phases.iter().map(phase::jobs_per_round).sum();
    progress.borrow_mut().set_total((jobs * opts.repeat) as u64);
    let cx = RunCtx { opts, counting: &counting, evictor: &evictor, progress: &progress };
    let mut phases = Vec::new();
    for ph in &plan.phases {
        phases.push(phase::run(ph, &corpora[ph.corpus], &cx)?);
    }
    progress.borrow_mut().finish();
    drop(evictor);

    let environment = environment(opts, &counting, &memory, &phases, load_before);
    Ok(assemble(phases, &corpora, plan.skipped, handle_memory, environment))
}

/// The memory plan of a run of `opts` without running it: the corpus is read and compressed
/// and each configuration probed, as a run does before it announces its plan.
pub fn memory_plan(opts: &CostOptions) -> LabResult<MemoryPlan> {
    opts.check()?;
    memory::check_corpus(opts)?;
    let corpora = compress_corpora(opts)?;
    Ok(plan_within_memory(opts, &corpora)?.1)
}

/// The plan and its memory: every mode of a corpus in one phase (measured in the same rounds),
/// unless that needs more memory than the run may take; then a phase per pool read mode, as
/// the plan then says.
fn plan_within_memory(
    opts: &CostOptions,
    corpora: &[Compressed],
) -> LabResult<(StudyPlan, MemoryPlan)> {
    let mut plan = StudyPlan::new(opts, corpora)?;
    let mut memory = MemoryPlan::new(opts, corpora, &plan);
    if memory.check(opts.max_memory).is_err() && plan.split_modes() {
        memory = MemoryPlan::new(opts, corpora, &plan);
    }
    Ok((plan, memory))
}

/// The corpus per page size, compressed per compressor (in that order); the pages of a page
/// size are held once, shared by its compressors.
fn compress_corpora(opts: &CostOptions) -> LabResult<Vec<Compressed>> {
    let mut page_sizes: Vec<u32> = opts.specs.iter().map(|s| s.config.page_size).collect();
    page_sizes.sort_unstable();
    page_sizes.dedup();
    let source = opts.source.describe();
    let mut corpora = Vec::new();
    for &ps in &page_sizes {
        let raw = Arc::new(opts.source.load(ps as usize, opts.max_pages)?);
        if raw.is_empty() {
            return Err(LabError::usage(format!("{source}: no pages to read")));
        }
        for &a in &opts.compressors {
            corpora.push(Compressed::build(raw.clone(), ps as usize, a, opts.level, &source)?);
        }
    }
    Ok(corpora)
}

/// The machine and method, with the pools as filled and the memory as planned and measured.
fn environment(
    opts: &CostOptions,
    counting: &Counting,
    memory: &MemoryPlan,
    phases: &[PhaseRows],
    load_before: Option<f64>,
) -> Environment {
    let held =
        phases.iter().flat_map(|p| &p.pools).map(|(_, f)| f.pages * u64::from(f.config.page_size));
    let lo = held.clone().min().unwrap_or(0);
    let hi = held.max().unwrap_or(0);
    Environment {
        backing: "anonymous",
        transparent_hugepage: hw::thp(),
        last_level_cache_bytes: hw::last_level_cache_bytes(),
        pool_bytes_target: opts.pool_bytes,
        pool_bytes_held: [lo, hi],
        pool_bytes_fixed: opts.pool_bytes_fixed,
        evict_bytes: if counting.callgrind { 0 } else { opts.evict_bytes },
        phases: phases.len(),
        modes_apart: memory.modes_apart,
        memory_estimate_bytes: memory.peak_bytes,
        peak_rss_bytes: memory::proc_status_bytes("VmHWM"),
        load_average_before: load_before,
        load_average_after: hw::load_average(),
        batch: opts.batch,
        rounds: opts.repeat,
        seed: opts.seed,
        instruction_counter: counting.name(),
    }
}

/// The report from every phase's rows, in the order rows are listed: corpus, configuration,
/// mode.
fn assemble(
    phases: Vec<PhaseRows>,
    corpora: &[Compressed],
    skipped: Vec<Skipped>,
    handle_memory: Option<HandleMemory>,
    environment: Environment,
) -> CostReport {
    let overhead: Vec<f64> =
        phases.iter().flat_map(|p| figures::per_batch_ns(&p.empties)).collect();
    let (mut reads, mut writes, mut pools) = (Vec::new(), Vec::new(), Vec::new());
    for p in phases {
        reads.extend(p.reads);
        writes.extend(p.writes);
        pools.extend(p.pools);
    }
    // Stable sorts: a pool's groups keep their order.
    reads.sort_by_key(|r| r.0);
    writes.sort_by_key(|r| r.0);
    pools.sort_by_key(|r| r.0);
    let reads: Vec<ReadRow> = reads.into_iter().map(|r| r.1).collect();
    let pools: Vec<PoolFacts> = pools.into_iter().map(|r| r.1).collect();
    let summary = report::summarize(&pools, &reads);
    CostReport {
        corpus: corpora.iter().map(|c| c.facts.clone()).collect(),
        environment,
        timer_overhead_ns: pass::samples(&overhead),
        pools,
        reads,
        writes: writes.into_iter().map(|r| r.1).collect(),
        skipped,
        handle_memory,
        summary,
    }
}
