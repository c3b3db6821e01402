//! The folio groups' table (`--folio-size`): an entry per aligned group of the reserve, for
//! the group's object (handle word and length) or value, and a buffer a group's bytes are
//! assembled in. What is done with them is `folio.rs`'s.

use crate::page_table::Entry;
use crate::sys::{self, PAGE};

pub struct Folios {
    /// Pages per group; 1: every page on its own (the default, and nothing here is used).
    pub pages: usize,
    /// An entry per group of the reserve (its object's handle word and length, or its value),
    /// in the tier's own memory, reached through `entry` and `set`.
    table: usize,
    groups: usize,
    /// A group's bytes, assembled for compression or decompressed for a fault.
    pub buf: Vec<u8>,
}

impl Folios {
    /// Groups of `pages` pages over a reserve of `reserve_pages`.
    pub fn new(pages: usize, reserve_pages: usize) -> Result<Folios, String> {
        if pages <= 1 {
            return Ok(Folios { pages: 1, table: 0, groups: 0, buf: Vec::new() });
        }
        let groups = reserve_pages.div_ceil(pages);
        let table = sys::own_memory(groups * std::mem::size_of::<Entry>())
            .ok_or("no memory for the folio table")?;
        Ok(Folios { pages, table, groups, buf: vec![0; pages * PAGE] })
    }
}

impl Folios {
    /// Group `group`'s entry.
    pub fn entry(&self, group: usize) -> &Entry {
        assert!(group < self.groups, "group {group} beyond the reserve");
        // SAFETY: `table` holds `groups` entries, and `group` is one of them.
        unsafe { &*(self.table as *const Entry).add(group) }
    }

    /// Group `group` now holds `info` (kind, length).
    pub fn set(&mut self, group: usize, info: u64) {
        assert!(group < self.groups, "group {group} beyond the reserve");
        // SAFETY: as in `entry`; `&mut self` is the only way to the table.
        unsafe { (*(self.table as *mut Entry).add(group)).set_info(info) }
    }
}
