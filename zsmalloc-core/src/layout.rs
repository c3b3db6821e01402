//! Object geometry: where an object's header and bytes lie in its zspage's pages, and the copies
//! in and out of them. Pages of one zspage are not assumed adjacent: an object that crosses a
//! page boundary is two pieces.
//!
//! A zspage is made of units: pages, or in the multi-page band's classes above a page, order-K
//! compound pages (`2^K` adjacent pages, aligned; docs/DESIGN.md, Objects of several pages).
//! Everything here counts in units: "page" below means the class's unit, and a zspage's page
//! list holds each unit's first page.

use std::sync::atomic::AtomicU64;

use crate::arena::{self, Pfn};
use crate::class_table::{ClassInfo, HDR};
use crate::handle_word::Location;
use crate::payload::Payload;
use crate::pool::Pool;
use crate::zspage::Zspage;

/// One piece of an object's payload: page, offset in it, bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Piece {
    pub pfn: Pfn,
    pub offset: usize,
    pub len: usize,
}

/// Where an object's bytes lie.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// Payload pieces; the second is empty unless the payload crosses a unit boundary.
    pub pieces: [Piece; 2],
    /// The kernel's rule: `offset + HDR + len > unit` for non-huge objects.
    pub spanning: bool,
}

/// The payload of a non-huge object that does not cross a page: just after its header word.
#[inline(always)]
pub(crate) fn payload_of(header: &AtomicU64) -> *const u8 {
    (header as *const AtomicU64 as *const u8).wrapping_add(HDR as usize)
}

impl<P: Payload> Pool<P> {
    /// The shift of a unit of class `info`'s zspages: a page's, or a compound page's.
    #[inline(always)]
    pub(crate) fn unit_shift(&self, info: &ClassInfo) -> u32 {
        info.unit_shift
    }

    /// Geometry of object `obj` of `len` bytes in zspage `z`.
    #[inline(always)]
    pub(crate) fn layout(&self, z: &Zspage, info: &ClassInfo, obj: u32, len: usize) -> Layout {
        if info.huge {
            let pieces = [Piece { pfn: z.page(0), offset: 0, len }, Piece::default()];
            return Layout { pieces, spanning: false };
        }
        let (shift, mask) = (info.unit_shift, info.unit_mask as usize);
        let page = mask + 1;
        let start = obj as usize * info.size as usize;
        let offset = start & mask;
        let spanning = offset + HDR as usize + len > page;
        let data = start + HDR as usize;
        let (dpage, doff) = (data >> shift, data & mask);
        let first = len.min(page - doff);
        let mut pieces = [Piece { pfn: z.page(dpage), offset: doff, len: first }, Piece::default()];
        if first < len {
            pieces[1] = Piece { pfn: z.page(dpage + 1), offset: 0, len: len - first };
        }
        Layout { pieces, spanning }
    }

    /// `layout` of object `obj` whose handle location (header, or huge payload) is at arena
    /// byte `offset`: the zspage's page list is read only when the payload continues on the
    /// next unit. Units are aligned, so the offset within its unit is the arena offset modulo
    /// the unit, and the unit's first page the offset with those bits cleared: one computation
    /// for pages and for the multi-page band's compound units, without a test of the order.
    #[inline(always)]
    pub(crate) fn layout_at(
        &self,
        z: &Zspage,
        info: &ClassInfo,
        obj: u32,
        offset: usize,
        len: usize,
    ) -> Layout {
        let mask = info.unit_mask as usize;
        let in_unit = offset & mask;
        let pfn = ((offset & !mask) >> self.page_shift()) as Pfn;
        if info.huge {
            let pieces = [Piece { pfn, offset: 0, len }, Piece::default()];
            return Layout { pieces, spanning: false };
        }
        let spanning = in_unit + HDR as usize + len > mask + 1;
        if !spanning {
            let pieces = [Piece { pfn, offset: in_unit + HDR as usize, len }, Piece::default()];
            return Layout { pieces, spanning };
        }
        self.layout(z, info, obj, len)
    }

    /// The header word of object `obj` (in the page, or in the zspage for huge classes).
    #[inline]
    pub(crate) fn header_word<'a>(
        &'a self,
        z: &'a Zspage,
        info: &ClassInfo,
        obj: u32,
    ) -> &'a AtomicU64 {
        if info.huge {
            return &z.huge_header;
        }
        let start = obj as usize * info.size as usize;
        let (pfn, in_unit) = (z.page(start >> info.unit_shift), start & info.unit_mask as usize);
        self.payload.header(&self.arena, pfn, in_unit, info)
    }

    /// The header word of the object at `loc` (checked by `place::<ZSPAGE>`).
    #[inline]
    pub(crate) fn header_at<'a>(
        &'a self,
        z: &'a Zspage,
        info: &ClassInfo,
        loc: Location,
    ) -> &'a AtomicU64 {
        if info.huge {
            &z.huge_header
        } else {
            self.payload.header_at_offset(&self.arena, loc.offset(), info)
        }
    }

    pub(crate) fn copy_pieces_out(&self, layout: &Layout, out: &mut [u8]) {
        let mut at = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            // SAFETY: callers hold the object (pinned with a header reader, or under migration),
            // so nobody writes these bytes meanwhile; pieces lie within their pages.
            unsafe { self.payload.read(&self.arena, p.pfn, p.offset, &mut out[at..at + p.len]) };
            at += p.len;
        }
    }

    /// # Safety
    /// The caller owns the object the layout describes.
    pub(crate) unsafe fn copy_pieces_in(&self, layout: &Layout, data: &[u8]) {
        let mut at = 0;
        for p in layout.pieces.iter().filter(|p| p.len > 0) {
            // SAFETY: forwarded contract (the caller owns the object); pieces lie within their
            // units.
            unsafe { self.payload.write(&self.arena, p.pfn, p.offset, &data[at..at + p.len]) };
            at += p.len;
        }
    }

    /// The handle word of object `obj` of the zspage at table entry `entry`.
    #[inline]
    pub(crate) fn locate(&self, entry: u32, z: &Zspage, info: &ClassInfo, obj: u32) -> Location {
        let start = if info.huge { 0 } else { obj as usize * info.size as usize };
        let page = start >> info.unit_shift;
        // A unit's first page is aligned to the unit, so its offset and the offset within the
        // unit do not overlap.
        let offset =
            ((z.page(page) as usize) << self.page_shift()) | (start & info.unit_mask as usize);
        Location { tag: self.tag, entry, page: page as u32, pos: (offset >> 3) as u64 }
    }

    /// Starts loading the object a handle word names, if it looks like one of this pool's: its
    /// header and `len` payload bytes (at least two lines) and its zspage's metadata. A prefetch
    /// only: nothing is checked or read.
    #[inline]
    pub(crate) fn prefetch_word(&self, word: usize, len: usize) {
        if let Some(loc) = Location::decode(word).filter(|l| l.tag == self.tag) {
            // The metadata first: a free's class lock and checks wait for the zspage's line, a
            // read's checks for its page's role.
            if len == 0 {
                if let Some(z) = self.zspages.get(loc.entry) {
                    arena::prefetch_line(z as *const Zspage as *const u8);
                }
            } else {
                self.arena.prefetch_role((loc.offset() >> self.page_shift()) as Pfn);
            }
            if len + HDR as usize <= 128 {
                self.arena.prefetch(loc.offset()); // two lines, without a loop
            } else {
                self.arena.prefetch_range(loc.offset(), len + HDR as usize, false);
            }
        }
    }
}
