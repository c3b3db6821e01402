//! The `contiguous` read mode: every zspage is one run of adjacent pages (`arena/runs.rs`, a
//! higher-order or vmalloc'd zspage), so no read ever copies: an object that crosses a page is
//! read in place like any other, announced in the thread's announce slot like the common case.
//! Its common case (`contiguous_begin`) tests "lies within its zspage's run", not "within one
//! page": a raw section comes straight to it (`Pool::begin` tests the mode first), so a spanning
//! object takes the same fast path as one in one page; a safe section tries every mode's common
//! case first (no test of the mode on the other modes' safe reads) and comes here when the
//! object crosses a page. Scatter-gather reads return one segment (`sg.rs`).
//!
//! Sound for the same reason as the common case (a page keeps its role for life, `arena.rs`),
//! plus the run invariant: the page after a page of role (class, i) is the run's page of role
//! (class, i + 1), so an object start found by its page's role lies, with its whole object, in
//! adjacent pages of one run.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::announce;
use crate::class_table::HDR;
use crate::error::Result;
use crate::header;
use crate::layout::payload_of;
use crate::placement::START;
use crate::pool::Pool;
use crate::tid::Tid;

use super::register::Registration;
use super::Begun;

impl Pool {
    /// `contiguous` mode's begin (from `Pool::begin_slow`; a raw section skips the other
    /// modes' common case for it): its common case first, any non-huge object announced in this
    /// thread's announce slot and read in place, spanning or not; else `contiguous_begin_slow`.
    /// `mem_len` is the raw layer's, `known` the safe layer's hint and length.
    #[inline(always)]
    pub(super) fn contiguous_begin<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: Option<usize>,
        known: Option<(usize, usize)>,
    ) -> Result<Begun<'a>> {
        let t = Tid::current();
        let announced = match (known, mem_len) {
            // The handle's hint first: no wait for the slot word's cache line.
            (Some((hint, len)), _) => self.announce_in_run(hint, h, len, t).map(|r| (r, len)),
            (None, Some(len)) => {
                self.announce_in_run(h.load(Ordering::Acquire), h, len, t).map(|r| (r, len))
            }
            (None, None) => None,
        };
        if let Some(((reg, pos, spanning), len)) = announced {
            self.access.record_read_by(t, pos, spanning, 0);
            return Ok(Begun { ptr: payload_of(reg.header), len, reg });
        }
        self.contiguous_begin_slow(h, mem_len)
    }

    /// `contiguous` mode's begin of an object its common case did not take (the thread's
    /// announce slot is busy, the object is huge, the hint is stale, or anything is wrong):
    /// counted (or pinned, if huge) and in place. A raw section (`mem_len` given) is recorded
    /// for its end.
    #[inline(never)]
    fn contiguous_begin_slow<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: Option<usize>,
    ) -> Result<Begun<'a>> {
        let p = self.pin_slow(h, mem_len)?;
        if mem_len.is_some() {
            self.remember(&p);
        }
        let layout = self.pinned_layout(&p);
        let ptr = if p.info.huge {
            let first = layout.pieces[0];
            // SAFETY: the piece lies inside its page (offset 0, at most a page).
            unsafe { self.arena.page_ptr(first.pfn).add(first.offset) as *const u8 }
        } else {
            p.in_place() // the zspage's pages are adjacent
        };
        self.access.record_read(self.class_pos_of(p.info), layout.spanning, 0);
        Ok(Begun { ptr, len: p.len, reg: p.reg })
    }

    /// The common case of a raw section in `contiguous` mode: any non-huge object, announced in
    /// this thread's announce slot and read in place.
    #[inline]
    pub(super) fn contiguous_begin_in_place<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: usize,
    ) -> Option<Begun<'a>> {
        let t = Tid::current();
        let (reg, pos, spanning) =
            self.announce_in_run(h.load(Ordering::Acquire), h, mem_len, t)?;
        self.access.record_read_by(t, pos, spanning, 0);
        Some(Begun { ptr: payload_of(reg.header), len: mem_len, reg })
    }

    /// `announce_in_place` without its one-page limit, for runs: the object of handle word
    /// `word` of `h`, `len` bytes, announced in this thread's empty announce slot. Returns the
    /// registration, the class position and whether the object crosses a page. `None` changes
    /// nothing.
    #[inline(always)]
    fn announce_in_run<'a>(
        &'a self,
        word: usize,
        h: &AtomicUsize,
        len: usize,
        thread: Tid,
    ) -> Option<(Registration<'a>, usize, bool)> {
        let slot = announce::slot_of(thread.owned_index()?);
        let place = self.place::<START>(word, None).ok()?;
        let offset = place.loc.offset();
        // The header's length (checked below against `len`) fits the class, so the object lies
        // in its run; this only keeps the arithmetic from overflowing.
        if len > place.class.info.size as usize {
            return None;
        }
        // SAFETY: the page's role makes `offset` an object start of a non-huge class (the role
        // never changes, see `arena.rs`): an 8-aligned header word inside the mapped
        // reservation, which is only ever accessed atomically.
        let hw = unsafe { &*(self.arena.addr(offset) as *const AtomicU64) };
        let addr = h as *const AtomicUsize as usize;
        header::begin_announced(slot, hw, addr, Some(len))?;
        let unit = 1usize << self.unit_shift(&place.class.info);
        let spanning = (offset & (unit - 1)) + HDR as usize + len > unit;
        Some((Registration::on(hw, addr, Some(slot)), place.pos, spanning))
    }
}
