//! Reader registration: how a read section makes its object stay put (neither freed nor moved)
//! until it ends. Every section kind (`copy.rs`, `whole.rs`, `sg.rs`) begins here.
//!
//! A non-huge object's reader registers on its header and holds nothing else: the header word
//! is found from the handle word and its page's role; the reader announces it in its thread's
//! announce slot (`announce.rs`) and checks it, or, without a free announce slot, counts itself
//! in it with a CAS. A registration that succeeds proves the object is the handle's (the header
//! names the handle word, the only owner of one live object) and not being moved (a free, a
//! handle move and compaction claim the header first, and a claimed header refuses readers). A
//! huge object's header lives in its zspage, so its reader pins the zspage first.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::announce;
use crate::class_table::{ClassInfo, HDR};
use crate::error::{Error, Result};
use crate::handle_word::Location;
use crate::header::{self, Refusal};
use crate::layout::{payload_of, Layout};
use crate::open_section::{self, OpenSection};
use crate::pin::{self, PinWord};
use crate::placement::{ROLE, START, WORD, ZSPAGE};
use crate::pool::Pool;
use crate::sync::backoff;
use crate::tid::Tid;
use crate::zspage::Zspage;

use super::Begun;

/// A validated, pinned object: its registration is held until `release`, so ending a section
/// needs no second lookup.
pub(crate) struct Pinned<'a> {
    pub reg: Registration<'a>,
    /// The zspage the handle word names: checked (`place::<ZSPAGE>`) for huge and spanning objects,
    /// whose layout needs it; for others only the header registration vouches for the object.
    pub zspage: &'a Zspage,
    pub info: &'a ClassInfo,
    pub obj: u32,
    /// The handle's location: header page index and arena offset.
    pub loc: Location,
    pub len: usize,
}

impl<'a> Pinned<'a> {
    /// A non-huge object's reader: registered on `header` by the handle at `owner` (announced
    /// in `announced`, or counted), no pin.
    fn registered(
        zspage: &'a Zspage,
        info: &'a ClassInfo,
        loc: Location,
        obj: u32,
        len: usize,
        reg: Registration<'a>,
    ) -> Self {
        Pinned { zspage, info, obj, loc, len, reg }
    }

    /// The payload of a non-huge object that does not cross a page: just after its header
    /// word, whose address the registration already holds (no load after the locked
    /// instruction).
    #[inline]
    pub(crate) fn in_place(&self) -> *const u8 {
        debug_assert!(!self.info.huge);
        payload_of(self.reg.header)
    }

    pub(crate) fn release(&self) {
        self.reg.release();
    }
}

/// What a reader holds until its section ends: a registration on `header` by the handle at
/// `owner`, announced in an announce slot (`announce.rs`) or counted in the header, plus the zspage
/// pin a huge object's reader holds (its header lives in the zspage).
#[derive(Clone, Copy)]
pub(crate) struct Registration<'a> {
    pub header: &'a AtomicU64,
    pub owner: usize,
    /// The announce slot this section is announced in; `None`: counted in the header.
    pub announced: Option<&'static AtomicUsize>,
    pub pin: Option<&'a PinWord>,
}

impl<'a> Registration<'a> {
    /// A non-huge object's registration (no pin).
    pub(crate) fn on(
        header: &'a AtomicU64,
        owner: usize,
        announced: Option<&'static AtomicUsize>,
    ) -> Self {
        Registration { header, owner, announced, pin: None }
    }
}

impl Registration<'_> {
    #[inline]
    pub(crate) fn release(&self) {
        if let Some(slot) = self.announced {
            slot.store(0, Ordering::Release);
            return;
        }
        // Cannot fail: this reader registration is ours and keeps the header unchanged.
        let _ = header::end_read(self.header, self.owner);
        if let Some(pin) = self.pin {
            pin.unpin();
        }
    }
}

impl Pool {
    /// Registers a reader on the object of `h` (see the module documentation): the object is then
    /// neither freed nor moved until `release`/`read_end_raw`. Checks the stored length against
    /// `mem_len` when given. A huge object's reader pins its zspage first (`pin_in_zspage`).
    pub(crate) fn pin_object(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        match self.pin_fast(h, mem_len) {
            Some(p) => Ok(p),
            None => self.pin_slow(h, mem_len),
        }
    }

    /// The common read: a non-huge object of `len` bytes in one page, found by handle word `word`
    /// of `h` (loaded, or the safe layer's hint), whose page's role makes `word`'s place an object
    /// start (`place::<START>`), announced in this thread's empty announce slot and checked in its
    /// header (`header::check_announced`: `h`'s, allocated, not claimed, `len` bytes). Sound
    /// whatever `word` is: only `h`'s one live object passes the header check, and the announce
    /// then keeps it there until the section ends. `None` changes nothing (no announce slot,
    /// announce slot in use, huge, spanning or anything wrong): the general path counts the reader
    /// or says what is wrong. Also returns the class position (for the per-class counters).
    #[inline(always)]
    pub(crate) fn announce_in_place(
        &self,
        word: usize,
        h: &AtomicUsize,
        len: usize,
        thread: Tid,
    ) -> Option<(Registration<'_>, usize)> {
        let slot = announce::slot_of(thread.owned_index()?);
        let place = self.place::<START>(word, None).ok()?;
        let (loc, pos, info) = (place.loc, place.pos, &place.class.info);
        // In one unit (a page, or a compound page of the multi-page band, whose pages are
        // adjacent in the arena). `len` is the caller's: compared against the room after the
        // header, it cannot overflow.
        let (offset, mask) = (loc.offset(), info.unit_mask as usize);
        if len > mask + 1 - HDR as usize - (offset & mask) {
            return None;
        }
        // SAFETY: the page's role makes `offset` an object start of a non-huge class (the role
        // never changes, see `arena.rs`): an 8-aligned header word inside the mapped
        // reservation, which is only ever accessed atomically.
        let hw = unsafe { &*(self.arena.addr(offset) as *const AtomicU64) };
        let addr = h as *const AtomicUsize as usize;
        header::begin_announced(slot, hw, addr, Some(len))?;
        Some((Registration::on(hw, addr, Some(slot)), pos))
    }

    /// `pin_object`'s common case, with every check of `place::<ROLE>` and `header::begin_read` but
    /// none of their errors: a non-huge object that does not cross a page, announced (or counted)
    /// in one attempt. `None` sends the caller to `pin_slow`, which repeats the checks and says
    /// what failed.
    #[inline(always)]
    pub(crate) fn pin_fast(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Option<Pinned<'_>> {
        self.pin_fast_at(h.load(Ordering::Acquire), h, mem_len, Tid::current())
    }

    /// `pin_fast` for the object handle word `word` names, when the caller knows the word
    /// without loading `h` (the safe layer's hint). Sound whatever `word` is: the registration
    /// succeeds only on a header that names `h`, which is `h`'s one live object, and then that
    /// object stays where `word` says until the end.
    #[inline(always)]
    pub(crate) fn pin_fast_at(
        &self,
        word: usize,
        h: &AtomicUsize,
        mem_len: Option<usize>,
        thread: Tid,
    ) -> Option<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let place = self.place::<ROLE>(word, None).ok().filter(|p| !p.class.info.huge)?;
        let (loc, info, obj) = (place.loc, &place.class.info, place.obj);
        // In one unit: a page, or a compound page of the multi-page band.
        let (offset, mask) = (loc.offset(), info.unit_mask as usize);
        let in_unit = offset & mask;
        let fits = |len: usize| len <= mask + 1 - HDR as usize - in_unit;
        if mem_len.is_some_and(|l| !fits(l)) {
            return None;
        }
        let zspage = self.zspages.get(loc.entry)?;
        // SAFETY: the page's role makes `offset` an object start of a non-huge class (the role
        // never changes, see `arena.rs`): an 8-aligned header word inside the mapped
        // reservation, which is only ever accessed atomically.
        let hw = unsafe { &*(self.arena.addr(offset) as *const AtomicU64) };
        // Announced if this thread's announce slot is free; otherwise, or if the header refused the
        // announced reader, counted (which refuses whatever the announce refused).
        let announced = thread.owned_index().map(announce::slot_of).and_then(|slot| {
            header::begin_announced(slot, hw, addr, mem_len).map(|len| (len, slot))
        });
        let (len, slot) = match announced {
            Some((len, slot)) => (len, Some(slot)),
            None => (header::try_begin_read(hw, addr, mem_len)?, None),
        };
        let p = Pinned::registered(zspage, info, loc, obj, len, Registration::on(hw, addr, slot));
        if !fits(len) {
            p.release(); // spanning: `pin_slow` also checks the zspage
            return None;
        }
        Some(p)
    }

    #[inline(never)]
    pub(crate) fn pin_slow(&self, h: &AtomicUsize, mem_len: Option<usize>) -> Result<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        loop {
            let word = h.load(Ordering::Acquire);
            // The zspage the word names (`WORD`), and the object by its page's role (`ROLE`).
            let checked = self.place::<WORD>(word, None).and_then(|w| {
                Ok((w.zspage.ok_or("no such zspage")?, self.place::<ROLE>(word, None)?))
            });
            let (z, (loc, pos, obj)) = match checked {
                Ok((z, p)) => (z, (p.loc, p.pos, p.obj)),
                // Compaction moved the object since the load.
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(e) => return Err(Error::InvalidHandle(e)),
            };
            let info = &self.classes[pos].info;
            if info.huge {
                return self.pin_in_zspage(h, mem_len);
            }
            let hw = self.arena.word_at(loc.offset());
            let len = match header::begin_read(hw, addr) {
                Ok(len) => len,
                Err(Refusal::Claimed) => {
                    backoff(); // being moved: the handle word will name the copy
                    continue;
                }
                Err(_) if h.load(Ordering::Acquire) != word => continue,
                Err(r) => return Err(r.into_error()),
            };
            let p = Pinned::registered(z, info, loc, obj, len, Registration::on(hw, addr, None));
            if let Some(m) = mem_len.filter(|&m| m != len) {
                p.release();
                return Err(wrong_read_len(m, len));
            }
            // In one unit (a page, or a compound page): by the class's unit mask.
            let mask = info.unit_mask as usize;
            if (loc.offset() & mask) + HDR as usize + len > mask + 1 {
                // Spanning: the layout reads the zspage's page list, so the word's zspage must
                // be the object's. Stable now: a registered object keeps its zspage alive.
                if let Err(e) = self
                    .place::<ZSPAGE>(word, Some(z))
                    .and_then(|at| (at.pos == pos).then_some(()).ok_or("not its zspage"))
                {
                    p.release();
                    return Err(Error::InvalidHandle(e));
                }
            }
            return Ok(p);
        }
    }

    /// `pin_object` for a huge object: zspage pin plus a reader on the zspage's header word.
    pub(crate) fn pin_in_zspage(
        &self,
        h: &AtomicUsize,
        mem_len: Option<usize>,
    ) -> Result<Pinned<'_>> {
        let addr = h as *const AtomicUsize as usize;
        let (word, z, _) = pin::pin_current(
            || h.load(Ordering::Acquire),
            |word| {
                let p = self.place::<WORD>(word, None).map_err(Error::InvalidHandle)?;
                let z = p.zspage.ok_or(Error::InvalidHandle("no such zspage"))?;
                Ok((z, &z.pin))
            },
        )?;
        // Pinned with the word unchanged: `z` is neither released nor migrated meanwhile, so
        // what `place::<ZSPAGE>` finds stays true until `unpin`.
        let pinned = (|| {
            let p = self.place::<ZSPAGE>(word, Some(z)).map_err(Error::InvalidHandle)?;
            let (loc, info, obj) = (p.loc, &p.class.info, p.obj);
            let hw = self.header_at(z, info, loc);
            let len = header::begin_read(hw, addr).map_err(Refusal::into_error)?;
            if let Some(m) = mem_len.filter(|&m| m != len) {
                let _ = header::end_read(hw, addr);
                return Err(wrong_read_len(m, len));
            }
            let reg = Registration { pin: Some(&z.pin), ..Registration::on(hw, addr, None) };
            Ok(Pinned { zspage: z, info, obj, loc, len, reg })
        })();
        if pinned.is_err() {
            z.pin.unpin();
        }
        pinned
    }

    /// `layout` of a pinned object from its handle's location: the zspage's page list is read
    /// only when the payload continues on the next page.
    #[inline]
    pub(crate) fn pinned_layout(&self, p: &Pinned<'_>) -> Layout {
        self.layout_at(p.zspage, p.info, p.obj, p.loc.offset(), p.len)
    }

    /// Begins a raw read section of `mem_len` bytes on an object that lies in one page, handing
    /// it out in place (`copy` mode's `read_begin_raw` without a local copy, as the C ABI's
    /// `zs_obj_read_begin` with `local_copy` NULL). An object that crosses a page is refused
    /// (`EINVAL`) and nothing is counted: only sections begun count.
    #[cold]
    #[inline(never)]
    pub(super) fn in_one_page_begin<'a>(
        &'a self,
        h: &'a AtomicUsize,
        mem_len: usize,
    ) -> Result<Begun<'a>> {
        let p = self.pin_object(h, Some(mem_len))?;
        let layout = self.pinned_layout(&p);
        if layout.spanning {
            p.release();
            return Err(Error::InvalidArgument(
                "local_copy is NULL but the object crosses a page boundary (pass a page-sized \
                 buffer)"
                    .into(),
            ));
        }
        if p.reg.announced.is_none() {
            self.remember(&p);
        }
        self.access.record_read(self.class_pos_of(p.info), false, 0);
        let first = layout.pieces[0];
        // SAFETY: the piece's offset lies inside its page, which the registration keeps mapped
        // and in place until the section ends.
        let ptr = unsafe { self.arena.page_ptr(first.pfn).add(first.offset) };
        Ok(Begun { ptr, len: p.len, reg: p.reg })
    }

    /// Records a raw section begun by this thread, for `read_end_raw`.
    #[inline]
    pub(crate) fn remember(&self, p: &Pinned<'_>) {
        open_section::record(OpenSection {
            pool: self.id,
            handle: p.reg.owner,
            word: p.loc.encode(),
            pin: p.reg.pin.map_or(std::ptr::null(), |p| p as *const PinWord),
            header: p.reg.header,
            len: p.len,
        });
    }
}

/// A buffer too small for the object.
pub(crate) fn buffer_too_small(buffer: usize, object: usize) -> Error {
    Error::InvalidArgument(format!(
        "buffer of {buffer} bytes is smaller than the object ({object} bytes)"
    ))
}

/// A read length that is not the stored one.
pub(crate) fn wrong_read_len(given: usize, stored: usize) -> Error {
    Error::InvalidArgument(format!("read length {given} differs from the stored length {stored}"))
}
