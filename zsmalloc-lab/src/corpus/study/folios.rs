//! 4K, 16K and 64K folios, from the corpus's own traces: for each program the corpus recorded
//! with more than one folio size, every such trace replayed on mainline (with the multi-page
//! band at the folio's size): the bytes stored at the peak, pages used at the end and at the
//! peak, the pool's reads, and the bytes decompressed per fault the tier served (each read
//! decompresses a whole folio). Compressors are the manifest's: a program recorded with lz4,
//! lzo and zstd has a row for each.

use serde::Serialize;

use super::replay::replay;
use super::{Corpus, Progress};
use crate::config::ConfigSpec;
use crate::error::LabResult;

#[derive(Debug, Clone, Serialize)]
pub struct FolioRow {
    pub program: String,
    pub compressor: String,
    pub folio_size: u64,
    /// Objects stored over the trace (evictions of a folio).
    pub stores: u64,
    /// Bytes live in the pool when it held the most pages (from its utilization then, to a
    /// tenth of a percent).
    pub bytes_peak: u64,
    pub pages_used: u64,
    pub max_pages_used: u64,
    /// Pool reads (each a fault on an evicted folio).
    pub reads: u64,
    /// Faults the tier served, from the manifest.
    pub faults: u64,
    /// `reads * folio_size / faults`: what a fault decompressed on average.
    pub decompressed_per_fault: Option<f64>,
    /// Pages at the peak against the same program's 4K trace (same compressor), in percent.
    pub peak_vs_4k_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Folios {
    pub rows: Vec<FolioRow>,
    /// Why there are no rows, when there are none.
    pub note: Option<String>,
}

pub fn study(corpus: &Corpus, p: &Progress) -> LabResult<Folios> {
    let traces = corpus.traces();
    let with_folios: Vec<&str> = traces
        .iter()
        .filter(|(t, _)| t.folio_size != super::PAGE_FOLIO)
        .map(|(t, _)| t.program.as_str())
        .collect();
    if with_folios.is_empty() {
        return Ok(Folios {
            rows: Vec::new(),
            note: Some(
                "the corpus has no 16K or 64K folio trace (recorded with --folio-size)".into(),
            ),
        });
    }
    let mut rows: Vec<FolioRow> = Vec::new();
    for (t, path) in traces.iter().filter(|(t, _)| with_folios.contains(&t.program.as_str())) {
        p.step(&format!("folios: {} at {}K ({})", t.program, t.folio_size >> 10, t.compressor));
        let mut spec = ConfigSpec::default();
        if t.folio_size > super::PAGE_FOLIO {
            spec.set("multi-page", &t.folio_size.to_string())?;
        }
        spec.label = format!("{}K", t.folio_size >> 10);
        let run = replay(path, std::slice::from_ref(&spec), 1, false)?.remove(0);
        // The run keeps the peak's utilization (to a tenth of a percent), not its bytes.
        let page = run.config.page_size as f64;
        let bytes_peak = (run.utilization_pct_peak / 100.0 * run.pages_peak as f64 * page) as u64;
        rows.push(FolioRow {
            program: t.program.clone(),
            compressor: t.compressor.clone(),
            folio_size: t.folio_size,
            stores: run.stores,
            bytes_peak,
            pages_used: run.pages,
            max_pages_used: run.pages_peak,
            reads: run.reads,
            faults: t.faults,
            decompressed_per_fault: (t.faults > 0)
                .then(|| (run.reads * t.folio_size) as f64 / t.faults as f64)
                .map(|x| x.round()),
            peak_vs_4k_pct: None,
        });
    }
    for k in 0..rows.len() {
        let base = rows.iter().find(|r| {
            r.program == rows[k].program
                && r.compressor == rows[k].compressor
                && r.folio_size == super::PAGE_FOLIO
        });
        let pct = base.and_then(|b| {
            crate::result::delta_value(crate::result::delta_tenths_u64(
                b.max_pages_used,
                rows[k].max_pages_used,
            ))
        });
        rows[k].peak_vs_4k_pct = pct;
    }
    rows.sort_by(|a, b| {
        (&a.program, &a.compressor, a.folio_size).cmp(&(&b.program, &b.compressor, b.folio_size))
    });
    Ok(Folios { rows, note: None })
}
