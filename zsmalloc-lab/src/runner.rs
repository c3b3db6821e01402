//! Runs one workload on one configuration and collects what it measured.

use std::path::PathBuf;
use std::time::Instant;

use crate::config::{ConfigDesc, ConfigSpec};
use crate::driver::Driver;
use crate::error::LabResult;
use crate::progress::{Progress, ProgressSink};
use crate::result::{utilization_permille, ClassRow, RunResult};
use crate::trace_format::TraceWriter;
use crate::workload::Workload;
use zsmalloc_core::Pool;

/// How to run (the same for every configuration of a comparison).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep per-class rows in the result (`--per-class`).
    pub per_class: bool,
    /// Measure wall time (off with `--no-time`, for byte-identical output).
    pub timing: bool,
    /// Write the operations to this trace file (`--record`).
    pub record: Option<PathBuf>,
    /// Sample the timeline every N operations (0 = no timeline).
    pub timeline_every: u64,
}

/// Runs `workload` on a fresh pool configured by `spec`.
pub fn run_one(
    workload: &Workload,
    spec: &ConfigSpec,
    opts: &RunOptions,
    sink: &ProgressSink,
) -> LabResult<RunResult> {
    let cfg = spec.pool_config()?;
    let page = u64::from(cfg.page_size);
    workload.check(cfg.page_size as usize)?;
    let pool = Pool::with_name(&spec.label, cfg)?;
    let desc = workload.desc();
    let recorder = match &opts.record {
        Some(path) => Some(TraceWriter::create(
            path,
            &[format!("workload: {}", desc.summary), format!("config: {}", spec.describe())],
        )?),
        None => None,
    };
    let mut progress = Progress::new(sink, &spec.label);
    if sink.is_active() {
        progress.set_total(workload.estimated_ops());
    }
    let mut driver = Driver::new(
        &pool,
        workload.seed(),
        workload.strict(),
        recorder,
        opts.timeline_every,
        progress,
    );
    let start = Instant::now();
    let extra = workload.run(&mut driver, opts.timing)?;
    let wall = start.elapsed();
    let outcome = driver.finish()?;

    let stats = pool.stats();
    let class_stats = pool.class_stats();
    let c = &outcome.counters;
    Ok(RunResult {
        label: spec.label.clone(),
        config: ConfigDesc::from(spec),
        workload: desc,
        objects: stats.objs_inuse,
        bytes_stored: stats.bytes_stored,
        pages: stats.pages_allocated,
        pages_peak: stats.pages_peak,
        utilization_pct: utilization_permille(stats.bytes_stored, stats.pages_allocated, page)
            as f64
            / 10.0,
        utilization_permille: utilization_permille(stats.bytes_stored, stats.pages_allocated, page),
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
        huge_objects: class_stats.iter().filter(|r| r.huge).map(|r| r.obj_used).sum(),
        huge_stores: c.huge_stores,
        wall_time_s: opts.timing.then(|| (wall.as_secs_f64() * 1e3).round() / 1e3),
        kernel_test: extra.kernel_test,
        corpus: extra.corpus,
        classes: opts.per_class.then(|| class_stats.iter().map(ClassRow::from).collect()),
        class_stats,
        timeline: outcome.samples,
    })
}
