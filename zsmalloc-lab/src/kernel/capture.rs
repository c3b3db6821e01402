//! `zsmalloc kernel capture`: the kernel's exact outcome per page as a trace the lab replays
//! (docs/LAB.md, "Trace format"). Page `i` is handle id `i`: a compressed page is
//! `store i <len>` with the length zram gave `zs_malloc`, a huge page `store i <PAGE_SIZE>`
//! (zram stores it whole); a same-filled page stores nothing in the pool, so it has no line
//! (the header counts them). With `--free-share`, the discards (`free i`) and the compaction
//! follow. Replayed at the kernel's page size and chain, the pool holds the kernel's pages.

use std::path::PathBuf;

use serde::Serialize;

use super::check::{KernelFacts, StoredFacts};
use super::corpus::CompressorArgs;
use super::corpus::{CorpusArgs, CorpusFacts};
use super::host::Host;
use super::steps::{self, DevicePhase, FillPlan, KernelSteps, Op, Stored};
use crate::error::LabResult;
use crate::flag_values;
use crate::trace_format::{TraceOp, TraceWriter};

#[derive(clap::Args, Debug, Clone)]
pub struct Capture {
    #[command(flatten)]
    pub corpus: CorpusArgs,
    #[command(flatten)]
    pub codec: CompressorArgs,
    /// The trace file to write
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Also discard this share of the pages after the fill, then compact (0: the fill only)
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = flag_values::share)]
    pub free_share: f64,
    /// Seeds the built-in corpus and the discards
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = flag_values::any_whole::<u64>())]
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    pub file: String,
    pub kernel: KernelFacts,
    pub corpus: CorpusFacts,
    pub stored: StoredFacts,
    /// The kernel's pool pages after the fill, and at the end.
    pub kernel_pages_after_fill: u64,
    pub kernel_pages_at_end: u64,
    /// Operations written.
    pub operations: u64,
}

/// Writes `k` as a trace to `path`; returns the operations written.
pub fn write_trace(k: &KernelSteps, source: &str, path: &std::path::Path) -> LabResult<u64> {
    let s = StoredFacts::of(k);
    let page = k.host.page_size;
    let level = k.level.map(|l| format!(" level {l}")).unwrap_or_default();
    let header = [
        format!(
            "captured from the kernel: {} (page {page}), zram {}{level}",
            k.host.release, k.compressor
        ),
        format!("corpus: {source}"),
        format!(
            "pages: {} same-filled (kept by zram, no line), {} huge (stored whole, {page} bytes), \
             {} compressed",
            s.same_filled, s.huge, s.compressed
        ),
        format!(
            "kernel pool pages after the fill: {}; at the end: {}",
            k.after(DevicePhase::Fill).pool_pages(page),
            k.after(DevicePhase::Compact).pool_pages(page)
        ),
    ];
    let mut w = TraceWriter::create(path, &header)?;
    let mut holds = vec![false; k.phase(DevicePhase::Fill).count()];
    let mut ops = 0;
    for step in &k.steps {
        let op = match step.op {
            Op::Store { stored: Stored::Same, .. } => None,
            Op::Store { page: p, len, .. } => {
                holds[p as usize] = true;
                Some(TraceOp::Store { id: u64::from(p), len: len as usize })
            }
            Op::Free { page: p } => {
                std::mem::take(&mut holds[p as usize]).then_some(TraceOp::Free { id: u64::from(p) })
            }
            Op::Compact => Some(TraceOp::Compact),
        };
        if let Some(op) = op {
            w.op(&op)?;
            ops += 1;
        }
        if step.shrinker_compacted {
            w.op(&TraceOp::Compact)?;
            ops += 1;
        }
    }
    w.finish()?;
    Ok(ops)
}

pub fn run(a: &Capture) -> LabResult<CaptureReport> {
    let host = Host::probe()?;
    let (corpus, facts) = a.corpus.open(&host, a.seed)?;
    let plan = FillPlan::new(&a.codec, a.free_share, a.seed, a.free_share > 0.0);
    let k = steps::run(&host, &corpus, &plan)?;
    drop(corpus);
    let operations = write_trace(&k, &facts.source, &a.output)?;
    Ok(CaptureReport {
        file: a.output.display().to_string(),
        kernel: KernelFacts::of(&k),
        stored: StoredFacts::of(&k),
        kernel_pages_after_fill: k.after(DevicePhase::Fill).pool_pages(host.page_size),
        kernel_pages_at_end: k.after(DevicePhase::Compact).pool_pages(host.page_size),
        corpus: facts,
        operations,
    })
}
