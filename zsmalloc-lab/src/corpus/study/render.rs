//! The study's report: one table per question, its columns named once ([`sections`]) for the
//! text, the CSV (a `table` column naming the question, then the row's JSON keys) and the JSON
//! (the report's structures serialised).

use serde::Serialize;
use serde_json::Value;

use super::StudyReport;
use crate::error::LabResult;
use crate::report::csv::{self, to_value, Column, Numbers};
use crate::report::grid::with_head;
use crate::report::Render;

/// One question's table: its name (the JSON key and CSV `table` value), title, columns (text
/// header, JSON key), rows and a note when it has none.
pub struct Section {
    pub name: &'static str,
    pub title: &'static str,
    pub columns: &'static [(&'static str, &'static str)],
    pub rows: Vec<Value>,
    pub note: Option<String>,
}

fn values<T: Serialize>(rows: &[T]) -> Vec<Value> {
    rows.iter().map(to_value).collect()
}

/// The report's sections, in the order printed.
pub fn sections(r: &StudyReport) -> Vec<Section> {
    vec![
        Section {
            name: "traces",
            title: "Traces",
            columns: &[
                ("trace", "trace"),
                ("file", "file"),
                ("folio", "folio_size"),
                ("compressor", "compressor"),
                ("ops", "ops"),
                ("rss", "rss_bytes"),
                ("budget", "budget_bytes"),
                ("studied", "studied"),
            ],
            rows: values(&r.traces),
            note: None,
        },
        Section {
            name: "chains",
            title: "Chain length: pages, peak and spanning reads per configuration",
            columns: &[
                ("trace", "trace"),
                ("config", "config"),
                ("page", "page_size"),
                ("pages", "pages"),
                ("peak", "pages_peak"),
                ("peak bytes", "peak_bytes"),
                ("peak vs classic %", "peak_vs_classic_pct"),
                ("reads", "reads"),
                ("spanning", "reads_spanning"),
                ("copied", "read_copy_bytes"),
                ("copied vs classic %", "copy_vs_classic_pct"),
            ],
            rows: values(&r.chains),
            note: None,
        },
        Section {
            name: "leave_one_out",
            title: "The optimizer's table learnt on the other traces, tested on this one",
            columns: &[
                ("trace", "trace"),
                ("learnt on", "trained_on"),
                ("classes changed", "classes_changed"),
                ("pages@peak classic", "classic_pages"),
                ("learnt", "learnt_pages"),
                ("%", "pages_vs_classic_pct"),
                ("max pages classic", "classic_pages_peak"),
                ("learnt", "learnt_pages_peak"),
                ("%", "peak_vs_classic_pct"),
                ("spanning classic", "classic_reads_spanning"),
                ("learnt", "learnt_reads_spanning"),
                ("%", "spanning_vs_classic_pct"),
                ("prefix spanning own best", "own_best_reads_spanning_prefix"),
                ("learnt", "learnt_reads_spanning_prefix"),
                ("as predicted", "predicted_exactly"),
            ],
            rows: values(&r.leave_one_out.rows),
            note: r.leave_one_out.note.clone(),
        },
        Section {
            name: "folios",
            title: "Folios: the corpus's 4K, 16K and 64K traces of a program",
            columns: &[
                ("program", "program"),
                ("compressor", "compressor"),
                ("folio", "folio_size"),
                ("stores", "stores"),
                ("bytes@peak", "bytes_peak"),
                ("pages used", "pages_used"),
                ("max pages used", "max_pages_used"),
                ("vs 4K %", "peak_vs_4k_pct"),
                ("reads", "reads"),
                ("faults", "faults"),
                ("decompressed/fault", "decompressed_per_fault"),
            ],
            rows: values(&r.folios.rows),
            note: r.folios.note.clone(),
        },
        Section {
            name: "backends",
            title: "zblock against zsmalloc; density at the peak against the 2012 figures",
            columns: &[
                ("trace", "trace"),
                ("backend", "backend"),
                ("max pages", "pages_peak"),
                ("vs zsmalloc %", "peak_vs_zsmalloc_pct"),
                ("objs/page", "density_peak"),
                ("mean len", "mean_len_peak"),
                ("2012 objs/page", "density_2012"),
                ("spanning", "reads_spanning"),
                ("refused", "stores_refused"),
            ],
            rows: values(&r.backends),
            note: None,
        },
        Section {
            name: "frees",
            title: "Frees: consecutive frees in the same class (mainline's classes)",
            columns: &[
                ("trace", "trace"),
                ("frees", "frees"),
                ("pairs", "pairs"),
                ("same class %", "same_class_pct"),
                ("within 1 %", "within_1_pct"),
                ("within 4 %", "within_4_pct"),
                ("within 16 %", "within_16_pct"),
                ("back-to-back", "adjacent_pairs"),
                ("same class %", "adjacent_same_class_pct"),
            ],
            rows: values(&r.frees),
            note: None,
        },
        Section {
            name: "free_cost",
            title: "What a free costs in the pool (wall ns per free, median of 5)",
            columns: &[
                ("case", "case"),
                ("threads", "threads"),
                ("frees", "frees"),
                ("ns/free", "ns_per_free"),
            ],
            rows: values(&r.free_cost.rows),
            note: free_cost_note(r),
        },
    ]
}

fn free_cost_note(r: &StudyReport) -> Option<String> {
    let c = &r.free_cost;
    let fmt = |v: Option<f64>| v.map_or_else(|| "n/a".into(), |v| format!("{v} ns"));
    let mut note = String::new();
    if !c.rows.is_empty() {
        note += &format!(
            "release (emptied - kept): {}; class lock under 2 threads (one class - two): {}\n",
            fmt(c.release_ns),
            fmt(c.lock_contention_ns)
        );
    } else {
        note += "not measured (--free-ops 0)\n";
    }
    for s in &c.cannot_split {
        note += &format!("cannot split: {s}\n");
    }
    Some(note.trim_end().to_string())
}

/// A JSON value as a text cell.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "n/a".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
        Some(other) => other.to_string(),
    }
}

impl Render for StudyReport {
    const COMMAND: &'static str = "corpus study";

    fn table(&self) -> String {
        let mut out = format!(
            "Corpus {} ({} traces, studied in {} s)\n",
            self.corpus,
            self.traces.len(),
            self.wall_s
        );
        for s in sections(self) {
            out += &format!("\n{}\n", s.title);
            if !s.rows.is_empty() {
                let head: Vec<&str> = s.columns.iter().map(|c| c.0).collect();
                let rows: Vec<Vec<String>> = s
                    .rows
                    .iter()
                    .map(|r| s.columns.iter().map(|c| cell(r.get(c.1))).collect())
                    .collect();
                let left =
                    s.columns.iter().take_while(|c| matches!(r_kind(&s, c.1), Kind::Text)).count();
                out += &with_head(&head, &rows, left.max(1));
            }
            if let Some(n) = &s.note {
                out += &format!("{n}\n");
            }
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        crate::report::json(self)
    }

    /// One block per question: a header line, then its rows; the first column, `table`, names
    /// the question.
    fn csv(&self) -> String {
        let mut out = String::new();
        for s in sections(self) {
            let mut columns = vec![Column::constant("table", s.name)];
            columns.extend(s.columns.iter().map(|c| Column::renamed(c.1, &[c.1])));
            let scopes: Vec<Vec<&Value>> = s.rows.iter().map(|r| vec![r]).collect();
            out += &csv::table(&columns, &scopes, Numbers::Plain);
        }
        out
    }
}

enum Kind {
    Text,
    Other,
}

/// Whether a column holds text in the section's rows (left-aligned) or figures.
fn r_kind(s: &Section, key: &str) -> Kind {
    match s.rows.first().and_then(|r| r.get(key)) {
        Some(Value::String(_)) => Kind::Text,
        _ => Kind::Other,
    }
}
