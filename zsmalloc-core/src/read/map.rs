//! The `map` read mode, the userspace analogue of the `vm_map_ram` patch: an object that crosses
//! a page is read through a mapping of its two pages side by side in one of the calling thread's
//! map slots (`map_window.rs`), nothing copied; an object in one page is read in place, as in
//! every mode. The section's end releases the slot.
//!
//! A mapping that fails leaves the object as it was: the read fails (`MapFailed`, or `Again`
//! when every slot of the thread's ring is in use) and the registration is undone, so the object
//! stays readable and freeable.

use std::sync::atomic::AtomicUsize;

use crate::class_table::HDR;
use crate::error::Result;
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
            let page = self.page();
            let a = (at >> self.page_shift()) as crate::arena::Pfn;
            // The zspage's page after the header's: the second piece's, or the first's when
            // the payload starts exactly at the next page.
            let b =
                if layout.pieces[1].len > 0 { layout.pieces[1].pfn } else { layout.pieces[0].pfn };
            let window = self.arena.window().expect("map mode has map slots");
            let ((fd, off_a), (_, off_b)) = (
                self.arena.file_page(a).expect("map mode has a memfd"),
                self.arena.file_page(b).expect("map mode has a memfd"),
            );
            match window.map(fd, off_a, off_b, p.reg.owner) {
                // SAFETY: the slot spans two pages; `at & (page - 1)` + HDR is within them.
                Ok(slot) => unsafe { slot.add((at & (page - 1)) + HDR as usize) },
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
        self.end_unannounced(h, mem_len)?;
        self.map_release_at(h as *const AtomicUsize as usize, mem);
        Ok(())
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

    use crate::map_window::{FAIL_NEXT_MAP, RING};
    use crate::{Error, Pool, PoolConfig, ReadMode};

    fn map_pool() -> Pool {
        Pool::new(PoolConfig { read_mode: ReadMode::Map, ..PoolConfig::default() }).unwrap()
    }

    /// Objects of 3000 bytes: class 3008, objects 1, 2, ... of a zspage cross a page.
    fn spanning_words(p: &Pool, n: usize) -> Vec<Box<AtomicUsize>> {
        let mut out = Vec::new();
        let mut i = 0u8;
        while out.len() < n {
            let w = Box::new(AtomicUsize::new(0));
            // SAFETY: the boxed word outlives its use by the pool (freed below or leaked to
            // the pool's end).
            unsafe { p.store_raw(&w, &[i; 3000]).unwrap() };
            i = i.wrapping_add(1);
            let (segs, n_seg) = unsafe { p.read_sg_begin_raw(&w, 3000).unwrap() };
            let _ = segs;
            unsafe { p.read_end_raw(&w, None).unwrap() };
            if n_seg == 2 {
                out.push(w);
            } else {
                std::mem::forget(w);
            }
        }
        out
    }

    #[test]
    fn a_spanning_read_maps_and_its_end_releases_the_slot() {
        let p = map_pool();
        let ws = spanning_words(&p, 3);
        let before = p.stats();
        for w in &ws {
            let want = unsafe {
                let mut v = vec![0; 3000];
                p.read_into_raw(w, &mut v).unwrap();
                v
            };
            // SAFETY: live words; local_copy may be NULL in map mode (never copies).
            let ptr = unsafe { p.read_begin_raw(w, 3000, std::ptr::null_mut()).unwrap() };
            assert_eq!(p.map_slots_in_use(), 1);
            assert_eq!(unsafe { std::slice::from_raw_parts(ptr, 3000) }, &want[..]);
            unsafe { p.read_end_at_raw(w, Some(3000), ptr).unwrap() };
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
        let ptrs: Vec<_> = ws[..RING]
            .iter()
            .map(|w| unsafe { p.read_begin_raw(w, 3000, std::ptr::null_mut()).unwrap() })
            .collect();
        let e = unsafe { p.read_begin_raw(&ws[RING], 3000, std::ptr::null_mut()) }.unwrap_err();
        assert!(matches!(e, Error::Again(_)), "{e}");
        assert_eq!(e.errno(), libc::EAGAIN);
        // The refused object is intact: freeable.
        unsafe { p.free_raw(&ws[RING]).unwrap() };
        // Ended in reverse without the address: found by the handle.
        for w in ws[..RING].iter().rev() {
            unsafe { p.read_end_raw(w, Some(3000)).unwrap() };
        }
        assert_eq!(p.map_slots_in_use(), 0);
        drop(ptrs);
    }

    #[test]
    fn a_failed_mapping_fails_the_read_and_leaves_the_object_readable() {
        let p = map_pool();
        let ws = spanning_words(&p, 1);
        FAIL_NEXT_MAP.with(|f| f.set(true));
        let e = unsafe { p.read_begin_raw(&ws[0], 3000, std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(e, Error::MapFailed { errno: libc::ENOMEM });
        assert_eq!(p.map_slots_in_use(), 0);
        let ptr = unsafe { p.read_begin_raw(&ws[0], 3000, std::ptr::null_mut()).unwrap() };
        unsafe { p.read_end_raw(&ws[0], Some(3000)).unwrap() };
        let _ = ptr;
        unsafe { p.free_raw(&ws[0]).unwrap() };
    }

    #[test]
    fn a_section_ends_from_another_thread() {
        let p = map_pool();
        let ws = spanning_words(&p, 1);
        let ptr = unsafe { p.read_begin_raw(&ws[0], 3000, std::ptr::null_mut()).unwrap() } as usize;
        std::thread::scope(|s| {
            s.spawn(|| unsafe { p.read_end_at_raw(&ws[0], Some(3000), ptr as *const u8).unwrap() });
        });
        assert_eq!(p.map_slots_in_use(), 0);
        let ptr = unsafe { p.read_begin_raw(&ws[0], 3000, std::ptr::null_mut()).unwrap() };
        std::thread::scope(|s| {
            s.spawn(|| unsafe { p.read_end_raw(&ws[0], Some(3000)).unwrap() });
        });
        assert_eq!(p.map_slots_in_use(), 0);
        let _ = ptr;
    }
}
