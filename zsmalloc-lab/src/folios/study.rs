//! One `zsmalloc folios` run: the corpus read once, then for every compressor and folio size a
//! pool of its own (the multi-page band at the folio size), filled, churned, compacted, timed.

use std::time::Instant;

use zsmalloc_codec::{Codec, Compressor};
use zsmalloc_core::Pool;

use super::fill::{fill_and_churn, Churn, Compressed};
use super::options::FoliosOptions;
use super::reads::{sample, Timed};
use super::row::{FolioRow, FoliosReport, RunTime};
use crate::error::{LabError, LabResult};
use crate::memory::Limit;
use crate::progress::{Progress, ProgressSink};
use crate::timing::Clock;
use crate::trace_format::TraceWriter;

/// Runs the study: the memory plan is checked before the corpus is read.
pub fn run(opts: &FoliosOptions, sink: &ProgressSink) -> LabResult<FoliosReport> {
    opts.check()?;
    Limit::new(opts.max_memory).check("folios", &opts.plan())?;
    let wall = Instant::now();
    let cpu0 = Clock::now_ns();
    let page = opts.config.page_size as usize;
    let mut corpus = opts.source.load(page, opts.max_pages)?;
    let largest = opts.folio_sizes.last().copied().unwrap_or(page as u32) as usize;
    corpus.truncate(corpus.len() / largest * largest);
    if corpus.is_empty() {
        return Err(LabError::usage(format!(
            "the corpus holds less than one folio of {largest} bytes: give more input"
        )));
    }
    let mut time = RunTime {
        corpus_seconds: Clock::now_ns().saturating_sub(cpu0) as f64 / 1e9,
        ..RunTime::default()
    };
    let mut bar = Progress::new(sink, "folios");
    let total = opts.compressors.len() * opts.folio_sizes.len();
    bar.set_total(total as u64 * 4096);
    let mut rows = Vec::with_capacity(total);
    // Put in place once every row has run: a run that fails or is interrupted leaves none.
    let mut traces = Vec::new();
    for &c in &opts.compressors {
        // One codec for every folio size: its contexts sized for the largest.
        let mut codec = Codec::new(c, opts.zstd_level, largest)?;
        for &folio in &opts.folio_sizes {
            let (row, timed, trace) = one_row(opts, &corpus, c, &mut codec, folio)?;
            time.fill_compress_seconds += row.fill_compress_seconds;
            time.timed_rounds_seconds += timed;
            rows.push(row);
            traces.extend(trace);
            bar.tick(rows.len() as u64 * 4096);
        }
    }
    for t in traces {
        t.finish()?;
    }
    bar.finish();
    time.cpu_seconds = Clock::now_ns().saturating_sub(cpu0) as f64 / 1e9;
    time.wall_seconds = wall.elapsed().as_secs_f64();
    Ok(FoliosReport {
        source: opts.source.describe(),
        input_bytes: corpus.len() as u64,
        page_size: opts.config.page_size,
        chain_size: opts.config.chain_size,
        zstd_level: opts.zstd_level,
        churn_share: opts.churn_share,
        refill_share: opts.refill_share,
        fallback_share: opts.fallback_share,
        repeat: opts.repeat,
        seed: opts.seed,
        rows,
        time,
    })
}

/// The file name of a row's trace in `--trace-dir`: `lz4-16K.trace`.
pub fn trace_name(c: Compressor, folio: u32) -> String {
    format!("{}-{}K.trace", c.name(), folio / 1024)
}

/// One compressor at one folio size; also the CPU of its timed rounds and its trace, written
/// but not yet in place.
fn one_row(
    opts: &FoliosOptions,
    corpus: &[u8],
    c: Compressor,
    codec: &mut Codec,
    folio: u32,
) -> LabResult<(FolioRow, f64, Option<TraceWriter>)> {
    let mut config = opts.config.clone();
    config.multi_page_size = if folio > config.page_size { folio } else { 0 };
    let pool = Pool::new(config)?;
    let band = u32::from(folio > opts.config.page_size);
    let huge = pool.huge_class_size_of_band(band).unwrap_or(pool.huge_class_size());
    let compressed = Compressed::of(corpus, folio as usize, huge, codec)?;
    let churn = Churn { share: opts.churn_share, refill: opts.refill_share, seed: opts.seed };
    let mut trace = match &opts.trace_dir {
        Some(dir) => Some(TraceWriter::create(
            &dir.join(trace_name(c, folio)),
            &[format!(
                "zsmalloc folios: {}, {} folios of {folio} bytes ({} pages), churn {} refill {} \
             seed {}; replay with --multi-page {}",
                c.name(),
                compressed.kept.len(),
                folio / opts.config.page_size,
                opts.churn_share,
                opts.refill_share,
                opts.seed,
                pool.config().multi_page_size,
            )],
        )?),
        None => None,
    };
    let filled = fill_and_churn(&pool, corpus, &compressed, churn, trace.as_mut())?;
    let picked = sample(&filled.slots, folio as usize, opts.sample_bytes, opts.seed);
    let timed = Timed {
        pool: &pool,
        corpus,
        compressed: &compressed,
        slots: &filled.slots,
        page: opts.config.page_size as usize,
    };
    let (reads, writes, seconds) = timed.run(codec, &picked, opts.repeat, opts.fallback_share)?;
    let kept = &compressed.kept;
    let count = |f: &dyn Fn(&super::fill::Kept) -> bool| kept.iter().filter(|k| f(k)).count();
    let row = FolioRow {
        compressor: c.name().to_string(),
        folio_size: folio,
        multi_page_size: pool.config().multi_page_size,
        folios: kept.len() as u64,
        same_filled: count(&|k| matches!(k, super::fill::Kept::Same(_))) as u64,
        raw: count(&|k| matches!(k, super::fill::Kept::Raw)) as u64,
        compressed_bytes: compressed.compressed_bytes,
        ratio: (compressed.compressed_bytes as f64 / corpus.len() as f64 * 1e4).round() / 1e4,
        objects: filled.objects,
        huge_class_size: huge as u32,
        pages_used: filled.pages_used,
        max_pages_used: filled.max_pages_used,
        pages_after_compaction: filled.pages_after_compaction,
        compaction: filled.compaction,
        padding_bytes: filled.padding_bytes,
        unused_bytes: filled.unused_bytes,
        padding_classes: filled.padding_classes.clone(),
        churned: filled.churned,
        refilled: filled.refilled,
        reads,
        writes,
        fill_compress_seconds: (compressed.seconds * 1e3).round() / 1e3,
    };
    Ok((row, seconds, trace))
}
