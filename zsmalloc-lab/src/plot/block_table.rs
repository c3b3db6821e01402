//! `zsmalloc classes --backend zblock --plot`: zblock's block types against the lengths each
//! stores.

use std::path::Path;

use super::draw::draw;
use super::figure::{spans, Figure, Panel, Series, Style};
use crate::block_table::{BlockTableReport, BlockTypeRow};
use crate::error::LabResult;

/// Pages per block, slots per block and tail waste against the lengths each type stores.
pub fn block_table(path: &Path, t: &BlockTableReport) -> LabResult<()> {
    let title = format!("zblock block table: page {}", t.page_size);
    draw(path, &Figure { title, panels: panels(t), ..Default::default() })
}

/// One panel per shape; each type's value is held over the lengths it stores,
/// `min_len..=max_len`, drawn from `min_len` to `max_len + 1` (its slot size) so the types
/// tile the axis from 1 up to the first refused length.
fn panels(t: &BlockTableReport) -> Vec<Panel> {
    type RowFn = fn(&BlockTypeRow) -> f64;
    let shapes: [(&str, &str, RowFn); 3] = [
        ("pages per block", "pages", |r| f64::from(r.pages_per_block)),
        ("slots per block", "slots", |r| f64::from(r.slots)),
        ("tail waste per block", "bytes", |r| f64::from(r.tail_waste)),
    ];
    shapes
        .iter()
        .map(|&(title, unit, f)| {
            let points: Vec<(f64, f64, f64)> = t
                .rows
                .iter()
                .map(|r| (f64::from(r.min_len), f64::from(r.max_len) + 1.0, f(r)))
                .collect();
            Panel {
                title: title.into(),
                x_desc: "object length (bytes)".into(),
                y_desc: unit.into(),
                series: vec![Series::new("zblock", spans(&points), Style::Step, 0)],
                int_x: true,
                int_y: true,
                ..Default::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_drawn_over_the_lengths_it_stores() {
        let t = crate::block_table::block_table(4096).unwrap();
        for p in panels(&t) {
            let pts = &p.series[0].points;
            assert_eq!(pts.first().map(|p| p.0), Some(1.0), "{}: starts at length 1", p.title);
            assert_eq!(
                pts.last().map(|p| p.0),
                Some(4080.0),
                "{}: ends where zblock refuses",
                p.title
            );
            for (r, pair) in t.rows.iter().zip(pts.chunks(2)) {
                assert_eq!(pair[0].0, f64::from(r.min_len), "{}", p.title);
                assert_eq!(pair[1].0, f64::from(r.max_len) + 1.0, "{}", p.title);
                assert_eq!(pair[0].1, pair[1].1);
            }
        }
        // 144 bytes is the second type's (a length equal to a slot size goes to the next).
        let pages = &panels(&t)[1].series[0].points;
        assert_eq!((pages[2].0, pages[2].1), (144.0, f64::from(t.rows[1].slots)));
    }
}
