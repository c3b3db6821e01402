//! zblock's block table for `zsmalloc classes --backend zblock`: one row per block type (slot
//! size, slots, pages per block, tail waste), as text, JSON or CSV, and its plot.

use std::path::Path;

use serde::Serialize;

use crate::error::{LabError, LabResult};
use crate::plot::{draw, steps, Figure, Panel, Series, Style};
use zsmalloc_core::zblock::{table::header_size, BlockTable};

/// One block type.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BlockTypeRow {
    /// The type's index (`zs_class_stats` index of a zblock pool).
    pub index: u32,
    pub slot_size: u32,
    pub slots: u32,
    pub pages_per_block: u32,
    /// Bytes of a block no slot uses (after the header).
    pub tail_waste: u32,
    /// Lengths this type stores: from the previous slot size up to its own slot size minus one
    /// (a length equal to a slot size goes to the next type).
    pub min_len: u32,
    pub max_len: u32,
}

/// A page size's block table.
#[derive(Debug, Clone, Serialize)]
pub struct BlockTableReport {
    pub page_size: u32,
    pub header_bytes: u32,
    /// The smallest length zblock refuses (`zs_huge_class_size` of a zblock pool).
    pub smallest_refused_len: u32,
    pub rows: Vec<BlockTypeRow>,
}

/// The block table of `page_size` pages; 8K is refused as zblock does not build there.
pub fn block_table(page_size: u32) -> LabResult<BlockTableReport> {
    let table = BlockTable::new(page_size).map_err(|e| match e {
        zsmalloc_core::Error::Config { message, .. } => {
            LabError::usage(format!("invalid page-size: {message}"))
        }
        other => LabError::from(other),
    })?;
    let mut prev = 0;
    let rows = table
        .types()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let row = BlockTypeRow {
                index: i as u32,
                slot_size: t.slot_size,
                slots: t.slots,
                pages_per_block: t.num_pages,
                tail_waste: t.tail_waste,
                min_len: prev.max(1),
                max_len: t.slot_size - 1,
            };
            prev = t.slot_size;
            row
        })
        .collect();
    Ok(BlockTableReport {
        page_size,
        header_bytes: header_size(page_size),
        smallest_refused_len: table.max_slot_size(),
        rows,
    })
}

pub fn render_table(t: &BlockTableReport) -> String {
    let mut out =
        format!("zblock block table, page {} (header {} bytes)\n\n", t.page_size, t.header_bytes);
    out += "type  slot size  slots  pages  tail waste  lengths\n";
    for r in &t.rows {
        out += &format!(
            "{:>4}  {:>9}  {:>5}  {:>5}  {:>10}  {}..={}\n",
            r.index, r.slot_size, r.slots, r.pages_per_block, r.tail_waste, r.min_len, r.max_len
        );
    }
    out += &format!(
        "\n{} types; lengths from {} up are refused (ENOSPC)\n",
        t.rows.len(),
        t.smallest_refused_len
    );
    out
}

pub fn render_json(t: &BlockTableReport) -> LabResult<String> {
    serde_json::to_string_pretty(&serde_json::json!({ "backend": "zblock", "table": t }))
        .map(|s| s + "\n")
        .map_err(|e| LabError::runtime(format!("json: {e}")))
}

pub fn render_csv(t: &BlockTableReport) -> String {
    let mut out =
        String::from("page_size,type,slot_size,slots,pages_per_block,tail_waste,min_len,max_len\n");
    for r in &t.rows {
        out += &format!(
            "{},{},{},{},{},{},{},{}\n",
            t.page_size,
            r.index,
            r.slot_size,
            r.slots,
            r.pages_per_block,
            r.tail_waste,
            r.min_len,
            r.max_len
        );
    }
    out
}

/// Pages per block, slots per block and tail waste against the lengths each type stores.
pub fn plot(path: &Path, t: &BlockTableReport) -> LabResult<()> {
    type RowFn = fn(&BlockTypeRow) -> f64;
    let shapes: [(&str, &str, RowFn); 3] = [
        ("pages per block", "pages", |r| f64::from(r.pages_per_block)),
        ("slots per block", "slots", |r| f64::from(r.slots)),
        ("tail waste per block", "bytes", |r| f64::from(r.tail_waste)),
    ];
    let panels = shapes
        .iter()
        .map(|&(title, unit, f)| {
            let points: Vec<(f64, f64)> =
                t.rows.iter().map(|r| (f64::from(r.min_len), f(r))).collect();
            Panel {
                title: title.into(),
                x_desc: "object length (bytes)".into(),
                y_desc: unit.into(),
                series: vec![Series::new("zblock", steps(&points), Style::Step, 0)],
                from_zero: true,
                int_x: true,
                int_y: true,
                ..Default::default()
            }
        })
        .collect();
    let title = format!("zblock block table: page {}", t.page_size);
    draw(path, &Figure { title, subtitle: Vec::new(), panels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_4k_table_starts_and_ends_where_zblock_does() {
        let t = block_table(4096).unwrap();
        assert_eq!(t.rows.len(), 37);
        let first = &t.rows[0];
        assert_eq!((first.slots, first.pages_per_block, first.slot_size), (28, 1, 144));
        assert_eq!((first.min_len, first.max_len), (1, 143));
        assert_eq!(t.smallest_refused_len, 4080);
        assert_eq!(t.rows[1].min_len, 144, "a length equal to a slot size goes to the next type");
        assert!(block_table(8192).unwrap_err().to_string().contains("8192"));
        assert!(render_csv(&t).lines().count() == 38);
    }
}
