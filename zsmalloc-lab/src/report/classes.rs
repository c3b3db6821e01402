//! `zsmalloc classes`: one or two class tables as the RFC prints them (side by side, rows
//! matched by logical size), as JSON (`{"tables": [...]}`) or as CSV (one row per logical size
//! of each table).

use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::Render;
use crate::classes::ClassTableReport;
use crate::error::LabResult;

/// The text table's columns: heading, width and the row key shown.
const TEXT: [(&str, usize, &str); 7] = [
    ("Log", 5, "logical_size"),
    ("Phys", 5, "class_size"),
    ("Chain", 5, "chain"),
    ("Objs/Page", 9, "objs_per_zspage"),
    ("TailWaste", 9, "tail_waste"),
    ("MergeWaste", 10, "merge_waste"),
    ("Spanning", 8, "spanning_per_zspage"),
];

/// The CSV's columns: the table's label and configuration, then the row's keys (`order` with
/// the multi-page band).
fn columns(banded: bool) -> Vec<Column> {
    let mut cols = vec![Column::at(&["label"])];
    for k in ["page_size", "chain_size", "class_delta", "chain_policy"] {
        cols.push(Column::at(&["config", k]));
    }
    for k in [
        "logical_size",
        "class_size",
        "class_index",
        "chain",
        "objs_per_zspage",
        "tail_waste",
        "merge_waste",
        "spanning_per_zspage",
        "huge",
    ] {
        cols.push(Column::at(&[k]));
    }
    if banded {
        cols.push(Column::at(&["order"]));
    }
    cols
}

/// The text table's column of the order (chains then count units of `page << order`), shown
/// after the chain with the multi-page band.
const ORDER: (&str, usize, &str) = ("Order", 5, "order");

/// The text table's columns, with the order after the chain when a table has the band.
fn text_columns(banded: bool) -> Vec<(&'static str, usize, &'static str)> {
    let mut cols = TEXT.to_vec();
    if banded {
        cols.insert(3, ORDER);
    }
    cols
}

fn cells(cols: &[(&str, usize, &str)], row: Option<&Value>) -> String {
    cols.iter()
        .map(|&(_, w, key)| {
            let v = row
                .and_then(|r| r.get(key))
                .map_or_else(String::new, |v| csv::cell(v, Numbers::Plain));
            format!("{v:>w$}")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn head(cols: &[(&str, usize, &str)]) -> String {
    cols.iter().map(|&(h, w, _)| format!("{h:>w$}")).collect::<Vec<_>>().join(" | ")
}

fn title(t: &ClassTableReport) -> String {
    let spec_desc = t.config.summary();
    if t.label.is_empty() {
        spec_desc
    } else {
        format!("{} ({spec_desc})", t.label)
    }
}

fn summary(t: &ClassTableReport) -> String {
    let multi = t.huge_class_size_multi.map_or(String::new(), |h| {
        format!(", huge_class_size_multi {h} (multi-page {})", t.config.multi_page_size)
    });
    format!(
        "{}: {} classes for {} indices, huge_class_size {}{multi}, worst merge waste {} bytes/zspage (class {})",
        if t.label.is_empty() { "table" } else { &t.label },
        t.classes,
        t.class_indices,
        t.huge_class_size,
        t.worst_merge_waste,
        t.worst_merge_waste_class
    )
}

impl Render for [ClassTableReport] {
    const COMMAND: &'static str = "classes";

    /// One table, or two side by side (rows matched by logical size).
    fn table(&self) -> String {
        let mut out = String::new();
        let cols = text_columns(self.iter().any(|t| t.huge_class_size_multi.is_some()));
        let width = head(&cols).len();
        let sep = " || ";
        let titles: Vec<String> = self.iter().map(title).collect();
        out += &titles.iter().map(|t| format!("{t:<width$}")).collect::<Vec<_>>().join(sep);
        out = out.trim_end().to_string() + "\n";
        out += &titles
            .iter()
            .map(|t| "=".repeat(t.len().min(width)))
            .map(|u| format!("{u:<width$}"))
            .collect::<Vec<_>>()
            .join(sep);
        out = out.trim_end().to_string() + "\n";
        out += &vec![head(&cols); self.len()].join(sep);
        out += "\n";
        let rows: Vec<Vec<(u32, Value)>> = self
            .iter()
            .map(|t| t.rows.iter().map(|r| (r.logical_size, to_value(r))).collect())
            .collect();
        let mut sizes: Vec<u32> = rows.iter().flat_map(|t| t.iter().map(|r| r.0)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for s in sizes {
            let line: Vec<String> = rows
                .iter()
                .map(|t| cells(&cols, t.iter().find(|r| r.0 == s).map(|r| &r.1)))
                .collect();
            out += &line.join(sep);
            out += "\n";
        }
        out += "\n";
        for t in self {
            out += &summary(t);
            out += "\n";
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        super::json(&serde_json::json!({ "tables": self }))
    }

    fn csv(&self) -> String {
        let tables: Vec<Value> = self.iter().map(to_value).collect();
        let rows: Vec<Vec<Value>> =
            self.iter().map(|t| t.rows.iter().map(to_value).collect()).collect();
        let scoped: Vec<Vec<&Value>> = tables
            .iter()
            .zip(&rows)
            .flat_map(|(t, rs)| rs.iter().map(move |r| vec![r, t]))
            .collect();
        let banded = self.iter().any(|t| t.huge_class_size_multi.is_some());
        csv::table(&columns(banded), &scoped, Numbers::Plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::class_table;
    use crate::config::ConfigSpec;

    #[test]
    fn a_merged_class_prints_its_row() {
        let mut spec = ConfigSpec::default();
        spec.config.page_size = 16384;
        let t = class_table(&spec, 16, Some(1072), Some(1120)).unwrap();
        let text = Render::table(&[t.clone(), t][..]);
        assert!(
            text.contains(" 1072 |  1120 |     8 |       117 |        32 |       5616 |"),
            "{text}"
        );
    }

    #[test]
    fn every_column_is_a_key_of_the_json() {
        let t = class_table(&ConfigSpec::default(), 16, Some(1000), Some(1100)).unwrap();
        let (tv, rv) = (to_value(&t), to_value(&t.rows[0]));
        assert!(csv::unresolved(&columns(false), &[vec![&rv, &tv]]).is_empty());
        for (_, _, key) in TEXT {
            assert!(rv.get(key).is_some(), "{key}");
        }
        let text = [t].csv();
        assert!(
            text.starts_with("label,page_size,chain_size,class_delta,chain_policy,logical_size,")
        );
    }
}
