//! Readahead (`ZSMALLOC_TIER_READAHEAD`, swap's `page-cluster` N): a fault on an evicted page
//! that was not read ahead also decompresses the other stored pages of its aligned cluster of
//! `2^N` pages into a cache of the tier's own memory (not mapped into the program), as the
//! kernel's swap readahead reads a cluster into the swap cache. A later fault on a cached page
//! is served from the cache without a pool read: a hit, the readahead used. The copies are
//! clean: each page's object stays in the pool until its page is served, so a copy pushed out
//! of the cache (a ring, the oldest copy first) costs nothing and its page stays stored.
//!
//! The cache's pages are memory the tier holds for the program: they count as resident, under
//! the budget, so the program's own pages are evicted to make room for them. It holds at most
//! a quarter of the budget, and 64 pages.

use zsmalloc_core::Backend;
use zsmalloc_tier::stats::Field;

use crate::readahead_cache::FREE;
use crate::sys::PAGE;
use crate::tier::{self, State, Tier, CACHED, STORED};

impl Tier {
    /// Reads ahead the stored pages of `page`'s cluster (`page` itself just served).
    pub fn read_ahead(&self, st: &mut State, page: usize) {
        let cluster = st.readahead.cluster;
        if cluster <= 1 {
            return;
        }
        let first = page - page % cluster;
        let end = (first + cluster).min(crate::reserve::high_water_pages());
        let mut room = st.readahead.owner.len();
        for q in first..end {
            if room == 0 {
                break;
            }
            if q != page && st.pages.kind(q) == STORED {
                self.cache_page(st, q);
                room -= 1;
            }
        }
    }

    /// Decompresses stored page `page` into the next slot of the cache.
    fn cache_page(&self, st: &mut State, page: usize) {
        let slot = st.readahead.next;
        st.readahead.next = (slot + 1) % st.readahead.owner.len();
        let old = st.readahead.owner[slot];
        if old != FREE {
            self.uncache(st, old as usize);
        }
        let e = st.pages.entry(page);
        let pool = st.pool.as_ref().expect("objects are stored only once the pool exists");
        // SAFETY: the handle word is this entry's, at a fixed address, holding the object the
        // eviction stored (kind STORED).
        let n = match unsafe { pool.read_into_raw(&e.handle, &mut st.packed) } {
            Ok(n) => n,
            Err(err) => tier::fatal(&format!("an evicted page could not be read: {err}")),
        };
        tier::record(&mut st.record, |r| r.read(page, n));
        let copy = &mut st.readahead.cache[slot * PAGE..(slot + 1) * PAGE];
        if n == PAGE {
            copy.copy_from_slice(&st.packed[..PAGE]);
        } else if st.codec.decompress(&st.packed[..n], copy) != Ok(PAGE) {
            tier::fatal("an evicted page did not decompress to a page");
        }
        let len = e.len();
        st.pages.set(page, tier::info(CACHED, len, slot as u32));
        st.readahead.owner[slot] = page as u32;
        let w = tier::stats();
        w.add(Field::DecompressedBytes, PAGE as u64);
        w.add(Field::ReadaheadPages, 1);
    }

    /// Drops cached page `page`'s copy: it is stored only, as before it was read ahead.
    pub fn uncache(&self, st: &mut State, page: usize) {
        let e = st.pages.entry(page);
        let (slot, len) = (e.seq() as usize, e.len());
        st.readahead.owner[slot] = FREE;
        st.pages.set(page, tier::info(STORED, len, 0));
    }

    /// Puts cached page `page`'s copy in the page buffer, the copy dropped and the object freed.
    pub fn take_cached(&self, st: &mut State, page: usize) {
        let slot = st.pages.entry(page).seq() as usize;
        st.page.copy_from_slice(&st.readahead.cache[slot * PAGE..(slot + 1) * PAGE]);
        self.uncache(st, page);
        self.free_object(st, page);
    }
}
