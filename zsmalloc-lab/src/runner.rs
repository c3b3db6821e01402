//! Runs one workload on one configuration and collects what it measured; runs repeats of
//! several configurations one at a time, interleaved, for CPU times with a spread.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::{ConfigDesc, ConfigSpec};
use crate::driver::{Driver, RunOutcome};
use crate::error::{LabError, LabResult};
use crate::memory::Limit;
use crate::progress::{Progress, ProgressSink};
use crate::result::{density, utilization_permille, ClassRow, ClassRows, RunResult};
use crate::timing::{interleave, Samples};
use crate::trace_format::{TraceEncoding, TraceFormat, TraceWriter};
use crate::workload::{Extra, Workload};
use zsmalloc_core::{AnyPool, Backend};

/// How to run (the same for every configuration of a comparison).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep per-class rows in the result (`--per-class`).
    pub per_class: bool,
    /// Report times (off with `--no-time`, for byte-identical output). Timed runs run one at
    /// a time.
    pub timing: bool,
    /// Write the operations to this trace file (`--record`; first repeat only).
    pub record: Option<PathBuf>,
    /// The form `record` is written in (`--trace-format`).
    pub record_format: TraceFormat,
    /// Sample the timeline every N operations (0 = no timeline).
    pub timeline_every: u64,
    /// Runs of each configuration (`--repeat`, at least 1); only timed runs are repeated.
    pub repeat: usize,
    /// `--max-memory`: refuse a run whose memory plan is above it (what the machine has
    /// available is always a limit).
    pub max_memory: Option<u64>,
    /// Pools without payload (`--placement-only`; `optimize` always): lengths and placement
    /// only, reads report where objects lie, nothing is verified or timed.
    pub placement_only: bool,
}

impl RunOptions {
    /// Repeats to run: `repeat` (at least 1) when timing, else 1 (the counts do not change).
    pub fn rounds(&self) -> usize {
        if self.timing {
            self.repeat.max(1)
        } else {
            1
        }
    }
}

/// Runs `workload` on a fresh pool configured by `spec`, once. `cpu_time_s` and
/// `wall_time_s` hold this run's figures (one sample) when `opts.timing`.
pub fn run_one(
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
    sink: &ProgressSink,
) -> LabResult<RunResult> {
    run_labelled(workload, spec, opts, sink, &spec.label)
}

fn run_labelled(
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
    sink: &ProgressSink,
    bar_label: &str,
) -> LabResult<RunResult> {
    let pool = open_pool(workload, spec, opts)?;
    let mut driver = new_driver(&pool, workload, spec, opts, sink, bar_label, true)?;
    let start = Instant::now();
    let extra = workload.run(&mut driver, opts.timing)?;
    let outcome = driver.finish()?;
    let wall = start.elapsed();
    result_of(workload, spec, opts, &pool, outcome, extra, wall)
}

/// The pool of `spec` for a run of `workload` under `opts` (payload or placement only).
pub(crate) fn open_pool(
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
) -> LabResult<AnyPool> {
    let mut cfg = spec.pool_config()?;
    cfg.payload = !opts.placement_only;
    workload.check(cfg.page_size as usize)?;
    Ok(AnyPool::with_name(&spec.label, cfg)?)
}

/// The driver of one run on `pool`, its progress bar labelled `bar_label`; `record`: it writes
/// `opts.record` (when given).
pub(crate) fn new_driver<'p>(
    pool: &'p AnyPool,
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
    sink: &ProgressSink,
    bar_label: &str,
    record: bool,
) -> LabResult<Driver<'p>> {
    let page = pool.config().page_size;
    let recorder = match opts.record.as_ref().filter(|_| record) {
        Some(path) => Some(TraceWriter::create_as(
            path,
            &[
                format!("workload: {}", workload.desc().summary),
                format!("config: {}", spec.describe()),
            ],
            TraceEncoding { format: opts.record_format, zstd: false, page_size: page },
        )?),
        None => None,
    };
    let mut progress = Progress::new(sink, bar_label);
    if sink.is_active() {
        progress.set_total(workload.estimated_ops());
    }
    Ok(Driver::new(
        pool,
        workload.seed(),
        workload.strict(),
        recorder,
        opts.timeline_every,
        progress,
    ))
}

/// The result of a finished run of `workload` on `pool` (configured by `spec`); `wall`: the
/// run's wall time, reported when `opts.timing`.
pub(crate) fn result_of(
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
    pool: &AnyPool,
    outcome: RunOutcome,
    extra: Extra,
    wall: Duration,
) -> LabResult<RunResult> {
    let page = u64::from(pool.config().page_size);
    let desc = workload.desc();
    let stats = pool.stats();
    let classes = class_rows(pool.class_stats(), &outcome.merge_waste, opts.per_class)?;
    let c = &outcome.counters;
    let peak = outcome.peak;
    let permille = utilization_permille(stats.bytes_stored, stats.pages_allocated, page);
    let peak_permille = utilization_permille(peak.bytes, peak.pages, page);
    Ok(RunResult {
        label: spec.label.clone(),
        config: ConfigDesc::from(spec),
        workload: desc,
        objects: stats.objs_inuse,
        bytes_stored: stats.bytes_stored,
        pages: stats.pages_allocated,
        pages_peak: stats.pages_peak,
        utilization_pct: permille as f64 / 10.0,
        utilization_permille: permille,
        density: density(stats.objs_inuse, stats.pages_allocated),
        utilization_pct_peak: peak_permille as f64 / 10.0,
        density_peak: density(peak.objects, peak.pages),
        reads: stats.reads,
        reads_spanning: stats.reads_spanning,
        read_copy_bytes: stats.read_copy_bytes,
        writes_spanning: stats.writes_spanning,
        huge_class_size: pool.huge_class_size() as u64,
        pages_compacted: stats.pages_compacted,
        objs_moved: stats.objs_moved,
        stores: c.stores,
        frees: c.frees,
        store_failures: c.store_failures,
        op_errors: c.op_errors,
        same_pages: outcome.same_pages,
        huge_objects: classes.iter().filter(|c| c.stats.huge).map(|c| c.stats.obj_used).sum(),
        huge_pages: outcome.huge_pages,
        huge_stores: c.huge_stores,
        metadata_bytes: pool.metadata_bytes().0 as u64,
        safety_bytes: pool.metadata_bytes().1 as u64,
        payload: pool.keeps_bytes(),
        repeat: opts.timing.then_some(1),
        cpu_time_s: opts.timing.then(|| Samples::of(&[outcome.cpu.seconds()])).flatten(),
        wall_time_s: opts.timing.then(|| (wall.as_secs_f64() * 1e3).round() / 1e3),
        kernel_test: extra.kernel_test,
        corpus: extra.corpus,
        dist: extra.dist,
        classes,
        timeline: outcome.samples,
    })
}

/// The pool's class rows with the driver's merge waste beside each (`merge_waste` is in the
/// same class order, or empty for a backend without a class table).
fn class_rows(
    stats: Vec<zsmalloc_core::ClassStats>,
    merge_waste: &[u64],
    reported: bool,
) -> LabResult<ClassRows> {
    if !merge_waste.is_empty() && merge_waste.len() != stats.len() {
        return Err(LabError::runtime(format!(
            "internal: {} class rows but merge waste for {} classes",
            stats.len(),
            merge_waste.len()
        )));
    }
    let rows = stats
        .into_iter()
        .enumerate()
        .map(|(pos, stats)| ClassRow {
            stats,
            merge_waste: merge_waste.get(pos).copied().unwrap_or(0),
        })
        .collect();
    Ok(ClassRows { rows, reported })
}

/// Every spec's run: untimed runs in parallel (`jobs` at a time, the counts do not depend on
/// it); timed runs one at a time, `opts.rounds()` repeats interleaved (A B A B), merged into one
/// result per spec with `cpu_time_s` {min, median, max} over the repeats and the median wall
/// time. The repeats must agree on every count (they run the same seeded operations).
pub fn run_all(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<Vec<RunResult>> {
    if !opts.timing {
        return run_parallel(workload, specs, opts, jobs, sink);
    }
    check_memory(workload, specs, 1, opts)?;
    let rounds = opts.rounds();
    let mut later = opts.clone();
    later.record = None;
    later.timeline_every = 0;
    let mut runs: Vec<_> = specs
        .iter()
        .map(|spec| {
            let (first, later) = (opts, &later);
            move |round: usize| {
                let o = if round == 0 { first } else { later };
                let label = if rounds > 1 {
                    format!("{} {}/{rounds}", spec.label, round + 1)
                } else {
                    spec.label.clone()
                };
                run_labelled(workload, spec, o, sink, &label)
            }
        })
        .collect();
    let results = interleave(rounds, &mut runs)?;
    results.into_iter().map(merge_repeats).collect()
}

/// One result from the repeats of one configuration.
fn merge_repeats(mut rounds: Vec<RunResult>) -> LabResult<RunResult> {
    if rounds.is_empty() {
        return Err(LabError::runtime("a configuration did not run"));
    }
    let cpu: Vec<f64> = rounds.iter().filter_map(|r| r.cpu_time_s.map(|s| s.median)).collect();
    let wall: Vec<f64> = rounds.iter().filter_map(|r| r.wall_time_s).collect();
    let first = rounds.remove(0);
    for r in &rounds {
        if r.counts() != first.counts() {
            return Err(LabError::runtime(format!(
                "{}: the repeats disagree on their counts ({:?} vs {:?})",
                first.label,
                first.counts(),
                r.counts()
            )));
        }
    }
    let mut out = first;
    out.repeat = Some(cpu.len());
    out.cpu_time_s = Samples::of(&cpu).map(|s| s.rounded(6));
    out.wall_time_s = Samples::of(&wall).map(|s| (s.median * 1e3).round() / 1e3);
    Ok(out)
}

/// Refuses to start when `jobs` runs of `workload` at once, on the largest page of `specs`,
/// do not fit in memory (exit 2; [`crate::memory`]): `opts.max_memory` and whether the pools
/// keep bytes decide.
pub fn check_memory(
    workload: &Workload,
    specs: &[ConfigSpec],
    jobs: usize,
    opts: &RunOptions,
) -> LabResult<()> {
    let Some(page) = specs.iter().map(|s| s.config.page_size as usize).max() else {
        return Ok(());
    };
    workload.check(page)?;
    check_runs(
        workload,
        page,
        !opts.placement_only,
        &Limit::new(opts.max_memory),
        workload.name(),
        jobs,
    )
}

/// `jobs` runs of `workload` at once against `limit` ([`crate::memory::check_runs`]): what each
/// touches; its records; and the pages its pool may hold, which it reserves (those of a pool
/// that keeps the bytes, whether or not this one does: placement-only pools have the same pages).
pub fn check_runs(
    workload: &Workload,
    page: usize,
    payload: bool,
    limit: &Limit,
    command: &str,
    jobs: usize,
) -> LabResult<()> {
    let touched = workload.memory_plan(page, payload, limit)?;
    let space = crate::memory::RunSpace {
        heap: workload.memory_plan(page, false, limit)?.bytes,
        pages: workload.memory_plan(page, true, limit)?.bytes,
    };
    crate::memory::check_runs(limit, command, &touched, space, jobs)
}

/// Runs every spec once, `jobs` at a time (for counts: nothing is timed).
pub fn run_parallel(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<Vec<RunResult>> {
    run_parallel_observed(workload, specs, opts, jobs, sink, &|| {})
}

/// [`run_parallel`], calling `ended` as each run ends (from the run's thread).
pub fn run_parallel_observed(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
    ended: &(dyn Fn() + Sync),
) -> LabResult<Vec<RunResult>> {
    check_memory(workload, specs, jobs.clamp(1, specs.len().max(1)), opts)?;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<LabResult<RunResult>>>> = Mutex::new(vec![None; specs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(i) else { break };
                let r = run_one(workload, spec, opts, sink);
                ended();
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut runs = Vec::with_capacity(specs.len());
    for r in slots {
        match r {
            Some(Ok(run)) => runs.push(run),
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    if runs.len() != specs.len() {
        return Err(LabError::runtime("a configuration did not run"));
    }
    Ok(runs)
}

/// Worker threads to use: `requested`, or every core; never more than there are runs.
pub fn jobs(requested: Option<usize>, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    requested.unwrap_or(cores).clamp(1, runs.max(1))
}
