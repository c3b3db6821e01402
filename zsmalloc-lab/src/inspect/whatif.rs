//! The what-if of a snapshot: the device's stored pages replayed in slot order through the
//! project's pool — at the kernel's configuration (page size the host's, chain 8, classic) it
//! is the device's pool without its history — and the same data under other class tables:
//! chain sizes 4..=16, the heuristic chain policy, and (`--optimize`) the optimizer's table
//! with the fewest pages for this very data.

use std::path::Path;

use serde::Serialize;
use zsmalloc_core::{Handle, Pool};

use super::snapshot::Page;
use crate::error::{LabError, LabResult};
use crate::kernel::check::kernel_spec;
use crate::kernel::replay::project_pool;
use crate::kernel::steps::Stored;
use crate::optimize::report::ChainChange;
use crate::optimize::search::{search, SearchOptions};
use crate::progress::ProgressSink;
use crate::trace_format::{TraceOp, TraceWriter};
use crate::workload::{trace::Trace, Workload};

/// The chain size of the kernel's default build (`CONFIG_ZSMALLOC_CHAIN_SIZE`).
pub const KERNEL_CHAIN: u32 = 8;

/// Pool pages of `pages` stored in order through the project's pool for `chain`, `policy`.
pub fn replay(pages: &[Page], page: usize, chain: u32, policy: &str) -> LabResult<u64> {
    let spec = kernel_spec(page, chain, policy)?;
    let any = project_pool(&spec)?;
    let pool: &Pool = any.as_zsmalloc().expect("checked by project_pool");
    let mut held: Vec<Handle<&Pool>> = crate::memory::try_vec(pages.len(), "--max-pages")?;
    for p in pages.iter().filter(|p| p.stored != Stored::Same) {
        let h = pool.malloc(p.len as usize).map_err(|e| {
            LabError::runtime(format!("project pool: store of {} bytes: {e}", p.len))
        })?;
        held.push(h);
    }
    Ok(pool.total_pages())
}

/// One class table's pool for the data.
#[derive(Debug, Clone, Serialize)]
pub struct Alternative {
    /// `classic chain 8`, `heuristic chain 8`, `optimized`.
    pub label: String,
    pub pages: u64,
    pub bytes: u64,
    /// Pages fewer than the kernel's table holds for the same data (negative: more).
    pub saving_pages: i64,
    pub saving_bytes: i64,
}

impl Alternative {
    pub fn new(label: String, pages: u64, base: u64, page: usize) -> Alternative {
        let saving = base as i64 - pages as i64;
        Alternative {
            label,
            pages,
            bytes: pages * page as u64,
            saving_pages: saving,
            saving_bytes: saving * page as i64,
        }
    }
}

/// Chain sizes 4..=16 (classic) and the heuristic at chains 8 and 16; `base`: the kernel's pages.
pub fn alternatives(pages: &[Page], page: usize, base: u64) -> LabResult<Vec<Alternative>> {
    let mut out = Vec::new();
    for chain in 4..=16 {
        let n = replay(pages, page, chain, "classic")?;
        out.push(Alternative::new(format!("classic chain {chain}"), n, base, page));
    }
    for chain in [KERNEL_CHAIN, 16] {
        let n = replay(pages, page, chain, "heuristic")?;
        out.push(Alternative::new(format!("heuristic chain {chain}"), n, base, page));
    }
    Ok(out)
}

/// Writes the stored pages as a trace: `store <slot> <len>` in slot order (same-filled pages
/// have no line), then one read of each (so a replay counts the reads that span two pages,
/// which the optimizer weighs against pages). Replayed at the host's page size and chain 8 it is the device's pool
/// without its history.
pub fn write_trace(pages: &[Page], path: &Path, header: &[String]) -> LabResult<()> {
    let mut w = TraceWriter::create(path, header)?;
    for p in pages.iter().filter(|p| p.stored != Stored::Same) {
        w.op(&TraceOp::Store { id: p.slot, len: p.len as usize })?;
    }
    for p in pages.iter().filter(|p| p.stored != Stored::Same) {
        w.op(&TraceOp::Read { id: p.slot, len: p.len as usize })?;
    }
    w.finish()
}

/// The optimizer's table with the fewest pages for the data.
#[derive(Debug, Clone, Serialize)]
pub struct Optimized {
    #[serde(flatten)]
    pub pool: Alternative,
    /// Spanning reads of one read of every object, this table's and the kernel's.
    pub reads_spanning: u64,
    pub kernel_reads_spanning: u64,
    /// Classes whose chain differs from the kernel's table.
    pub changed: Vec<ChainChange>,
    /// The table in the class-table file format (`--class-table FILE` runs it).
    pub table: String,
}

/// Runs the optimizer on the trace at `trace` (the kernel's configuration as its base).
pub fn optimize(
    trace: &Path,
    page: usize,
    base: u64,
    jobs: usize,
    max_memory: Option<u64>,
) -> LabResult<Optimized> {
    let w = Workload::Trace(Trace::new(trace));
    let mut opts = SearchOptions::new(kernel_spec(page, KERNEL_CHAIN, "classic")?.config);
    opts.jobs = jobs.max(1);
    let limit = crate::memory::Limit::new(max_memory);
    let plan = w.memory_plan(page, true, &limit)?.times(opts.jobs);
    limit.check("inspect --optimize", &plan)?;
    let sink = ProgressSink::auto();
    let report = search(&w, &opts, &sink)?;
    sink.clear();
    let best = report
        .points
        .iter()
        .min_by_key(|p| (p.pages, p.reads_spanning))
        .ok_or_else(|| LabError::runtime("the optimizer found no table"))?;
    let classic = &report.references.classic;
    Ok(Optimized {
        pool: Alternative::new("optimized (fewest pages)".into(), best.pages, base, page),
        reads_spanning: best.reads_spanning,
        kernel_reads_spanning: classic.reads_spanning,
        changed: best.changed.clone().unwrap_or_default(),
        table: report.file_text(best)?,
    })
}
