//! zblock against zsmalloc, and density: objects per page frame at the pool's peak, under
//! mainline, under the 2012 allocator (`profile=2012`: chains of at most 4, classes 16 bytes
//! apart, no merging) and under zblock, beside the mean object length, to read against the
//! 2012 thread's 3.2 / 1.9 / 1.6 objects per page (mean lengths 694, 1340 and 1636 bytes).

use serde::Serialize;

use super::replay::replay;
use super::{Corpus, Progress, StudyOptions};
use crate::config::ConfigSpec;
use crate::error::LabResult;
use crate::result::{delta_tenths_u64, delta_value};

/// The configurations, mainline first (the reference of the deltas).
pub const CONFIGS: [(&str, &str); 3] =
    [("zsmalloc", "chain-size=8"), ("zsmalloc 2012", "profile=2012"), ("zblock", "backend=zblock")];

/// The 2012 thread's figures: mean compressed length, objects per page frame.
pub const THREAD_2012: [(u64, f64); 3] = [(694, 3.2), (1340, 1.9), (1636, 1.6)];

#[derive(Debug, Clone, Serialize)]
pub struct BackendRow {
    pub trace: String,
    pub backend: String,
    pub pages_peak: u64,
    pub peak_vs_zsmalloc_pct: Option<f64>,
    /// Objects per page frame when the pool held the most pages.
    pub density_peak: Option<f64>,
    /// Mean object length at the peak (bytes at the peak over objects then).
    pub mean_len_peak: Option<u64>,
    /// The 2012 figure for the nearest of its mean lengths.
    pub density_2012: f64,
    pub reads_spanning: u64,
    /// Stores the backend refused (zblock takes no object of a page or near it): its pages hold
    /// fewer objects than mainline's then.
    pub stores_refused: u64,
}

pub fn study(corpus: &Corpus, opts: &StudyOptions, p: &Progress) -> LabResult<Vec<BackendRow>> {
    let base = ConfigSpec::default();
    let specs: Vec<ConfigSpec> = CONFIGS
        .iter()
        .map(|(label, spec)| {
            let mut s = ConfigSpec::with_overrides(&base, spec)?;
            s.label = label.to_string();
            Ok(s)
        })
        .collect::<LabResult<_>>()?;
    let mut rows = Vec::new();
    for (t, path) in corpus.page_traces() {
        p.step(&format!("backends: {} (zsmalloc, 2012, zblock)", t.program));
        let runs = replay(&path, &specs, opts.jobs, false)?;
        let base_peak = runs[0].pages_peak;
        for r in &runs {
            let page = r.config.page_size as f64;
            let bytes = r.utilization_pct_peak / 100.0 * r.pages_peak as f64 * page;
            let objects = r.density_peak.map(|d| d * r.pages_peak as f64);
            let mean = objects.filter(|&o| o >= 1.0).map(|o| (bytes / o).round() as u64);
            let nearest = THREAD_2012
                .iter()
                .min_by_key(|(len, _)| len.abs_diff(mean.unwrap_or(0)))
                .map_or(0.0, |x| x.1);
            rows.push(BackendRow {
                trace: Corpus::name(t),
                backend: r.label.clone(),
                pages_peak: r.pages_peak,
                peak_vs_zsmalloc_pct: delta_value(delta_tenths_u64(base_peak, r.pages_peak)),
                density_peak: r.density_peak,
                mean_len_peak: mean,
                density_2012: nearest,
                reads_spanning: r.reads_spanning,
                stores_refused: r.store_failures,
            });
        }
    }
    Ok(rows)
}
