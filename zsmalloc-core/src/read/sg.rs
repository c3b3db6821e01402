//! Scatter-gather sections: the object's one or two (address, length) segments, nothing copied
//! (`zs_obj_read_sg_begin`).

use std::ops::Deref;
use std::sync::atomic::AtomicUsize;

use crate::error::Result;
use crate::handle::Handle;
use crate::layout::Layout;
use crate::pool::Pool;

use super::register::Pinned;
use super::Ending;

/// Segments of a scatter-gather read: one or two `(address, length)` pairs.
pub type SgSegments = ([(*const u8, usize); 2], usize);

impl Pool {
    /// Begins a scatter-gather read: one or two segments, nothing copied.
    pub fn read_sg<'a, P: Deref<Target = Pool>>(
        &'a self,
        h: &'a Handle<P>,
    ) -> Result<SgSection<'a>> {
        self.same_pool(h.pool())?;
        let p = self.pin_object(h.slot_word_for_read(), None)?;
        let layout = self.pinned_layout(&p);
        self.access.record_read(self.class_pos_of(p.info), layout.spanning, 0);
        Ok(SgSection { pool: self, layout, pinned: p })
    }

    /// Begins a scatter-gather read of `mem_len` bytes: the segment count and the segments.
    ///
    /// # Safety
    /// The segments are valid until `read_end_raw`; they must not be written.
    pub unsafe fn read_sg_begin_raw(&self, h: &AtomicUsize, mem_len: usize) -> Result<SgSegments> {
        let p = self.pin_object(h, Some(mem_len))?;
        if p.reg.announced.is_none() {
            self.remember(&p);
        }
        let layout = self.pinned_layout(&p);
        self.access.record_read(self.class_pos_of(p.info), layout.spanning, 0);
        Ok(self.sg_segments(&layout))
    }

    pub(crate) fn sg_segments(&self, layout: &Layout) -> SgSegments {
        let mut segs = [(std::ptr::null(), 0); 2];
        let mut n = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            // SAFETY: the piece lies within its unit (a page, or a compound page of adjacent
            // pages), so the pointer stays inside the unit's mapping.
            segs[n] = (unsafe { self.arena.page_ptr(p.pfn).add(p.offset) } as *const u8, p.len);
            n += 1;
        }
        // `contiguous`: the zspage's pages are adjacent, so the two pieces are one segment.
        if n == 2 && self.config.read_mode == crate::config::ReadMode::Contiguous {
            debug_assert_eq!(segs[0].0.wrapping_add(segs[0].1), segs[1].0);
            segs[0].1 += segs[1].1;
            segs[1] = (std::ptr::null(), 0);
            n = 1;
        }
        (segs, n)
    }
}

/// An open scatter-gather read section. Dropping it ends the section.
pub struct SgSection<'a> {
    pool: &'a Pool,
    layout: Layout,
    pinned: Pinned<'a>,
}

impl SgSection<'_> {
    /// One segment when the object is contiguous, two when it crosses a page boundary.
    pub fn segments(&self) -> Vec<&[u8]> {
        let (segs, n) = self.pool.sg_segments(&self.layout);
        segs[..n]
            .iter()
            // SAFETY: as `ReadSection::deref`: pinned, unwritable while borrowed, in the page.
            .map(|&(p, l)| unsafe { std::slice::from_raw_parts(p, l) })
            .collect()
    }

    /// The kernel's spanning rule for this object.
    pub fn spanning(&self) -> bool {
        self.layout.spanning
    }
}

impl Drop for SgSection<'_> {
    fn drop(&mut self) {
        // A safe section's end cannot fail: its registration is its own.
        let _ = self.pool.end(Ending::Safe(&self.pinned.reg, std::ptr::null()));
    }
}
