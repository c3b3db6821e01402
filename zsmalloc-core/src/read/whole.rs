//! Sections begun and ended in one call: copies of a whole object out (`read_into`,
//! `read_to_vec`, `read_into_raw`), and the queries that need the object held a moment (its
//! location and length).

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::Result;
use crate::handle::Handle;
use crate::handle_word::ObjectLocation;
use crate::layout::payload_of;
use crate::placement::ZSPAGE;
use crate::pool::Pool;
use crate::tid::Tid;
use crate::Error;

use super::register::buffer_too_small;

impl Pool {
    /// Copies the object into `out` (at least its length); returns the length.
    pub fn read_into<P: Deref<Target = Pool>>(
        &self,
        h: &Handle<P>,
        out: &mut [u8],
    ) -> Result<usize> {
        self.same_pool(h.pool())?;
        self.read_word_into(h.slot_word_for_read(), Some((h.hint(), h.len())), out)
    }

    /// The object's bytes as a new vector.
    pub fn read_to_vec<P: Deref<Target = Pool>>(&self, h: &Handle<P>) -> Result<Vec<u8>> {
        self.same_pool(h.pool())?;
        let mut v = vec![0; h.len()];
        self.read_word_into(h.slot_word_for_read(), Some((h.hint(), h.len())), &mut v)?;
        Ok(v)
    }

    /// Copies the object of `h` into `out` (at least its length) in one call: a read section
    /// begun and ended without handing out a pointer. Returns the length.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn read_into_raw(&self, h: &AtomicUsize, out: &mut [u8]) -> Result<usize> {
        self.read_word_into(h, None, out)
    }

    /// Where the object of `h` is now (zspage entry and generation, object index): for tests,
    /// tools and diagnostics; compaction may move it at any time.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn location_raw(&self, h: &AtomicUsize) -> Result<ObjectLocation> {
        self.locate_word(h)
    }

    /// Length of the object of `h`.
    ///
    /// # Safety
    /// As [`Pool::free_raw`].
    pub unsafe fn object_len_raw(&self, h: &AtomicUsize) -> Result<usize> {
        self.object_len(h)
    }

    /// Copies the object of `h` into `out`. `known`: the handle's word hint and the object's
    /// length as a safe handle knows them, which lets the common case start without loading `h`.
    fn read_word_into(
        &self,
        h: &AtomicUsize,
        known: Option<(usize, usize)>,
        out: &mut [u8],
    ) -> Result<usize> {
        let t = Tid::current();
        if let Some((hint, len)) = known.filter(|&(_, len)| len <= out.len()) {
            if let Some((reg, pos)) = self.announce_in_place(hint, h, len, t) {
                // SAFETY: announced, so the `len` payload bytes after the header (within its
                // page: `announce_in_place` takes only objects that do not cross one) are the
                // object's and nobody writes them meanwhile; `out` holds at least `len` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(payload_of(reg.header), out.as_mut_ptr(), len)
                };
                self.access.record_read_by(t, pos, false, 0);
                reg.release();
                return Ok(len);
            }
        }
        let fast = match known {
            Some((hint, len)) => self.pin_fast_at(hint, h, Some(len), t),
            None => self.pin_fast_at(h.load(Ordering::Acquire), h, None, t),
        };
        if let Some(p) = fast {
            if p.len > out.len() {
                p.release();
                return Err(buffer_too_small(out.len(), p.len));
            }
            // SAFETY: registered, so the `len` payload bytes after the header (within its page:
            // `pin_fast` takes only objects that do not cross one) are the object's and nobody
            // writes them meanwhile; `out` holds at least `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(p.in_place(), out.as_mut_ptr(), p.len) };
            self.access.record_read_by(t, self.class_pos_of(p.info), false, 0);
            p.release();
            return Ok(p.len);
        }
        let p = self.pin_slow(h, None)?;
        if out.len() < p.len {
            p.release();
            return Err(buffer_too_small(out.len(), p.len));
        }
        let layout = self.pinned_layout(&p);
        self.copy_pieces_out(&layout, &mut out[..p.len]);
        // Only `copy` mode copies a spanning object for its reader (the others read it through
        // one address); this copy out is the caller's request in every mode.
        let copied = layout.spanning && self.config.read_mode == crate::config::ReadMode::Copy;
        let pos = self.class_pos_of(p.info);
        self.access.record_read(pos, layout.spanning, if copied { p.len as u64 } else { 0 });
        p.release();
        Ok(p.len)
    }

    /// Where the object of `h` is.
    pub(crate) fn locate_word(&self, h: &AtomicUsize) -> Result<ObjectLocation> {
        let p = self.pin_object(h, None)?;
        // The registration keeps the object, hence its zspage, where it is while we look.
        let placed = self.place::<ZSPAGE>(p.loc.encode(), Some(p.zspage));
        let generation = p.zspage.live_generation();
        p.release();
        placed.map_err(Error::InvalidHandle)?;
        Ok(ObjectLocation {
            zspage: p.loc.entry,
            generation: generation.expect("a pinned zspage holding an object is live"),
            index: p.obj,
        })
    }

    pub(crate) fn object_len(&self, h: &AtomicUsize) -> Result<usize> {
        let p = self.pin_object(h, None)?;
        p.release();
        Ok(p.len)
    }
}
