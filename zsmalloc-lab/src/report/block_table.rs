//! `zsmalloc classes --backend zblock`: zblock's block table as text, JSON
//! (`{"backend": "zblock", "table": ...}`) or CSV (one row per block type).

use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::Render;
use crate::block_table::BlockTableReport;
use crate::error::LabResult;

/// The CSV's columns: the page size, then the row's keys (the type's index headed `type`, as
/// the text table heads it).
fn columns() -> Vec<Column> {
    let mut cols = vec![Column::at(&["page_size"]), Column::renamed("type", &["index"])];
    for k in ["slot_size", "slots", "pages_per_block", "tail_waste", "min_len", "max_len"] {
        cols.push(Column::at(&[k]));
    }
    cols
}

impl Render for BlockTableReport {
    const COMMAND: &'static str = "classes";

    fn table(&self) -> String {
        let mut out = format!(
            "zblock block table, page {} (header {} bytes)\n\n",
            self.page_size, self.header_bytes
        );
        out += "type  slot size  slots  pages  tail waste  lengths\n";
        for r in &self.rows {
            out += &format!(
                "{:>4}  {:>9}  {:>5}  {:>5}  {:>10}  {}..={}\n",
                r.index,
                r.slot_size,
                r.slots,
                r.pages_per_block,
                r.tail_waste,
                r.min_len,
                r.max_len
            );
        }
        out += &format!(
            "\n{} types; lengths from {} up are refused (ENOSPC)\n",
            self.rows.len(),
            self.smallest_refused_len
        );
        out
    }

    fn json(&self) -> LabResult<String> {
        super::json(&serde_json::json!({ "backend": "zblock", "table": self }))
    }

    fn csv(&self) -> String {
        let table = to_value(self);
        let rows: Vec<Value> = self.rows.iter().map(to_value).collect();
        let scoped: Vec<Vec<&Value>> = rows.iter().map(|r| vec![r, &table]).collect();
        csv::table(&columns(), &scoped, Numbers::Plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_a_key_of_the_json() {
        let t = crate::block_table::block_table(4096).unwrap();
        let (tv, rv) = (to_value(&t), to_value(&t.rows[0]));
        assert!(csv::unresolved(&columns(), &[vec![&rv, &tv]]).is_empty());
        assert!(t.csv().starts_with("page_size,type,slot_size,slots,pages_per_block,"));
        assert_eq!(t.csv().lines().count(), 38, "a header and 37 block types");
    }
}
