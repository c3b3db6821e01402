//! `zsmalloc classes --backend zblock --plot`: zblock's block types against the lengths each
//! stores.

use std::path::Path;

use super::draw::draw;
use super::figure::{steps, Figure, Panel, Series, Style};
use crate::block_table::{BlockTableReport, BlockTypeRow};
use crate::error::LabResult;

/// Pages per block, slots per block and tail waste against the lengths each type stores.
pub fn block_table(path: &Path, t: &BlockTableReport) -> LabResult<()> {
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
