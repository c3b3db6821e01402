//! One phase of the study: its pools filled (every configuration in every pool read mode), then
//! round after round the empty batch, every read job (a pool read in one mode) and every write
//! job (a configuration's two write paths), interleaved; then the pools are freed. Figures are taken by [`super::figures`].

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::AtomicUsize;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zsmalloc_codec::Codec;

use super::compressed::Compressed;
use super::figures::PhaseRows;
use super::fill::{make_pool, Filled};
use super::hw::{Evictor, InstructionCounter};
use super::instructions;
use super::options::{CostOptions, InstructionSource, Mode};
use super::pass::{timed_pass, Pass, PassCtx};
use super::plan::PoolPhase;
use super::rounds::{ReadBuffers, ReadRound, WriteRound};
use crate::error::{LabError, LabResult};
use crate::progress::Progress;

/// How instructions are counted in this run.
pub struct Counting {
    pub callgrind: bool,
    pub counter: Option<InstructionCounter>,
}

impl Counting {
    pub fn new(source: InstructionSource) -> Counting {
        let callgrind = source == InstructionSource::Callgrind;
        Counting { callgrind, counter: if callgrind { None } else { InstructionCounter::open() } }
    }

    /// `instructions_scope` of the rows: user space, when anything counts.
    pub fn scope(&self) -> Option<&'static str> {
        (self.callgrind || self.counter.is_some()).then_some("user")
    }

    /// `instruction_counter` of the environment.
    pub fn name(&self) -> &'static str {
        if self.callgrind {
            "callgrind"
        } else if self.counter.is_some() {
            "perf_event_open"
        } else {
            "none"
        }
    }

    fn ctx(&self, batch: usize) -> PassCtx<'_> {
        PassCtx { batch, counter: self.counter.as_ref(), callgrind: self.callgrind }
    }
}

/// What every phase shares.
pub struct RunCtx<'a> {
    pub opts: &'a CostOptions,
    pub counting: &'a Counting,
    pub evictor: &'a RefCell<Evictor>,
    pub progress: &'a RefCell<Progress>,
}

/// Jobs of a phase per round: the empty batch, its read jobs and its write jobs.
pub fn jobs_per_round(phase: &PoolPhase) -> usize {
    1 + phase.pools.iter().map(|p| p.modes.len()).sum::<usize>()
        + phase.pools.iter().filter(|p| p.writes).count()
}

/// What one job of a round returns.
enum JobOut {
    Empty(Pass),
    Read(ReadRound),
    Write(WriteRound),
}

type Job<'a> = Box<dyn FnMut(usize) -> LabResult<JobOut> + 'a>;

/// A read job: a pool read in one mode.
struct ReadJob {
    pool: usize,
    mode: Mode,
}

/// Fills the phase's pools, runs its rounds and takes its figures.
pub fn run(phase: &PoolPhase, corpus: &Compressed, cx: &RunCtx<'_>) -> LabResult<PhaseRows> {
    let opts = cx.opts;
    let mut filled = Vec::new();
    for p in &phase.pools {
        let spec = &opts.specs[p.spec];
        let pool = make_pool(spec, p.pool_mode).map_err(|e| e.for_mode(p.modes[0]))?;
        let mut f = Filled::new(spec, pool, corpus, phase.replicas)?;
        f.extend_to(phase.replicas)?;
        f.finish(opts.seed);
        filled.push(f);
    }
    let reads: Vec<ReadJob> = (0..filled.len())
        .flat_map(|pool| phase.pools[pool].modes.iter().map(move |&mode| ReadJob { pool, mode }))
        .collect();
    let writes: Vec<usize> = (0..filled.len()).filter(|&i| phase.pools[i].writes).collect();
    let results = {
        let mut jobs: Vec<Job<'_>> = vec![empty_job(cx)];
        for j in &reads {
            jobs.push(read_job(&filled[j.pool], j.mode, cx)?);
        }
        for &i in &writes {
            jobs.push(write_job(&filled[i], cx)?);
        }
        crate::timing::interleave(opts.repeat, &mut jobs)?
    };
    let mut results = results.into_iter();
    let empties: Vec<Pass> = results
        .next()
        .into_iter()
        .flatten()
        .filter_map(|o| if let JobOut::Empty(p) = o { Some(p) } else { None })
        .collect();
    let mut rows = PhaseRows::new(empties, cx.counting.scope());
    for (j, rounds) in reads.iter().zip(results.by_ref()) {
        let rounds: Vec<ReadRound> = rounds
            .into_iter()
            .filter_map(|o| if let JobOut::Read(r) = o { Some(r) } else { None })
            .collect();
        let f = &filled[j.pool];
        let at = (phase.corpus, phase.pools[j.pool].spec, mode_index(opts, j.mode));
        rows.add_reads(at, f, j.mode, &rounds);
    }
    for (&i, rounds) in writes.iter().zip(results) {
        let rounds: Vec<WriteRound> = rounds
            .into_iter()
            .filter_map(|o| if let JobOut::Write(r) = o { Some(r) } else { None })
            .collect();
        rows.add_writes((phase.corpus, phase.pools[i].spec, 0), &filled[i], &rounds);
    }
    Ok(rows)
}

fn mode_index(opts: &CostOptions, mode: Mode) -> usize {
    opts.modes.iter().position(|&m| m == mode).unwrap_or(0)
}

/// The batch loop with no operation: the clock's cost, subtracted from every figure.
fn empty_job<'a>(cx: &'a RunCtx<'a>) -> Job<'a> {
    let batch = cx.opts.batch;
    let order: Vec<u32> = (0..batch as u32).collect();
    let (callgrind, counter) = (cx.counting.callgrind, cx.counting.counter.as_ref());
    Box::new(move |_| {
        let p = instructions::pass(
            callgrind,
            || "empty".to_string(),
            || timed_pass(&order, batch, counter, |i| black_box(i) != u32::MAX),
        )
        .ok_or_else(|| LabError::runtime("the empty batch failed"))?;
        cx.progress.borrow_mut().tick(1);
        Ok(JobOut::Empty(p))
    })
}

fn read_job<'a>(f: &'a Filled<'a>, mode: Mode, cx: &'a RunCtx<'a>) -> LabResult<Job<'a>> {
    let codec = Codec::new(f.corpus.compressor, cx.opts.level, f.corpus.page)?;
    let mut bufs = ReadBuffers::new(f.corpus.page, codec);
    let key = format!("{}|{}|{}", f.facts.label, f.facts.compressor, mode.name());
    let ctx = cx.counting.ctx(cx.opts.batch);
    Ok(Box::new(move |_| {
        let mut evict = || cx.evictor.borrow_mut().run();
        let r = f.read_round(mode, &mut bufs, ctx, &key, &mut evict)?;
        cx.progress.borrow_mut().tick(1);
        Ok(JobOut::Read(r))
    }))
}

fn write_job<'a>(f: &'a Filled<'a>, cx: &'a RunCtx<'a>) -> LabResult<Job<'a>> {
    let batch = cx.opts.batch;
    let scratch: Box<[AtomicUsize]> = (0..batch).map(|_| AtomicUsize::new(0)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(cx.opts.seed ^ 0x3717e5);
    let stored = f.stored_entries();
    if stored.is_empty() {
        return Err(LabError::runtime(format!(
            "{}: the pool refused every object of the corpus",
            f.facts.label
        )));
    }
    let picks: Vec<u32> = (0..batch).map(|_| stored[rng.gen_range(0..stored.len())]).collect();
    let key = format!("{}|{}", f.facts.label, f.facts.compressor);
    let ctx = cx.counting.ctx(batch);
    Ok(Box::new(move |_| {
        let mut evict = || cx.evictor.borrow_mut().run();
        let r = f.write_round(&scratch, &picks, ctx, &key, &mut evict)?;
        cx.progress.borrow_mut().tick(1);
        Ok(JobOut::Write(r))
    }))
}
