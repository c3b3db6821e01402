//! Serving a fault: a page never touched (or emptied) comes in as zeros (with the untouched
//! pages after it: `first_touch.rs`), an evicted one from
//! its same-filled value or its pool object, decompressed; each fills the hole with
//! `UFFDIO_COPY`, which also wakes the threads waiting on it. The object is freed once the
//! page is back. Eviction waits for the slack to be used up (`defer.rs`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use zsmalloc_codec::fill_word;
use zsmalloc_core::Backend;
use zsmalloc_tier::stats::{Field, State as TierState, Step};
use zsmalloc_tier::uffd::UffdError;

use crate::first_touch::ROOM_RUN;
use crate::protection;
use crate::reserve;
use crate::steps;
use crate::sys::PAGE;
use crate::tier::{self, State, Tier, CACHED, EMPTY, GROUP, INACTIVE, RESIDENT, SAME, STORED};

/// Whether a copy was refused because its range spans two areas of the program's memory.
pub fn crosses_areas(e: &UffdError) -> bool {
    matches!(e, UffdError::Os { err, .. } if err.raw_os_error() == Some(libc::ENOENT))
}

/// The most pages a first touch fills near the budget (with room under it, up to
/// `first_touch::ROOM_RUN`).
pub const FAULT_AROUND: usize = 16;

impl Tier {
    /// Serves the fault at `addr` (a page of the reserve), then evicts down to the budget.
    pub fn serve(&self, addr: usize, t0: Instant) {
        self.state.with(|st| {
            let page = (addr - reserve::base()) / PAGE;
            let kind = st.pages.kind(page);
            match kind {
                EMPTY => self.first_touch(st, page),
                // Served already (another thread's fault on the same page), or the kernel
                // dropped it (MADV_FREE): zeros, if it is a hole.
                RESIDENT => self.fill(addr, &st.zero[..PAGE]),
                INACTIVE => self.refault(st, page),
                _ => {
                    steps::arm(t0);
                    self.restore(st, page);
                    let w = tier::stats();
                    w.add(Field::Faults, 1);
                    w.fault(t0.elapsed().as_nanos() as u64);
                    // After the copy, which woke the faulting thread: it runs meanwhile.
                    if kind == CACHED {
                        w.add(Field::ReadaheadHits, 1);
                    } else {
                        self.read_ahead(st, page);
                    }
                }
            }
            self.evict_after_fault(st);
            steps::finish(Step::Evict);
        });
    }

    /// The untouched pages from `page` on that a first touch of `page` fills with zeros: a
    /// program touches its new memory mostly upwards, and one fault then serves several
    /// pages. At most a quarter of the budget, so that the faulting page is never the next
    /// to leave, and [`FAULT_AROUND`]; up to `ROOM_RUN` while they fill at most half of
    /// the room left under the budget; never past the pages the heap ever handed out, nor
    /// where the protection changes (a copy never crosses two areas: `protection.rs`).
    pub fn untouched_run(&self, st: &State, page: usize) -> usize {
        let budget = st.pages.budget();
        let room = st.pages.room() as usize / 2;
        let most = (budget as usize / 4).clamp(1, FAULT_AROUND).max(room.min(ROOM_RUN));
        let end = reserve::high_water_pages().min(page + most).max(page + 1);
        let prot = protection::of(page);
        (page..end)
            .take_while(|&p| st.pages.kind(p) == EMPTY && protection::of(p) == prot)
            .count()
            .max(1)
    }

    /// Fills the holes at `addr` with `data` (whole pages); a page already there ends the
    /// fill (the pages after it stay holes, served as zeros when touched).
    pub fn fill(&self, addr: usize, data: &[u8]) {
        // Timing its steps, the copy does not wake: on one CPU the woken thread runs before the
        // clock is read again, and its time would count as the copy's.
        let wake = !steps::on();
        match self.copy_in(addr, data, wake) {
            Ok(()) if wake => {}
            Err(UffdError::AlreadyMapped { .. }) | Ok(()) => {
                steps::lap(Step::Copy);
                if let Err(e) = self.uffd.wake(addr, data.len()) {
                    tier::fatal(&format!("wake: {e}"));
                }
                steps::skip();
            }
            // Two areas (a protection or advice set by a system call the tier does not
            // see split them): a page at a time, each in one area.
            Err(e) if crosses_areas(&e) && data.len() > PAGE => {
                for (k, page) in data.chunks(PAGE).enumerate() {
                    self.fill(addr + k * PAGE, page);
                }
            }
            Err(e) => tier::fatal(&format!("a fault could not be served: {e}")),
        }
    }

    /// Brings the evicted page `page` back from its value or object (which is freed).
    pub fn restore(&self, st: &mut State, page: usize) {
        let addr = self.addr(page);
        let e = st.pages.entry(page);
        match e.kind() {
            SAME => {
                // The word was the value's; it must be empty again for a later store.
                let v = e.handle.swap(0, Ordering::Relaxed) as u64;
                fill_word(&mut st.page, v);
                tier::stats().sub(Field::SameFilledPages, 1);
            }
            STORED => {
                let State { pool, packed, page: out, codec, record, pages, .. } = &mut *st;
                let pool = pool.as_ref().expect("objects are stored only once the pool exists");
                // SAFETY: the handle word is this entry's, at a fixed address, holding the
                // object the eviction stored.
                let n = match unsafe { pool.read_into_raw(&pages.entry(page).handle, packed) } {
                    Ok(n) => n,
                    Err(err) => tier::fatal(&format!("an evicted page could not be read: {err}")),
                };
                steps::lap(Step::Read);
                tier::record(record, |r| r.read(page, n));
                if n == PAGE {
                    out.copy_from_slice(&packed[..PAGE]);
                } else if codec.decompress(&packed[..n], out) != Ok(PAGE) {
                    tier::fatal("an evicted page did not decompress to a page");
                }
                tier::stats().add(Field::DecompressedBytes, PAGE as u64);
                steps::lap(Step::Decompress);
                self.free_object(st, page);
            }
            CACHED => self.take_cached(st, page),
            GROUP => {
                self.restore_group(st, page);
                return;
            }
            INACTIVE => {
                self.bring_back_inactive(st, page);
                return;
            }
            _ => return,
        }
        self.fill(addr, &st.page);
        self.arrive(st, page);
    }

    /// Brings every evicted page back (before a fork, or stepping aside).
    pub fn bring_back_all(&self, st: &mut State) {
        for page in 0..reserve::high_water_pages() {
            if matches!(st.pages.kind(page), SAME | STORED | GROUP | CACHED | INACTIVE) {
                self.restore(st, page);
            }
        }
        if let Some(list) = &mut st.inactive {
            list.settle();
        }
    }

    /// Every page back, the reserve unregistered: the program goes on untiered.
    pub fn step_aside(&self, why: &str) {
        self.state.with(|st| {
            if self.active.load(Ordering::Acquire) {
                self.bring_back_all(st);
                let _ = self.uffd.unregister(reserve::base(), reserve::reserve_len());
                self.active.store(false, Ordering::Release);
                crate::doorbell::silence(&self.uffd);
            }
            tier::stats().set_state(TierState::SteppedAside, why);
        });
    }
}
