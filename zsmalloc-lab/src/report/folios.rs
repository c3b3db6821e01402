//! `zsmalloc folios`: the study as text (the run's lines, a store table and a CPU table), as
//! JSON (the report as it is) or as CSV (one line per compressor and folio size).

use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::grid::with_head;
use super::Render;
use crate::error::LabResult;
use crate::folios::row::ReadPath;
use crate::folios::FoliosReport;
use crate::timing::Samples;

impl Render for FoliosReport {
    const COMMAND: &'static str = "folios";

    fn table(&self) -> String {
        table(self)
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }

    fn csv(&self) -> String {
        let rows: Vec<Value> = self.rows.iter().map(to_value).collect();
        let scopes: Vec<Vec<&Value>> = rows.iter().map(|r| vec![r]).collect();
        csv::table(&columns(), &scopes, Numbers::Plain)
    }
}

/// The CSV columns: the row's scalars, then each path's figures under `path_` headers.
pub fn columns() -> Vec<Column> {
    let mut c: Vec<Column> = [
        "compressor",
        "folio_size",
        "multi_page_size",
        "folios",
        "same_filled",
        "raw",
        "compressed_bytes",
        "ratio",
        "objects",
        "huge_class_size",
        "pages_used",
        "max_pages_used",
        "pages_after_compaction",
    ]
    .iter()
    .map(|k| Column::at(&[k]))
    .collect();
    c.push(Column::at(&["compaction", "objects_moved"]));
    c.push(Column::at(&["compaction", "bytes_moved"]));
    c.push(Column::at(&["padding_bytes"]));
    c.push(Column::at(&["unused_bytes"]));
    c.push(Column::at(&["churned"]));
    c.push(Column::at(&["refilled"]));
    c.push(Column::at(&["reads", "sample_folios"]));
    for path in ["large_folio", "order0_fallback", "batch_fallback", "mixed_order0", "mixed_batch"]
    {
        let head = |k: &str| format!("{path}_{k}");
        c.push(Column::renamed(
            &head("bytes_decompressed_per_4k"),
            &["reads", path, "bytes_decompressed_per_4k"],
        ));
        for s in ["min", "median", "max"] {
            c.push(Column::renamed(
                &head(&format!("ns_per_4k_{s}")),
                &["reads", path, "ns_per_4k", s],
            ));
        }
    }
    for (w, h) in [("ns_per_4k", "write"), ("ns_per_4k_by_page", "write_by_page")] {
        for s in ["min", "median", "max"] {
            c.push(Column::renamed(&format!("{h}_ns_per_4k_{s}"), &["writes", w, s]));
        }
    }
    c.push(Column::at(&["fill_compress_seconds"]));
    c
}

fn size(b: u32) -> String {
    if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}K", b / 1024)
    } else {
        b.to_string()
    }
}

fn ns(s: &Samples) -> String {
    format!("{:.0} [{:.0}..{:.0}]", s.median, s.min, s.max)
}

fn path(p: &ReadPath) -> String {
    format!("{} ({}B)", ns(&p.ns_per_4k), p.bytes_decompressed_per_4k)
}

fn table(r: &FoliosReport) -> String {
    let level = r.zstd_level_note();
    let mut out = format!(
        "corpus: {} ({} bytes, {} pages of {})\n\
         pool: page {}, chain {}{level}; churn {} (refill {}); fallback share {}; {} \
         rounds, seed {}\n\n",
        r.source,
        r.input_bytes,
        r.input_bytes / u64::from(r.page_size),
        r.page_size,
        r.page_size,
        r.chain_size,
        r.churn_share,
        r.refill_share,
        r.fallback_share,
        r.repeat,
        r.seed
    );
    let store: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|w| {
            vec![
                w.compressor.clone(),
                size(w.folio_size),
                w.compressed_bytes.to_string(),
                format!("{:.2}%", 100.0 * w.ratio),
                w.same_filled.to_string(),
                w.raw.to_string(),
                w.pages_used.to_string(),
                w.max_pages_used.to_string(),
                w.pages_after_compaction.to_string(),
                format!(
                    "{} / {:.1} MiB",
                    w.compaction.objects_moved,
                    w.compaction.bytes_moved as f64 / f64::from(1 << 20)
                ),
                format!("{:.1} MiB", w.padding_bytes as f64 / f64::from(1 << 20)),
                format!("{:.1} MiB", w.unused_bytes as f64 / f64::from(1 << 20)),
            ]
        })
        .collect();
    out += "Store (pages after the fill, at the peak, after churn and compact; padding: class \
            size less object and header; unused: free slots and zspage tails after the fill):\n";
    out += &with_head(
        &[
            "compressor",
            "folio",
            "compressed",
            "ratio",
            "same",
            "raw",
            "pages",
            "max pages",
            "pages after compaction",
            "moved (objs / bytes)",
            "padding",
            "unused",
        ],
        &store,
        2,
    );
    let cpu: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|w| {
            vec![
                w.compressor.clone(),
                size(w.folio_size),
                path(&w.reads.large_folio),
                path(&w.reads.order0_fallback),
                path(&w.reads.batch_fallback),
                format!("{:.0}", w.reads.mixed_order0.ns_per_4k.median),
                format!("{:.0}", w.reads.mixed_batch.ns_per_4k.median),
                ns(&w.writes.ns_per_4k),
                ns(&w.writes.ns_per_4k_by_page),
            ]
        })
        .collect();
    out += &format!(
        "\nCPU per 4K page, ns, median [min..max] (bytes decompressed per 4K); mixed: {} of \
         swap-ins fall back:\n",
        r.fallback_share
    );
    out += &with_head(
        &[
            "compressor",
            "folio",
            "swap-in large folio",
            "order-0 fallback",
            "batch fallback",
            "mixed order-0",
            "mixed batch",
            "swap-out by folio",
            "by 4K page",
        ],
        &cpu,
        2,
    );
    let t = &r.time;
    let codec = t.fill_compress_seconds + t.timed_rounds_seconds;
    out += &format!(
        "\ntime: {:.1} s wall, {:.1} s CPU: corpus {:.1} s, fill compression {:.1} s, timed rounds \
         {:.1} s (compressors and decompressors most of them: {:.0}% of the CPU)\n",
        t.wall_seconds,
        t.cpu_seconds,
        t.corpus_seconds,
        t.fill_compress_seconds,
        t.timed_rounds_seconds,
        if t.cpu_seconds > 0.0 { 100.0 * codec / t.cpu_seconds } else { 0.0 }
    );
    out
}
