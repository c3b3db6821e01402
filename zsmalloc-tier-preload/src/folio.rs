//! Folios (`ZSMALLOC_TIER_FOLIO_PAGES`: 4 or 16): the unit of eviction is the aligned group of
//! pages of the reserve that holds the policy's victim. Every resident page of the group
//! leaves (`UFFDIO_MOVE` into consecutive staging slots), the group is compressed as one
//! buffer (its pages that were not resident as zeros) and stored as one object, which the
//! pool's multi-page band holds; a group same-filled as a whole is kept as a value. A fault on
//! any page of the group reads the object once and fills every page that left with it, in
//! runs of consecutive pages (the pages of the group that did not leave are not touched).
//!
//! The pages that left are the group's members (kind GROUP); the object is the group's, in a
//! table of its own. A group some of whose pages came in since (first touched) while the
//! others are still out is brought back whole before it is evicted again. A member emptied
//! meanwhile (free, munmap, madvise) is no longer a member: its bytes stay in the object,
//! unused, and are never handed back; the last member to go frees the object.

use std::sync::atomic::Ordering;

use zsmalloc_codec::{fill_word, same_filled};
use zsmalloc_core::Backend;
use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::UffdError;

use crate::evict::{Moved, Outcome};
use crate::sys::PAGE;
use crate::tier::{self, State, Tier, EMPTY, GROUP, RESIDENT, SAME, STORED};

impl Tier {
    /// The pages of `page`'s group, as a range of page numbers.
    fn group_of(&self, st: &State, page: usize) -> std::ops::Range<usize> {
        let first = page - page % st.folio.pages;
        first..first + st.folio.pages
    }

    fn members(&self, st: &State, group: &std::ops::Range<usize>) -> u32 {
        group.clone().filter(|&p| st.pages.kind(p) == GROUP).count() as u32
    }

    /// Evicts the group of `victim`: its resident pages moved out, compressed together and
    /// stored as one object (or kept as a value).
    pub fn evict_group(&self, st: &mut State, victim: usize) -> Outcome {
        let group = self.group_of(st, victim);
        if st.folio.entry(group.start / group.len()).kind() != EMPTY {
            // Some of its pages are still out in an object (the others came in since, first
            // touched): they come back, so that the whole group leaves as one object.
            self.restore_group(st, victim);
        }
        let slots = self.slots(st, group.len());
        let mut out = 0u32; // a bit per page of the group that left
        let mut victim_stays = false;
        for (i, page) in group.clone().enumerate() {
            if st.pages.kind(page) != RESIDENT {
                continue;
            }
            match self.move_out(slots + i * PAGE, page) {
                Moved::Out => out |= 1 << i,
                Moved::Stays if page == victim => victim_stays = true,
                Moved::Stays => tier::stats().add(Field::SharedSkips, 1),
                Moved::Gone => self.forget_gone(st, page),
            }
        }
        if out == 0 {
            // Nothing moved: the slots just taken are holes still, and given back.
            st.staging_used -= group.len();
            return if victim_stays { Outcome::Skipped } else { Outcome::Stale };
        }
        let n = group.len();
        let full = out.count_ones() as usize == n;
        // Taken out of the state while the state's other parts are used (no allocation).
        let mut buf = std::mem::take(&mut st.folio.buf);
        if !full {
            buf.fill(0);
            for i in (0..n).filter(|i| out & (1 << i) != 0) {
                // SAFETY: slot `i` holds the page just moved there; the tier alone maps it.
                let page =
                    unsafe { std::slice::from_raw_parts((slots + i * PAGE) as *const u8, PAGE) };
                buf[i * PAGE..(i + 1) * PAGE].copy_from_slice(page);
            }
        }
        // A whole group moved is read where it lies; the slots of pages that did not move are
        // holes, which the handler must never touch (it would fault on itself).
        let data: &[u8] = if full {
            // SAFETY: the group's slots hold its pages, just moved there; the tier alone maps
            // them.
            unsafe { std::slice::from_raw_parts(slots as *const u8, n * PAGE) }
        } else {
            &buf
        };
        let stored = self.store_group(st, group.start, data);
        if !stored {
            for i in (0..n).filter(|i| out & (1 << i) != 0) {
                self.put_back(self.addr(group.start + i), &data[i * PAGE..(i + 1) * PAGE]);
            }
        }
        st.folio.buf = buf;
        if !stored {
            return Outcome::PoolFull;
        }
        let w = tier::stats();
        let pages = u64::from(out.count_ones());
        if st.folio.entry(group.start / n).kind() == SAME {
            w.add(Field::SameFilledPages, pages);
        } else {
            w.add(Field::StoredPages, pages);
            w.add(Field::StoresTotalPages, pages);
        }
        for i in (0..n).filter(|i| out & (1 << i) != 0) {
            st.pages.set(group.start + i, GROUP);
        }
        w.add(Field::GroupEvictions, 1);
        // The caller counts one eviction; every page that left is one.
        w.add(Field::Evictions, pages - 1);
        if victim_stays {
            // Its arrival was taken off the order; it stays resident, so it goes back.
            w.add(Field::SharedSkips, 1);
            let seq = st.pages.entry(victim).seq();
            st.policy.kept(victim as u32, seq);
        }
        Outcome::Evicted
    }

    /// Keeps the group starting at page `first` (its bytes `data`) as a value, or stores it
    /// compressed (whole if it does not shrink); false when the pool refused it.
    fn store_group(&self, st: &mut State, first: usize, data: &[u8]) -> bool {
        let group = first / st.folio.pages;
        if let Some(v) = same_filled(data) {
            st.folio.entry(group).handle.store(v as usize, Ordering::Relaxed);
            st.folio.set(group, SAME);
            return true;
        }
        let g = st.folio.entry(group);
        let pool = st.pool.as_ref().expect("the handler made the pool");
        let len = st.codec.compress(data, &mut st.packed).ok().filter(|&l| l < data.len());
        let object: &[u8] = len.map_or(data, |l| &st.packed[..l]);
        // SAFETY: the handle word is this group's, at a fixed address, and empty (no page of
        // the group was a member).
        if unsafe { pool.store_raw(&g.handle, object) }.is_err() {
            return false;
        }
        let len = object.len();
        st.folio.set(group, tier::info(STORED, len, 0));
        tier::record(&mut st.record, |r| r.store(first, len));
        let w = tier::stats();
        w.add(Field::CompressedBytes, len as u64);
        w.add(Field::StoresTotalBytes, len as u64);
        let total = pool.total_pages();
        w.set(Field::PoolPages, total);
        w.raise(Field::MaxPoolPages, total);
        true
    }

    /// Brings back every member of `page`'s group from the group's object or value (which
    /// is freed).
    pub fn restore_group(&self, st: &mut State, page: usize) {
        let group = self.group_of(st, page);
        let n = group.len();
        let members = u64::from(self.members(st, &group));
        let g = st.folio.entry(group.start / n);
        let w = tier::stats();
        match g.kind() {
            SAME => {
                let v = g.handle.swap(0, Ordering::Relaxed) as u64;
                fill_word(&mut st.folio.buf, v);
                w.sub(Field::SameFilledPages, members);
            }
            STORED => {
                let pool = st.pool.as_ref().expect("objects are stored only once the pool exists");
                // SAFETY: the handle word is this group's, at a fixed address, holding the
                // object the eviction stored.
                let len = match unsafe { pool.read_into_raw(&g.handle, &mut st.packed) } {
                    Ok(len) => len,
                    Err(err) => tier::fatal(&format!("an evicted folio could not be read: {err}")),
                };
                tier::record(&mut st.record, |r| r.read(group.start, len));
                let (packed, buf) = (&st.packed[..len], &mut st.folio.buf);
                if len == buf.len() {
                    buf.copy_from_slice(packed);
                } else if st.codec.decompress(packed, buf) != Ok(buf.len()) {
                    tier::fatal("an evicted folio did not decompress to its pages");
                }
                w.add(Field::DecompressedBytes, buf.len() as u64);
                w.sub(Field::StoredPages, members);
                self.free_group_object(st, group.start);
            }
            _ => tier::fatal("a page of a folio has no object"),
        }
        st.folio.set(group.start / n, EMPTY);
        // Runs of consecutive members, each one copy; the pages between them are left alone.
        let mut i = 0;
        while i < n {
            if st.pages.kind(group.start + i) != GROUP {
                i += 1;
                continue;
            }
            let run = (i..n).take_while(|&j| st.pages.kind(group.start + j) == GROUP).count();
            self.fill_run(self.addr(group.start + i), &st.folio.buf[i * PAGE..(i + run) * PAGE]);
            for p in group.start + i..group.start + i + run {
                self.arrive(st, p);
            }
            i += run;
        }
    }

    /// Fills the holes at `addr` with `data`. Only this handler fills a member's hole, so none
    /// should be filled already; a page found there all the same is left as it is, never
    /// overwritten, and its waiters woken.
    fn fill_run(&self, addr: usize, data: &[u8]) {
        match self.copy_in(addr, data, true) {
            Ok(()) => {}
            Err(e)
                if matches!(e, UffdError::AlreadyMapped { .. })
                    || crate::serve::crosses_areas(&e) =>
            {
                for (k, page) in data.chunks(PAGE).enumerate() {
                    match self.copy_in(addr + k * PAGE, page, true) {
                        Ok(()) => {}
                        Err(UffdError::AlreadyMapped { .. }) => {
                            if let Err(e) = self.uffd.wake(addr + k * PAGE, PAGE) {
                                tier::fatal(&format!("wake: {e}"));
                            }
                        }
                        Err(e) => tier::fatal(&format!("a folio could not be served: {e}")),
                    }
                }
            }
            Err(e) => tier::fatal(&format!("a folio could not be served: {e}")),
        }
    }

    /// Frees the object of the group starting at page `first`.
    fn free_group_object(&self, st: &mut State, first: usize) {
        let g = st.folio.entry(first / st.folio.pages);
        if let Some(pool) = &st.pool {
            // SAFETY: the handle word is this group's, at a fixed address, holding its object.
            let _ = unsafe { pool.free_raw(&g.handle) };
            tier::record(&mut st.record, |r| r.free(first));
            let w = tier::stats();
            w.sub(Field::CompressedBytes, g.len() as u64);
            w.set(Field::PoolPages, pool.total_pages());
        }
        st.pool_full = false;
    }

    /// Page `page`, a member, is emptied: it leaves the group (its bytes in the object are
    /// never handed back); the last member to leave frees the object.
    pub fn leave_group(&self, st: &mut State, page: usize) {
        let group = self.group_of(st, page);
        let others = self.members(st, &group) - 1;
        let index = group.start / group.len();
        let g = st.folio.entry(index);
        let w = tier::stats();
        match g.kind() {
            SAME => {
                w.sub(Field::SameFilledPages, 1);
                if others == 0 {
                    g.handle.store(0, Ordering::Relaxed);
                    st.folio.set(index, EMPTY);
                }
            }
            STORED => {
                w.sub(Field::StoredPages, 1);
                if others == 0 {
                    self.free_group_object(st, group.start);
                    st.folio.set(index, EMPTY);
                }
            }
            _ => {}
        }
    }
}
