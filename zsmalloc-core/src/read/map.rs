//! The `map` read mode, the userspace analogue of the `vm_map_ram` patch: an object that crosses
//! a page is read through a mapping of its two pages side by side in one of the calling thread's
//! map slots (`map_window.rs`), nothing copied; an object in one page is read in place, as in
//! every mode. The section's end releases the slot.
//!
//! A mapping that fails leaves the object as it was: the read fails (`MapFailed`, or `Again`
//! when every slot of the thread's ring is in use) and the registration is undone, so the object
//! stays readable and freeable.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::class_table::HDR;
use crate::error::Result;
use crate::header;
use crate::placement::ROLE;
use crate::pool::Pool;

use super::Begun;

impl Pool {
    /// `map` mode's begin of an object the common case does not take: counted in its header (or
    /// pinned, if huge), then in place or mapped. `mem_len` is the raw layer's (`None`: a safe
    /// section); a raw section is recorded for its end.
    pub(super) fn map_begin_slow<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: Option<usize>,
    ) -> Result<Begun<'a>> {
        let p = self.pin_slow(h, mem_len)?;
        let layout = self.pinned_layout(&p);
        let pos = self.class_pos_of(p.info);
        let ptr = if !layout.spanning {
            if p.info.huge {
                let first = layout.pieces[0];
                // SAFETY: the piece lies inside its page (offset 0, at most a page).
                unsafe { self.arena.page_ptr(first.pfn).add(first.offset) as *const u8 }
            } else {
                p.in_place()
            }
        } else {
            let at = p.loc.offset();
            // The class's unit: a page, or an aligned compound page of the multi-page band.
            let unit = 1usize << self.unit_shift(p.info);
            let a = ((at & !(unit - 1)) >> self.page_shift()) as crate::arena::Pfn;
            // The zspage's unit after the header's: the second piece's, or the first's when
            // the payload starts exactly at the next unit.
            let b =
                if layout.pieces[1].len > 0 { layout.pieces[1].pfn } else { layout.pieces[0].pfn };
            let window = self.arena.window().expect("map mode has map slots");
            let ((fd, off_a), (_, off_b)) = (
                self.arena.file_page(a).expect("map mode has a memfd"),
                self.arena.file_page(b).expect("map mode has a memfd"),
            );
            match window.map(fd, off_a, off_b, unit, p.reg.owner) {
                // SAFETY: the slot spans two units; `at & (unit - 1)` + HDR is within them.
                Ok(slot) => unsafe { slot.add((at & (unit - 1)) + HDR as usize) },
                Err(e) => {
                    p.release();
                    return Err(e);
                }
            }
        };
        if mem_len.is_some() {
            self.remember(&p);
        }
        self.access.record_read(pos, layout.spanning, 0);
        Ok(Begun { ptr, len: p.len, reg: p.reg })
    }

    /// `map` mode's end of a raw section this thread did not announce: the registration, then
    /// the section's map slot if it has one (`mem`: the address its begin returned, or null).
    pub(super) fn map_end_unannounced(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        mem: *const u8,
    ) -> Result<()> {
        // Without the address, only a section that can hold a slot looks for one: the search
        // by handle reads every ring's slots when the calling thread's holds none (thousands
        // of loads, microseconds), and most sections ended here hold none (huge objects, a
        // busy announce slot).
        let look = !mem.is_null() || self.may_hold_map_slot(h, mem_len);
        self.end_unannounced(h, mem_len)?;
        if look {
            self.map_release_at(h as *const AtomicUsize as usize, mem);
        }
        Ok(())
    }

    /// Whether a section open on the object of `h` may hold a map slot: false only when the
    /// handle names a huge object or one that lies in one page (those are never mapped). Read
    /// while the section is open, so the object stays where the handle word says; anything
    /// unexpected answers true (then the search decides).
    fn may_hold_map_slot(&self, h: &AtomicUsize, mem_len: Option<usize>) -> bool {
        let Ok(p) = self.place::<ROLE>(h.load(Ordering::Acquire), None) else { return true };
        if p.class.info.huge {
            return false;
        }
        let offset = p.loc.offset();
        let len = mem_len
            .unwrap_or_else(|| header::len(self.arena.word_at(offset).load(Ordering::Acquire)));
        let unit = 1usize << self.unit_shift(&p.class.info);
        (offset & (unit - 1)) + HDR as usize + len > unit
    }

    /// Releases the map slot of a section of the handle at `owner`: the one holding `mem` if
    /// given (an address outside the slots: the section has none), else one found by the
    /// handle.
    pub(super) fn map_release_at(&self, owner: usize, mem: *const u8) {
        let Some(w) = self.arena.window() else { return };
        if mem.is_null() {
            w.release(owner, None);
        } else if w.holds(mem as usize) {
            w.release(owner, Some(mem as usize));
        }
    }

    /// Map slots in use now (tests).
    #[doc(hidden)]
    pub fn map_slots_in_use(&self) -> usize {
        self.arena.window().map_or(0, |w| w.in_use())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use crate::fault::{self, Point};
    use crate::map_window::RING;
    use crate::{Error, Pool, PoolConfig, ReadMode};

    fn map_pool() -> Pool {
        Pool::new(PoolConfig { read_mode: ReadMode::Map, ..PoolConfig::default() }).unwrap()
    }

    /// Handle words of objects of 3000 bytes that cross a page (two segments); the others
    /// stored on the way are leaked with the pool.
    fn spanning_words(p: &Pool, n: usize) -> Vec<&'static AtomicUsize> {
        let mut out = Vec::new();
        let mut i = 0u8;
        while out.len() < n {
            let w: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
            // SAFETY: the leaked word lives for ever; each section is ended at once.
            let segments = unsafe {
                p.store_raw(w, &[i; 3000]).unwrap();
                let (_, n) = p.read_sg_begin_raw(w, 3000).unwrap();
                p.read_end_raw(w, None).unwrap();
                n
            };
            i = i.wrapping_add(1);
            if segments == 2 {
                out.push(w);
            }
        }
        out
    }

    /// Begins a map-mode section with no local copy.
    fn begin(p: &Pool, w: &AtomicUsize) -> crate::Result<*const u8> {
        // SAFETY: a live word; map mode never copies, so no local copy is needed.
        unsafe { p.read_begin_raw(w, 3000, std::ptr::null_mut()) }
    }

    #[test]
    fn a_spanning_read_maps_and_its_end_releases_the_slot() {
        let p = map_pool();
        let ws = spanning_words(&p, 3);
        let before = p.stats();
        for w in &ws {
            let mut want = vec![0; 3000];
            // SAFETY: a live word.
            unsafe { p.read_into_raw(w, &mut want) }.unwrap();
            let ptr = begin(&p, w).unwrap();
            assert_eq!(p.map_slots_in_use(), 1);
            // SAFETY: the section is open: `ptr` holds the object's 3000 bytes.
            assert_eq!(unsafe { std::slice::from_raw_parts(ptr, 3000) }, &want[..]);
            // SAFETY: ends the section just begun.
            unsafe { p.read_end_at_raw(w, Some(3000), ptr) }.unwrap();
            assert_eq!(p.map_slots_in_use(), 0);
        }
        let after = p.stats();
        assert_eq!(after.reads_spanning - before.reads_spanning, 6, "3 read_into + 3 sections");
        assert_eq!(after.read_copy_bytes, 0);
    }

    #[test]
    fn beyond_the_ring_is_eagain_and_never_a_wait() {
        let p = map_pool();
        let ws = spanning_words(&p, RING + 1);
        for w in &ws[..RING] {
            begin(&p, w).unwrap();
        }
        let e = begin(&p, ws[RING]).unwrap_err();
        assert!(matches!(e, Error::Again(_)), "{e}");
        assert_eq!(e.errno(), libc::EAGAIN);
        // The refused object is intact: freeable.
        // SAFETY: a live word with no section open.
        unsafe { p.free_raw(ws[RING]) }.unwrap();
        // Ended in reverse without the address: found by the handle.
        for w in ws[..RING].iter().rev() {
            // SAFETY: a section is open on the word.
            unsafe { p.read_end_raw(w, Some(3000)) }.unwrap();
        }
        assert_eq!(p.map_slots_in_use(), 0);
    }

    #[test]
    fn a_failed_mapping_fails_the_read_and_leaves_the_object_readable() {
        let p = map_pool();
        let w = spanning_words(&p, 1)[0];
        let injected = fault::arm(Point::MapWindow, 0, 1);
        assert_eq!(begin(&p, w).unwrap_err(), Error::MapFailed { errno: libc::ENOMEM });
        assert_eq!(fault::arm(Point::MapWindow, 0, 0), injected + 1, "one fault injected");
        assert_eq!(p.map_slots_in_use(), 0);
        let ptr = begin(&p, w).unwrap();
        // SAFETY: the section is open; then ended; then the object freed.
        unsafe {
            assert_eq!(*ptr, *ptr.add(2999));
            p.read_end_raw(w, Some(3000)).unwrap();
            p.free_raw(w).unwrap();
        }
    }

    /// Huge objects and objects in one page are never mapped: their sections, ended without
    /// the address, do not search the slots (an end costs what it does in `copy`), and a
    /// spanning section's slot is still found by its handle alongside them.
    #[test]
    fn sections_without_a_slot_end_without_a_search() {
        let p = map_pool();
        let huge = AtomicUsize::new(0);
        let w = spanning_words(&p, 1)[0];
        // SAFETY: live words; every section is ended below.
        unsafe {
            p.store_raw(&huge, &[9; 4000]).unwrap();
            let mapped = begin(&p, w).unwrap();
            let ptr = p.read_begin_raw(&huge, 4000, std::ptr::null_mut()).unwrap();
            assert_eq!((*ptr, p.map_slots_in_use()), (9, 1), "the huge object is not mapped");
            p.read_end_raw(&huge, Some(4000)).unwrap();
            assert_eq!(p.map_slots_in_use(), 1, "the spanning section keeps its slot");
            assert_eq!(*mapped, *mapped.add(2999));
            p.read_end_raw(w, None).unwrap();
            assert_eq!(p.map_slots_in_use(), 0);
            p.free_raw(&huge).unwrap();
        }
    }

    #[test]
    fn a_section_ends_from_another_thread() {
        let p = map_pool();
        let w = spanning_words(&p, 1)[0];
        let ptr = begin(&p, w).unwrap() as usize;
        std::thread::scope(|s| {
            // SAFETY: a section is open on the word, begun by the parent thread.
            s.spawn(|| unsafe { p.read_end_at_raw(w, Some(3000), ptr as *const u8) }.unwrap());
        });
        assert_eq!(p.map_slots_in_use(), 0);
        begin(&p, w).unwrap();
        std::thread::scope(|s| {
            // SAFETY: as above, the slot found by the handle.
            s.spawn(|| unsafe { p.read_end_raw(w, Some(3000)) }.unwrap());
        });
        assert_eq!(p.map_slots_in_use(), 0);
    }
}
