//! The inactive list (`--policy lru`), as the kernel keeps one. The tier sees faults, not
//! accesses: a page in the program's memory is touched without its knowing. So the oldest
//! pages (the policy's victims) first leave the program's memory uncompressed, moved
//! (`UFFDIO_MOVE`, in runs) into the list's area of the tier's own: a touch there faults, and
//! the fault moves the page straight back (a refault: no pool read, no decompression), where
//! it arrives anew, as the kernel's accessed bit promotes a page from its inactive list. The
//! list's oldest page, untouched through the list's length, is the one compressed into the
//! pool. A page on the list is memory the tier holds for the program: the budget counts it.
//!
//! The list takes an eighth of the budget ([`SHARE`]; under small budgets, twice the slack's batch
//! of evictions, at most half the budget), and is filled only when something must be
//! evicted: a program whose pages fit the budget never sees it. The kernel's list is as long as
//! its active one for anonymous memory under a gigabyte, but a touch there costs it nothing
//! (the accessed bit), where here it costs a fault and a move: with half the budget the list
//! caught more (fewer pages compressed) and cost more in refaults than it saved (docs/TIER.md,
//! "Policy").
//!
//! Invariants, under the tier's lock:
//!
//! - a page is on the list if and only if its entry is [`INACTIVE`]; the entry's slot number
//!   names the ring slot holding the page's number, and the list area's page of that slot holds
//!   its bytes (the program's page is a hole);
//! - ring positions `[head, tail)` are the list, oldest first, with [`HOLE`] where a page left
//!   (touched, or forgotten); `len` counts the others;
//! - positions `[dropped, head)` have left the ring but their slots may still hold pages until
//!   [`Inactive::flush`] drops them; `tail - dropped <= slots`, so the slot at `tail` is always
//!   a hole (an `UFFDIO_MOVE` destination must be);
//! - outside the eviction loop, `dropped == head`.

use std::time::Instant;

use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::Uffd;

use crate::evict::{self, Moved, Outcome};
use crate::protection::{self, Leave};
use crate::sys::{self, PAGE};
use crate::tier::{self, State, Tier, INACTIVE};

/// The list's share of the budget: one page in `SHARE`.
pub const SHARE: u64 = 8;
/// A ring position without a page.
const HOLE: u32 = u32::MAX;

pub struct Inactive {
    /// The list's area: `slots` pages of the tier's own, registered with the userfaultfd (a move
    /// must land in registered memory).
    area: usize,
    slots: usize,
    /// The page in each slot, [`HOLE`] for none.
    ring: Vec<u32>,
    head: u64,
    tail: u64,
    dropped: u64,
    len: u64,
    /// The pages the list holds when it is full.
    target: u64,
}

impl Inactive {
    /// A list for a budget of `budget` pages, its area registered with `uffd`.
    pub fn new(uffd: &Uffd, budget: u64) -> Result<Inactive, String> {
        // Evictions come in batches of up to the slack while the program waits: a list shorter
        // than a batch would see pages demoted and compressed in one, untouched for no fault of
        // theirs.
        let batch = 2 * zsmalloc_tier::slack::deferred_pages(budget);
        let target = (budget / SHARE).max(batch.min(budget / 2)).max(1);
        // Room for the list, its holes and a run beyond: when holes fill the ring, its oldest
        // page leaves early, which is what it would have done next anyway.
        let slots = (2 * target as usize + 2 * crate::batch::RUN).min(u32::MAX as usize - 1);
        let area = evict::new_area(uffd, None, slots * PAGE)
            .map_err(|e| format!("the inactive list's area: {e}"))?;
        Ok(Inactive {
            area,
            slots,
            ring: vec![HOLE; slots],
            head: 0,
            tail: 0,
            dropped: 0,
            len: 0,
            target,
        })
    }

    /// In a forked child tiered on its own: the area mapped afresh (the list is empty at a
    /// fork) and registered with the child's userfaultfd.
    pub fn renew(&mut self, uffd: &Uffd) -> Result<(), String> {
        self.area = evict::new_area(uffd, Some(self.area), self.slots * PAGE)?;
        self.ring.fill(HOLE);
        (self.head, self.tail, self.dropped, self.len) = (0, 0, 0, 0);
        Ok(())
    }

    fn slot(&self, pos: u64) -> usize {
        (pos % self.slots as u64) as usize
    }

    fn addr(&self, slot: usize) -> usize {
        self.area + slot * PAGE
    }

    /// Consecutive free slots from the tail before the ring's end, at most `n`.
    fn run_room(&self, n: usize) -> usize {
        n.min(self.slots - self.slot(self.tail))
    }

    /// Moves the head past the holes.
    fn skip_holes(&mut self) {
        while self.head < self.tail && self.ring[self.slot(self.head)] == HOLE {
            self.head += 1;
        }
    }

    /// The oldest page and its slot, if any.
    fn oldest(&mut self) -> Option<(usize, usize)> {
        self.skip_holes();
        (self.head < self.tail).then(|| {
            let slot = self.slot(self.head);
            (self.ring[slot] as usize, slot)
        })
    }

    /// Takes page `page` off the list from `slot` (it left, or is leaving).
    fn take(&mut self, page: usize, slot: usize) {
        assert_eq!(self.ring[slot], page as u32, "page {page} is not in slot {slot}");
        self.ring[slot] = HOLE;
        self.len -= 1;
        tier::stats().set(Field::InactivePages, self.len);
    }

    /// The list emptied of its holes and their slots dropped (after every page was brought
    /// back).
    pub fn settle(&mut self) {
        self.skip_holes();
        self.flush();
    }

    /// Drops the slots of the positions that left the ring (their pages were stored, or
    /// brought back by a copy).
    pub fn flush(&mut self) {
        while self.dropped < self.head {
            let first = self.slot(self.dropped);
            let n = (self.head - self.dropped).min((self.slots - first) as u64) as usize;
            // SAFETY: slots of the list's area, the tier's own memory, whose pages were stored
            // (or copied back) and are no longer needed.
            unsafe { sys::madvise(self.addr(first), n * PAGE, libc::MADV_DONTNEED) };
            self.dropped += n as u64;
        }
    }
}

/// What demoting the active list's oldest page gave.
enum Demoted {
    /// This many pages moved onto the list.
    Moved,
    /// The page could not leave (shared or pinned): it stays, tried again later.
    Stays,
    /// No victim, or a stale one.
    Nothing,
}

impl Tier {
    /// Evicts until `target` pages that may leave are resident, through the list: the list
    /// kept at its length from the active list's oldest, its own oldest compressed. Stops as
    /// `evict_down_to` does.
    pub(crate) fn evict_through_list(&self, st: &mut State, target: u64) {
        let mut skipped = 0;
        while st.pages.evictable() > target && !st.paused && !st.pool_full && skipped < 64 {
            let list = st.inactive.as_ref().expect("a policy that keeps an inactive list");
            if list.len < list.target {
                let remaining = list.target - list.len;
                match self.demote(st, remaining) {
                    Demoted::Moved => continue,
                    Demoted::Stays => {
                        skipped += 1;
                        continue;
                    }
                    Demoted::Nothing => {}
                }
            }
            let t0 = Instant::now();
            match self.evict_oldest(st) {
                Some(Outcome::Evicted) => {
                    let w = tier::stats();
                    w.add(Field::Evictions, 1);
                    w.eviction(t0.elapsed().as_nanos() as u64);
                }
                Some(_) => {
                    tier::stats().add(Field::PoolFullStops, 1);
                    st.pool_full = true;
                }
                None => break,
            }
        }
        st.inactive.as_mut().expect("kept").flush();
        let State { policy, pages, .. } = &mut *st;
        policy.compact(pages.resident(), &|p, s| pages.is_victim(p, s));
    }

    /// The list's oldest page compressed into the pool (or kept as a same-filled value); it
    /// stays the oldest when the pool refuses it. `None` when the list is empty.
    fn evict_oldest(&self, st: &mut State) -> Option<Outcome> {
        let list = st.inactive.as_mut().expect("kept");
        let (page, slot) = list.oldest()?;
        let at = list.addr(slot);
        // SAFETY: the slot holds the page (the list's invariant); the tier alone maps it.
        let data = unsafe { std::slice::from_raw_parts(at as *const u8, PAGE) };
        let list = st.inactive.as_mut().expect("kept");
        list.take(page, slot);
        if !self.store(st, page, data) {
            // Back on the list, as its oldest.
            let list = st.inactive.as_mut().expect("kept");
            list.ring[slot] = page as u32;
            list.len += 1;
            tier::stats().set(Field::InactivePages, list.len);
            return Some(Outcome::PoolFull);
        }
        st.inactive.as_mut().expect("kept").head += 1;
        Some(Outcome::Evicted)
    }

    /// Moves the active list's oldest page onto the list, with the pages after it that arrived
    /// among the next `remaining` (one move for the run, `batch.rs`).
    fn demote(&self, st: &mut State, remaining: u64) -> Demoted {
        let State { policy, pages, .. } = &mut *st;
        let Some((victim, seq)) = policy.next_victim(&|p, s| pages.is_victim(p, s)) else {
            return Demoted::Nothing;
        };
        let page = victim as usize;
        let leave = protection::of(page).leave();
        let run =
            if leave == Leave::Move { 1 + self.followers(st, page, seq, remaining) } else { 1 };
        let n = st.inactive.as_ref().expect("kept").run_room(run);
        self.make_room(st, n);
        let list = st.inactive.as_ref().expect("kept");
        let first = list.slot(list.tail);
        let at = list.addr(first);
        let t0 = Instant::now();
        let moved = if n > 1 {
            // SAFETY: the run's pages are the program's, resident (their entries say so, under
            // the lock), reached by the program through raw pointers only; the slots are holes.
            match unsafe { self.uffd.move_pages(at, self.addr(page), n * PAGE) } {
                Ok(()) => n,
                Err(_) => (0..n)
                    .take_while(|&i| evict::moved_all_the_same(at + i * PAGE, self.addr(page + i)))
                    .count(),
            }
        } else {
            0
        };
        let moved = if moved > 0 {
            moved
        } else {
            match self.move_out(at, page) {
                Moved::Out => 1,
                Moved::Stays => {
                    st.policy.kept(victim, seq);
                    return Demoted::Stays;
                }
                Moved::Gone => {
                    self.forget_gone(st, page);
                    return Demoted::Nothing;
                }
            }
        };
        let list = st.inactive.as_mut().expect("kept");
        for i in 0..moved {
            list.ring[first + i] = (page + i) as u32;
        }
        list.tail += moved as u64;
        list.len += moved as u64;
        let len = list.len;
        for i in 0..moved {
            st.pages.set(page + i, tier::info(INACTIVE, 0, (first + i) as u32));
        }
        let w = tier::stats();
        w.add(Field::Demotions, moved as u64);
        w.add(Field::DemoteNs, t0.elapsed().as_nanos() as u64);
        w.set(Field::InactivePages, len);
        w.raise(Field::PeakInactivePages, len);
        Demoted::Moved
    }

    /// Makes the `n` slots from the tail holes: the slots that left the ring dropped, and when
    /// holes have filled the ring, its oldest pages evicted early.
    fn make_room(&self, st: &mut State, n: usize) {
        loop {
            let list = st.inactive.as_mut().expect("kept");
            if list.tail + n as u64 <= list.dropped + list.slots as u64 {
                return;
            }
            list.flush();
            if list.tail + n as u64 <= list.dropped + list.slots as u64 {
                return;
            }
            list.skip_holes();
            match self.evict_oldest(st) {
                Some(Outcome::Evicted) => tier::stats().add(Field::Evictions, 1),
                // Refused by the pool: stored whole in place instead is not possible, so the
                // page goes back to the program, where it arrives anew.
                Some(_) => {
                    let list = st.inactive.as_mut().expect("kept");
                    let (page, _) = list.oldest().expect("refused, so still there");
                    self.bring_back_inactive(st, page);
                }
                None => {}
            }
        }
    }

    /// Brings page `page` back from the list into the program's memory, where it arrives anew:
    /// moved back when its protection lets it move, else copied (and its slot dropped when the
    /// list's head passes it).
    pub(crate) fn bring_back_inactive(&self, st: &mut State, page: usize) {
        let list = st.inactive.as_mut().expect("a page on the list");
        let slot = st.pages.entry(page).seq() as usize;
        list.take(page, slot);
        let (from, to) = (list.addr(slot), self.addr(page));
        if protection::of(page).leave() == Leave::Move {
            // SAFETY: the slot holds the page (the list's invariant), the tier's own; the
            // program's page is a hole whose touch waits on this handler.
            if let Err(e) = unsafe { self.uffd.move_pages(to, from, PAGE) } {
                tier::fatal(&format!("a page of the inactive list could not be moved back: {e}"));
            }
            if let Err(e) = self.uffd.wake(to, PAGE) {
                tier::fatal(&format!("wake: {e}"));
            }
        } else {
            // SAFETY: as above; the bytes are read, not moved (the program's area cannot take
            // a move: read-only, locked...).
            let data = unsafe { std::slice::from_raw_parts(from as *const u8, PAGE) };
            self.fill(to, data);
        }
        self.arrive(st, page);
    }

    /// A fault on page `page` of the list: brought back, counted as a refault.
    pub(crate) fn refault(&self, st: &mut State, page: usize) {
        self.bring_back_inactive(st, page);
        tier::stats().add(Field::InactiveRefaults, 1);
    }

    /// Page `page` of the list forgotten (the program gave it back): its slot dropped now.
    pub(crate) fn drop_inactive(&self, st: &mut State, page: usize) {
        let list = st.inactive.as_mut().expect("a page on the list");
        let slot = st.pages.entry(page).seq() as usize;
        list.take(page, slot);
        // SAFETY: a slot of the list's area, the tier's own; its page is no longer needed.
        unsafe { sys::madvise(list.addr(slot), PAGE, libc::MADV_DONTNEED) };
    }
}
