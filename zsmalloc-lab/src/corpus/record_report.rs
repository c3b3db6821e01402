//! `zsmalloc corpus record`: the traces recorded (a table, a line per trace, then the programs
//! and runs skipped), as JSON (the manifest and the skipped) or as CSV (a line per trace, the
//! manifest's keys as headers).

use serde_json::Value;

use super::recorder::{mib, Recorded};
use crate::error::LabResult;
use crate::report::csv::{self, to_value, Column, Numbers};
use crate::report::grid::with_head;
use crate::report::Render;

/// The CSV's columns: a trace's manifest entry but its argv (a list).
const KEYS: [&str; 16] = [
    "file",
    "program",
    "input",
    "rss_bytes",
    "budget_bytes",
    "budget_share",
    "policy",
    "compressor",
    "folio_size",
    "pool_page_size",
    "ops",
    "trace_bytes",
    "sha256",
    "wall_s",
    "faults",
    "exit_status",
];

impl Render for Recorded {
    const COMMAND: &'static str = "corpus record";

    fn table(&self) -> String {
        let head = [
            "file",
            "rss",
            "budget",
            "share",
            "folio",
            "operations",
            "trace bytes",
            "wall s",
            "faults",
            "status",
        ];
        let rows: Vec<Vec<String>> = self
            .manifest
            .traces
            .iter()
            .map(|t| {
                vec![
                    t.file.clone(),
                    mib(t.rss_bytes),
                    mib(t.budget_bytes),
                    t.budget_share.clone(),
                    format!("{}K", t.folio_size / 1024),
                    t.ops.to_string(),
                    t.trace_bytes.to_string(),
                    format!("{:.2}", t.wall_s),
                    t.faults.to_string(),
                    t.exit_status.to_string(),
                ]
            })
            .collect();
        let mut out = with_head(&head, &rows, 1);
        for s in &self.skipped {
            out += &format!("skipped {}: {}\n", s.program, s.why);
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        crate::report::json(self)
    }

    fn csv(&self) -> String {
        let rows: Vec<Value> = self.manifest.traces.iter().map(to_value).collect();
        let scopes: Vec<Vec<&Value>> = rows.iter().map(|r| vec![r]).collect();
        csv::table(&columns(), &scopes, Numbers::Plain)
    }
}

/// The CSV columns.
pub fn columns() -> Vec<Column> {
    KEYS.iter().map(|k| Column::at(&[k])).collect()
}
