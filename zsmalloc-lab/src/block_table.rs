//! zblock's block table for `zsmalloc classes --backend zblock`: one row per block type (slot
//! size, slots, pages per block, tail waste). Printed by the report module's
//! `block_table`, drawn by the plot module's.

use serde::Serialize;

use crate::error::{LabError, LabResult};
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
    }
}
