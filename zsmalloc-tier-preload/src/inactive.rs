//! The inactive list's work (`--policy lru`): pages moved onto it from the active list, its
//! oldest compressed, a touch moving a page back. The list itself, and its invariants, are
//! `inactive_list.rs`.

use std::time::Instant;

use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::Uffd;

use crate::evict::{self, Moved, Outcome};
use crate::inactive_list::Inactive;
use crate::protection::{self, Leave};
use crate::sys::{self, PAGE};
use crate::tier::{self, State, Tier, INACTIVE};

/// The list's share of the budget: one page in `SHARE`.
pub const SHARE: u64 = 8;

/// A list for a budget of `budget` pages, its area registered with `uffd`.
pub fn new_list(uffd: &Uffd, budget: u64) -> Result<Inactive, String> {
    // Evictions come in batches of up to the slack while the program waits: a list shorter
    // than a batch would see pages demoted and compressed in one, untouched for no fault of
    // theirs.
    let batch = 2 * zsmalloc_tier::slack::deferred_pages(budget);
    let target = (budget / SHARE).max(batch.min(budget / 2)).max(1);
    // Room for the list, its holes and a run beyond: when holes fill the ring, its oldest page
    // leaves early, which is what it would have done next anyway.
    let slots = (2 * target as usize + 2 * crate::batch::RUN).min(u32::MAX as usize - 1);
    let area = evict::new_area(uffd, None, slots * PAGE)
        .map_err(|e| format!("the inactive list's area: {e}"))?;
    Ok(Inactive::new(area, slots, target))
}

/// In a forked child tiered on its own: the list's area mapped afresh and registered with the
/// child's userfaultfd.
pub fn renew_list(list: &mut Inactive, uffd: &Uffd) -> Result<(), String> {
    let (at, len) = list.area();
    list.renew(evict::new_area(uffd, Some(at), len)?);
    Ok(())
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
        if !self.store(st, page, data) {
            return Some(Outcome::PoolFull);
        }
        let list = st.inactive.as_mut().expect("kept");
        list.take(page, slot);
        list.head += 1;
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
