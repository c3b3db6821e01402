//! The report's figures of folios and readahead: what a fault decompressed, what the run
//! stored, how much of the readahead was used.

use serde_json::{json, Value};

use crate::folio::folio_text;
use crate::report::Report;
use crate::stats::Field;

const PAGE: u64 = 4096;

impl Report {
    /// Bytes decompressed per fault on an evicted page (same-filled ones count, with none).
    pub fn decompressed_per_fault(&self) -> f64 {
        let faults = self.get(Field::Faults);
        if faults == 0 {
            return 0.0;
        }
        self.get(Field::DecompressedBytes) as f64 / faults as f64
    }

    /// Compressed bytes per page stored, over the whole run.
    pub fn compressed_per_stored_page(&self) -> f64 {
        let pages = self.get(Field::StoresTotalPages);
        if pages == 0 {
            return 0.0;
        }
        self.get(Field::StoresTotalBytes) as f64 / pages as f64
    }

    pub(crate) fn add_folio_json(&self, v: &mut Value) {
        let round = |x: f64| (x * 10.0).round() / 10.0;
        v["folio_size"] = json!(u64::from(self.folio_pages.max(1)) * PAGE);
        v["group_evictions"] = json!(self.get(Field::GroupEvictions));
        v["decompressed_bytes"] = json!(self.get(Field::DecompressedBytes));
        v["decompressed_bytes_per_fault"] = json!(round(self.decompressed_per_fault()));
        v["stored_pages_total"] = json!(self.get(Field::StoresTotalPages));
        v["compressed_bytes_total"] = json!(self.get(Field::StoresTotalBytes));
        v["compressed_bytes_per_stored_page"] = json!(round(self.compressed_per_stored_page()));
        v["readahead"] = json!(self.readahead);
        v["readahead_pages"] = json!(self.get(Field::ReadaheadPages));
        v["readahead_hits"] = json!(self.get(Field::ReadaheadHits));
    }

    pub(crate) fn folio_text(&self) -> String {
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        let mut s = String::new();
        if self.folio_pages > 1 {
            s += &format!(
                "  folios                {}: {} groups evicted as one object each\n",
                folio_text(self.folio_pages),
                self.get(Field::GroupEvictions)
            );
        }
        s += &format!(
            "  decompressed          {}, {:.0} B per fault; {} pages stored in the run, {:.0} B \
             compressed per page\n",
            mib(self.get(Field::DecompressedBytes)),
            self.decompressed_per_fault(),
            self.get(Field::StoresTotalPages),
            self.compressed_per_stored_page()
        );
        if self.readahead > 0 {
            let (read, hits) = (self.get(Field::ReadaheadPages), self.get(Field::ReadaheadHits));
            s += &format!(
                "  readahead             page-cluster {} ({} pages): {read} pages read ahead, \
                 {hits} used ({:.0}%)\n",
                self.readahead,
                1u32 << self.readahead,
                if read == 0 { 0.0 } else { hits as f64 * 100.0 / read as f64 }
            );
        }
        s
    }
}
