//! Chain length: each page trace under mainline (classic, chain 8), the RFC's heuristic, classic
//! at chains 4..16, and 16K pages at class delta 64 (16K's default) and 16 — pages at the end
//! and at the peak, the peak in bytes against classic's, spanning reads and the bytes they copy.

use serde::Serialize;

use super::replay::replay;
use super::{Corpus, Progress, StudyOptions};
use crate::config::ConfigSpec;
use crate::error::LabResult;
use crate::result::{delta_tenths_u64, delta_value, RunResult};

/// The configurations, as `--config` specs, mainline first (the reference of the deltas).
pub const CONFIGS: [(&str, &str); 16] = [
    ("classic", "chain-size=8"),
    ("heuristic", "chain-size=8,chain-policy=heuristic"),
    ("chain 4", "chain-size=4"),
    ("chain 5", "chain-size=5"),
    ("chain 6", "chain-size=6"),
    ("chain 7", "chain-size=7"),
    ("chain 9", "chain-size=9"),
    ("chain 10", "chain-size=10"),
    ("chain 11", "chain-size=11"),
    ("chain 12", "chain-size=12"),
    ("chain 13", "chain-size=13"),
    ("chain 14", "chain-size=14"),
    ("chain 15", "chain-size=15"),
    ("chain 16", "chain-size=16"),
    ("16K delta 64", "page-size=16K,class-delta=64"),
    ("16K delta 16", "page-size=16K,class-delta=16"),
];

/// One trace under one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ChainRow {
    pub trace: String,
    pub config: String,
    pub page_size: u64,
    pub pages: u64,
    pub pages_peak: u64,
    /// `pages_peak * page_size`.
    pub peak_bytes: u64,
    /// The peak in bytes against classic's, in percent.
    pub peak_vs_classic_pct: Option<f64>,
    pub reads: u64,
    pub reads_spanning: u64,
    pub read_copy_bytes: u64,
    /// Bytes copied by spanning reads against classic's, in percent.
    pub copy_vs_classic_pct: Option<f64>,
}

/// The configurations as the lab runs them.
pub fn specs() -> LabResult<Vec<ConfigSpec>> {
    let base = ConfigSpec::default();
    CONFIGS
        .iter()
        .map(|(label, spec)| {
            let mut s = ConfigSpec::with_overrides(&base, spec)?;
            s.label = label.to_string();
            Ok(s)
        })
        .collect()
}

/// The rows of one trace's runs (classic's first).
pub fn rows(trace: &str, runs: &[RunResult]) -> Vec<ChainRow> {
    let peak = |r: &RunResult| r.pages_peak * r.config.page_size as u64;
    let (base_peak, base_copy) = runs.first().map_or((0, 0), |c| (peak(c), c.read_copy_bytes));
    runs.iter()
        .map(|r| ChainRow {
            trace: trace.to_string(),
            config: r.label.clone(),
            page_size: r.config.page_size as u64,
            pages: r.pages,
            pages_peak: r.pages_peak,
            peak_bytes: peak(r),
            peak_vs_classic_pct: delta_value(delta_tenths_u64(base_peak, peak(r))),
            reads: r.reads,
            reads_spanning: r.reads_spanning,
            read_copy_bytes: r.read_copy_bytes,
            copy_vs_classic_pct: delta_value(delta_tenths_u64(base_copy, r.read_copy_bytes)),
        })
        .collect()
}

pub fn study(corpus: &Corpus, opts: &StudyOptions, p: &Progress) -> LabResult<Vec<ChainRow>> {
    let specs = specs()?;
    let mut out = Vec::new();
    for (t, path) in corpus.page_traces() {
        p.step(&format!("chains: {} ({} configurations)", t.program, specs.len()));
        let runs = replay(&path, &specs, opts.jobs, false)?;
        out.extend(rows(&Corpus::name(t), &runs));
    }
    Ok(out)
}
