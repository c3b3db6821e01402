//! The readahead's cache (`--readahead`): clean copies of stored pages in the tier's own
//! memory, a page per slot, taken in a ring. What is read into it and served from it is
//! `readahead.rs`'s.

use crate::sys::PAGE;

/// The most pages the cache holds.
pub const MOST: usize = 64;
/// A slot that holds no copy.
pub const FREE: u32 = u32::MAX;

pub struct Readahead {
    /// Pages of an aligned cluster (`2^page-cluster`); 1: no readahead.
    pub cluster: usize,
    /// Clean copies of stored pages, a page per slot.
    pub cache: Vec<u8>,
    /// The page each slot holds a copy of (FREE: none).
    pub owner: Vec<u32>,
    /// The slot to take next.
    pub next: usize,
}

impl Readahead {
    /// A readahead of `page_cluster` under a budget of `budget_pages`.
    pub fn new(page_cluster: u32, budget_pages: u64) -> Readahead {
        if page_cluster == 0 {
            return Readahead { cluster: 1, cache: Vec::new(), owner: Vec::new(), next: 0 };
        }
        let slots = (budget_pages as usize / 4).clamp(1, MOST);
        Readahead {
            cluster: 1 << page_cluster,
            cache: vec![0; slots * PAGE],
            owner: vec![FREE; slots],
            next: 0,
        }
    }
}
