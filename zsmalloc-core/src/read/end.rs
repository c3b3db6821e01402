//! The ends of read sections: what a section's begin registered is undone, by the thread that
//! began it (its announce slot or its open-section record proves the registration without a
//! second lookup) or by any other (the contract allows it: then the handle is checked again).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::announce;
use crate::error::{Error, Result};
use crate::header::{self, Refusal};
use crate::open_section::{self, OpenSection};
use crate::placement::{ROLE, WORD, ZSPAGE};
use crate::pool::Pool;
use crate::tid::Tid;

use super::register::wrong_read_len;

impl Pool {
    /// Ends this thread's announced section if it is on `h`'s object (of `mem_len` bytes when
    /// given). False changes nothing: the section is counted, another thread's, or not open.
    #[inline(always)]
    pub(crate) fn end_announced(&self, h: &AtomicUsize, mem_len: Option<usize>) -> bool {
        let Some(slot) = Tid::current().owned_index().map(announce::slot_of) else {
            return false;
        };
        let (held, owner) = (slot.load(Ordering::Relaxed), h as *const AtomicUsize as usize);
        // What the slot names is enough: no load of `h` (an announced object is never moved,
        // so `h` still names it) and, for an empty slot, no header (0 is outside the mapping).
        let at = announce::announced_header(held);
        if held != announce::announcement(at, owner) || !self.arena.holds(at) {
            return false;
        }
        // SAFETY: `at` lies in this pool's mapping, which outlives `self`, and this thread
        // announced it (only the slot's thread fills it), so it is an object start that
        // `announce_in_place` or `pin_fast_at` checked by its page's role (`place`), which never
        // changes: a header word, only ever accessed atomically. If another thread ended the
        // section meanwhile (the contract allows it), the object may be gone: then the owner check
        // below fails or the slot is already empty, and the store changes nothing of another
        // section.
        let cur = unsafe { &*(at as *const AtomicU64) }.load(Ordering::Acquire);
        // The section was begun on the header's owner: the tag alone could be another's.
        if header::owner(cur) != owner || mem_len.is_some_and(|m| m != header::len(cur)) {
            return false;
        }
        slot.store(0, Ordering::Release);
        true
    }

    /// `read_end_raw` of a section this thread did not announce on `h`'s object.
    #[inline(never)]
    pub(crate) fn end_unannounced(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        let Some(open) = open_section::matching(self.id, addr, h.load(Ordering::Acquire)) else {
            return self.unpin_object(h, mem_len);
        };
        if let Some(m) = mem_len.filter(|&m| m != open.len) {
            return Err(wrong_read_len(m, open.len));
        }
        self.end_recorded(&open, addr).map_err(|r| {
            // The record proved nothing this time: forget it, as a successful end does.
            open_section::clear();
            end_refusal(r)
        })
    }

    /// Ends the section `open` records for the handle at `addr`; refused (changing nothing) if
    /// its header holds no reader of that handle.
    #[inline]
    pub(crate) fn end_recorded(
        &self,
        open: &OpenSection,
        addr: usize,
    ) -> std::result::Result<(), Refusal> {
        // SAFETY: a record of this pool (ids are never reused) points into its zspage table and
        // arena, which live as long as `self` (see `open_section`); `pin` may be null.
        let (pin, hw) = unsafe { (open.pin.as_ref(), &*open.header) };
        end_counted_or_announced(hw, addr)?;
        open_section::clear();
        if let Some(pin) = pin {
            pin.unpin();
        }
        Ok(())
    }

    /// Ends a read of the object of `h` begun by `pin_object`, re-validating the handle.
    pub(crate) fn unpin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<()> {
        let addr = h as *const AtomicUsize as usize;
        let word = h.load(Ordering::Acquire);
        let (z, p) = self
            .place::<WORD>(word, None)
            .and_then(|w| Ok((w.zspage.ok_or("no such zspage")?, self.place::<ROLE>(word, None)?)))
            .map_err(Error::InvalidHandle)?;
        let info = &p.class.info;
        let hw = if info.huge {
            self.place::<ZSPAGE>(word, Some(z)).map_err(Error::InvalidHandle)?;
            &z.huge_header
        } else {
            self.arena.word_at(p.loc.offset())
        };
        if let Some(m) = mem_len {
            let len = header::len(hw.load(Ordering::Acquire));
            if m != len {
                return Err(wrong_read_len(m, len));
            }
        }
        end_registration(hw, addr)?;
        if info.huge {
            z.pin.unpin();
        }
        Ok(())
    }
}

/// Ends the reader registration of the handle at `addr` on header `hw`.
pub(crate) fn end_registration(hw: &AtomicU64, addr: usize) -> Result<()> {
    end_counted_or_announced(hw, addr).map_err(end_refusal)
}

/// Ends one section on the object owned by `addr` at header `hw`, begun by any thread: a counted
/// one, else one announced in some thread's announce slot (the contract lets any thread end a
/// section, and sections of one handle are alike).
pub(crate) fn end_counted_or_announced(
    hw: &AtomicU64,
    addr: usize,
) -> std::result::Result<(), Refusal> {
    header::end_read(hw, addr).or_else(|r| {
        let announced = header::check_owner(hw.load(Ordering::Acquire), addr).is_ok()
            && announce::retract_any(
                announce::in_use(),
                announce::announcement(header::address_of(hw), addr),
            );
        if announced {
            Ok(())
        } else {
            Err(r)
        }
    })
}

/// Why a section's end was refused: a header without this handle's reader has no section open.
pub(crate) fn end_refusal(r: Refusal) -> Error {
    match r {
        Refusal::Busy => Error::InvalidArgument("no read section in progress".into()),
        other => other.into_error(),
    }
}
