//! The `copy` read mode (mainline's): an object in one page is read in place; one that crosses a
//! page boundary is copied, header included, into the caller's local copy, and the section hands
//! out `local_copy + HDR`, as the kernel's `zs_obj_read_begin` does.
//!
//! The common case, an object in one page read in place through this thread's announce slot, is
//! every mode's: `copy_begin` serves it inline, and the modes part only in the slow begin
//! (`Pool::begin_slow`). A raw section in `contiguous` mode, which reads spanning objects in
//! place too, skips it (one test of the mode) for its mode's own common case (`contiguous.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::class_table::HDR;
use crate::error::{Error, Result};
use crate::layout::payload_of;
use crate::pool::Pool;
use crate::tid::Tid;

use super::register::Pinned;
use super::{Begun, Layer, LocalCopy};

impl Pool {
    /// The begin of every mode, by layer: the common case (announced, in one page) inline, the
    /// rest in the mode's begin (`Pool::begin_slow`). `raw_in_one_page` false (`contiguous`)
    /// sends a raw section straight to its mode's begin, which reads spanning objects in place
    /// too. (A safe section takes the common case in every mode: a test of the mode there
    /// measured 2% more instructions per safe read in the other modes.)
    #[inline(always)]
    pub(crate) fn copy_begin<'a>(
        &'a self,
        layer: Layer<'a>,
        copy: LocalCopy,
        raw_in_one_page: bool,
    ) -> Result<Begun<'a>> {
        match layer {
            Layer::Safe { word, hint, len } => {
                // The handle's hint first: no wait for the slot word's cache line.
                let t = Tid::current();
                if copy.len >= len + HDR as usize {
                    if let Some((reg, pos)) = self.announce_in_place(hint, word, len, t) {
                        self.access.record_read_by(t, pos, false, 0);
                        return Ok(Begun { ptr: payload_of(reg.header), len, reg });
                    }
                }
            }
            Layer::Raw { word, mem_len } if raw_in_one_page => {
                if let Some(b) = self.copy_begin_in_place(word, mem_len) {
                    return Ok(b);
                }
            }
            Layer::Raw { .. } => {}
        }
        match layer {
            Layer::Safe { word, hint, len } => self.begin_slow(word, None, Some((hint, len)), copy),
            Layer::Raw { word, mem_len } => self.begin_slow(word, Some(mem_len), None, copy),
        }
    }

    /// The common case of a raw section: a non-huge object of `mem_len` bytes in one page,
    /// announced in this thread's announce slot and read in place.
    #[inline(always)]
    pub(crate) fn copy_begin_in_place<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: usize,
    ) -> Option<Begun<'a>> {
        let t = Tid::current();
        let (reg, pos) = self.announce_in_place(h.load(Ordering::Acquire), h, mem_len, t)?;
        self.access.record_read_by(t, pos, false, 0);
        Some(Begun { ptr: payload_of(reg.header), len: mem_len, reg })
    }

    /// `copy_begin` of an object the common case does not take: counted in its header (or
    /// pinned, if huge), then in place or copied. `mem_len` is the raw layer's (`None`: a safe
    /// section); a raw section is recorded for its end. Takes the layer's parts, not the
    /// `Layer`, so that the common case never builds one in memory.
    #[inline(never)]
    pub(super) fn copy_begin_slow<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: Option<usize>,
        copy: LocalCopy,
    ) -> Result<Begun<'a>> {
        let p = self.pin_slow(h, mem_len)?;
        if copy.len < p.len + HDR as usize {
            p.release();
            return Err(Error::InvalidArgument(format!(
                "local copy buffer of {} bytes is smaller than the object plus its header ({})",
                copy.len,
                p.len + HDR as usize
            )));
        }
        if mem_len.is_some() {
            self.remember(&p);
        }
        // SAFETY: `copy` is a live, writable buffer of at least len + HDR bytes (checked above
        // for the safe layer; the raw layer's caller promises it).
        let ptr = unsafe { self.in_place_or_copied(&p, copy.ptr) };
        Ok(Begun { ptr, len: p.len, reg: p.reg })
    }

    /// The read-section rule of `copy` mode for a registered object: in place when contiguous, else
    /// header and object copied into `local_copy`, returning `local_copy + HDR`.
    ///
    /// # Safety
    /// `local_copy` is writable for `p.len + HDR` bytes.
    #[inline]
    unsafe fn in_place_or_copied(&self, p: &Pinned<'_>, local_copy: *mut u8) -> *const u8 {
        let layout = self.pinned_layout(p);
        let pos = self.class_pos_of(p.info);
        if !layout.spanning {
            self.access.record_read(pos, false, 0);
            if !p.info.huge {
                return p.in_place();
            }
            let first = layout.pieces[0];
            return self.arena.page_ptr(first.pfn).add(first.offset);
        }
        let hdr = p.reg.header.load(Ordering::Acquire);
        std::ptr::copy_nonoverlapping(hdr.to_ne_bytes().as_ptr(), local_copy, HDR as usize);
        let out = std::slice::from_raw_parts_mut(local_copy.add(HDR as usize), p.len);
        self.copy_pieces_out(&layout, out);
        self.access.record_read(pos, true, p.len as u64);
        local_copy.add(HDR as usize)
    }
}
