//! `zsmalloc folios --plot`: pages and swap-in CPU against the folio size, one colour per
//! compressor.

use std::path::Path;

use super::draw::draw;
use super::figure::{Figure, Panel, Series, Style};
use crate::error::LabResult;
use crate::folios::{FolioRow, FoliosReport};

/// The figure of a `folios` run.
pub fn folios(path: &Path, r: &FoliosReport) -> LabResult<()> {
    draw(path, &figure(r))
}

fn label(size: u32) -> String {
    format!("{}K", size / 1024)
}

/// Pages, swap-in and swap-out CPU against the folio size (categories in size order).
pub fn figure(r: &FoliosReport) -> Figure {
    let mut sizes: Vec<u32> = r.rows.iter().map(|w| w.folio_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut compressors: Vec<&str> = Vec::new();
    for w in &r.rows {
        if !compressors.contains(&w.compressor.as_str()) {
            compressors.push(&w.compressor);
        }
    }
    let x_of = |w: &FolioRow| sizes.iter().position(|&s| s == w.folio_size).unwrap_or(0) as f64;
    let panel = |title: &str, y: &str, int_y: bool, f: &dyn Fn(&FolioRow) -> f64| Panel {
        title: title.into(),
        x_desc: "folio size".into(),
        y_desc: y.into(),
        series: compressors
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let pts: Vec<(f64, f64)> =
                    r.rows.iter().filter(|w| w.compressor == *c).map(|w| (x_of(w), f(w))).collect();
                Series::new(c.to_string(), pts, Style::Line, ci)
            })
            .collect(),
        int_y,
        x_categories: sizes.iter().map(|&s| label(s)).collect(),
        ..Default::default()
    };
    let panels = vec![
        panel("pool pages after the fill", "pages", true, &|w| w.pages_used as f64),
        panel("pool pages after churn and compact", "pages", true, &|w| {
            w.pages_after_compaction as f64
        }),
        panel("swap-in CPU, large folio (median)", "ns per 4K", false, &|w| {
            w.reads.large_folio.ns_per_4k.median
        }),
        panel(
            &format!(
                "swap-in CPU, {:.0}% of swap-ins falling back to order 0 (median)",
                100.0 * r.fallback_share
            ),
            "ns per 4K",
            false,
            &|w| w.reads.mixed_order0.ns_per_4k.median,
        ),
        panel("swap-out CPU, compressed by folio (median)", "ns per 4K", false, &|w| {
            w.writes.ns_per_4k.median
        }),
    ];
    Figure {
        title: format!("large folios as one object: {}", r.source),
        subtitle: vec![format!(
            "{} bytes; page {}, chain {}{}; churn {}; {} rounds",
            r.input_bytes,
            r.page_size,
            r.chain_size,
            r.zstd_level_note(),
            r.churn_share,
            r.repeat
        )],
        panels,
        columns: 1,
    }
}
