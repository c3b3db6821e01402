//! zblock's block table, as data: the block types (slots per block, pages per block) of the
//! merged zblock (2025), their slot sizes, and the lookup of a length's type.
//!
//! A block is `num_pages` pages holding `slots` equal slots after a header of
//! `round_up(sizeof(struct zblock_block), 8)` bytes: 48 with 4K pages (a 64-slot bitmap), 72 with
//! any other page size (a 256-slot bitmap). `slot_size = round_down((num_pages * PAGE - header)
//! / slots, 8)`. 4K pages use the first table; every other page size uses the second (the
//! patch's `#else`, written for 16K pages). The patch does not build with 8K pages: its table
//! exceeds `MAX_TABLE_SIZE` (`1 << (PAGE_SHIFT - SLOT_BITS)` = 32 there), so 8K is refused.

use crate::error::{Error, Result};

/// (slots, pages per block) of 4K pages, ascending slot size.
const TABLE_4K: [(u32, u32); 37] = [
    (28, 1),
    (18, 1),
    (12, 1),
    (10, 1),
    (17, 2),
    (15, 2),
    (13, 2),
    (6, 1),
    (11, 2),
    (5, 1),
    (19, 4),
    (9, 2),
    (17, 4),
    (4, 1),
    (23, 6),
    (11, 3),
    (7, 2),
    (10, 3),
    (19, 6),
    (6, 2),
    (14, 5),
    (8, 3),
    (5, 2),
    (12, 5),
    (9, 4),
    (15, 7),
    (2, 1),
    (15, 8),
    (9, 5),
    (12, 7),
    (13, 8),
    (6, 4),
    (11, 8),
    (9, 7),
    (6, 5),
    (9, 8),
    (4, 4),
];

/// (slots, pages per block) of every other page size, ascending slot size.
const TABLE_OTHER: [(u32, u32); 61] = [
    (185, 1),
    (113, 1),
    (86, 1),
    (72, 1),
    (58, 1),
    (49, 1),
    (42, 1),
    (37, 1),
    (33, 1),
    (59, 2),
    (27, 1),
    (25, 1),
    (23, 1),
    (21, 1),
    (39, 2),
    (37, 2),
    (35, 2),
    (33, 2),
    (31, 2),
    (29, 2),
    (27, 2),
    (25, 2),
    (12, 1),
    (11, 1),
    (21, 2),
    (10, 1),
    (19, 2),
    (9, 1),
    (17, 2),
    (8, 1),
    (15, 2),
    (14, 2),
    (27, 4),
    (13, 2),
    (25, 4),
    (12, 2),
    (23, 4),
    (11, 2),
    (21, 4),
    (10, 2),
    (19, 4),
    (9, 2),
    (17, 4),
    (4, 1),
    (23, 6),
    (11, 3),
    (7, 2),
    (10, 3),
    (16, 5),
    (6, 2),
    (11, 4),
    (8, 3),
    (5, 2),
    (7, 3),
    (11, 5),
    (4, 2),
    (9, 5),
    (8, 5),
    (3, 2),
    (7, 6),
    (4, 4),
];

/// Most slots a block can have: the header's bitmap (64 bits at 4K, 256 otherwise).
pub const MAX_SLOTS: u32 = 256;

/// One block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockType {
    pub slots: u32,
    pub num_pages: u32,
    /// Bytes per slot (a multiple of 8).
    pub slot_size: u32,
    /// Bytes of a block no slot uses: `num_pages * PAGE - header - slots * slot_size`.
    pub tail_waste: u32,
}

/// The block header's bytes with `page_size` pages (inside the block's first bytes).
pub fn header_size(page_size: u32) -> u32 {
    if page_size == 4096 {
        48
    } else {
        72
    }
}

/// `round_down((num_pages * page - header) / slots, 8)`.
pub fn slot_size(page_size: u32, slots: u32, num_pages: u32) -> u32 {
    (num_pages * page_size - header_size(page_size)) / slots / 8 * 8
}

/// The block types of one page size.
#[derive(Debug, Clone)]
pub struct BlockTable {
    page_size: u32,
    types: Box<[BlockType]>,
}

impl BlockTable {
    /// The table of `page_size` pages (4K, 16K, 32K or 64K; 8K is refused as the patch does not
    /// build there).
    pub fn new(page_size: u32) -> Result<BlockTable> {
        if !(4096..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(Error::config(
                "page_size",
                format!("{page_size} is not a power of two in 4096..=65536"),
            ));
        }
        if page_size == 8192 {
            return Err(Error::config(
                "page_size",
                "zblock does not build with 8192-byte pages (its block table exceeds \
                 MAX_TABLE_SIZE there); use 4096, 16384, 32768 or 65536",
            ));
        }
        let raw: &[(u32, u32)] = if page_size == 4096 { &TABLE_4K } else { &TABLE_OTHER };
        let header = header_size(page_size);
        let types = raw
            .iter()
            .map(|&(slots, num_pages)| {
                let slot_size = slot_size(page_size, slots, num_pages);
                BlockType {
                    slots,
                    num_pages,
                    slot_size,
                    tail_waste: num_pages * page_size - header - slots * slot_size,
                }
            })
            .collect();
        Ok(BlockTable { page_size, types })
    }

    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The block types, ascending slot size.
    pub fn types(&self) -> &[BlockType] {
        &self.types
    }

    /// The last (largest) slot size: the smallest length zblock refuses.
    pub fn max_slot_size(&self) -> u32 {
        self.types[self.types.len() - 1].slot_size
    }

    /// The type a length goes to: the first whose slot size is strictly greater than `len` (the
    /// patch's tree search sends a length equal to a slot size to the next type). Length 0 is
    /// `EINVAL`; a length at or above the last slot size is `ENOSPC`. A length *equal* to the last
    /// slot size fits that slot, but the patch's search then indexes one past the end of its
    /// table; it is refused here rather than modelled.
    #[inline]
    pub fn lookup(&self, len: usize) -> Result<usize> {
        if len == 0 {
            return Err(Error::InvalidArgument("object length is 0".into()));
        }
        let i = self.types.partition_point(|t| t.slot_size as usize <= len);
        if i == self.types.len() {
            return Err(Error::TooLarge { len, max: self.max_slot_size() as usize - 1 });
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_sizes_ascend_at_every_page_size() {
        for page in [4096, 16384, 32768, 65536] {
            let t = BlockTable::new(page).unwrap();
            let max = if page == 4096 { 64 } else { MAX_SLOTS };
            assert!(t.types().iter().all(|b| b.slots <= max && b.num_pages <= 8));
            assert!(
                t.types().windows(2).all(|w| w[0].slot_size < w[1].slot_size),
                "{page}: {:?}",
                t.types()
            );
        }
        assert!(BlockTable::new(8192).is_err());
    }

    #[test]
    fn lookup_is_strictly_greater() {
        let t = BlockTable::new(4096).unwrap();
        assert_eq!(t.types()[0].slot_size, 144);
        assert_eq!(t.lookup(1), Ok(0));
        assert_eq!(t.lookup(143), Ok(0));
        assert_eq!(t.lookup(144), Ok(1));
        assert_eq!(t.max_slot_size(), 4080);
        assert_eq!(t.lookup(4079), Ok(36));
        assert!(matches!(t.lookup(4080), Err(Error::TooLarge { .. })));
        assert!(matches!(t.lookup(0), Err(Error::InvalidArgument(_))));
    }
}
