//! Eviction in runs. Under a policy that evicts by arrival, the pages that follow the victim
//! in the reserve and arrived among the next ones to leave (a first touch brings runs of
//! pages in together, and a program fills its memory upwards) leave with it: one
//! `UFFDIO_MOVE` for the run into consecutive staging slots, then each page kept as alone.
//! One move of 16 pages costs about what two of one page do (0.3–0.6 µs a page against 3.2
//! on Linux 6.18, a program's pages moved in a loop), and the evicted set is the policy's:
//! a page joins the run only if its arrival number is within the count still to evict, so
//! the loop would have taken it before stopping anyway.

use std::time::Instant;

use zsmalloc_tier::stats::Field;

use crate::evict::Outcome;
use crate::protection::{self, Leave};
use crate::sys::PAGE;
use crate::tier::{self, State, Tier, RESIDENT};

/// The most pages a run moves at once (a quarter of the staging slots).
pub const RUN: usize = 16;

impl Tier {
    /// The pages after `page` (arrival `seq`) that may leave with it: resident, moved whole,
    /// and among the `remaining` next arrivals. 0 unless the policy evicts by arrival.
    pub(crate) fn followers(&self, st: &State, page: usize, seq: u32, remaining: u64) -> usize {
        if !st.policy.by_arrival() || st.folio.pages > 1 || remaining < 2 {
            return 0;
        }
        let most = (remaining - 1).min(RUN as u64 - 1) as usize;
        let end = crate::reserve::high_water_pages();
        (page + 1..end)
            .take(most)
            .take_while(|&q| {
                let e = st.pages.entry(q);
                e.kind() == RESIDENT
                    && protection::of(q).leave() == Leave::Move
                    && u64::from(e.seq().wrapping_sub(seq)) < remaining
            })
            .count()
    }

    /// Evicts the victim `page` (arrival `seq`) with its followers in one move, when it has
    /// any and the run moved; false otherwise (the victim then leaves alone, as ever).
    pub(crate) fn evict_run(
        &self,
        st: &mut State,
        page: usize,
        seq: u32,
        remaining: u64,
        t0: Instant,
    ) -> bool {
        if protection::of(page).leave() != Leave::Move {
            return false;
        }
        let n = 1 + self.followers(st, page, seq, remaining);
        if n == 1 {
            return false;
        }
        let slots = self.slots(st, n);
        let addr = self.addr(page);
        // SAFETY: the run's pages are the program's, resident (their entries say so, under the
        // lock), reached by the program through raw pointers only; the slots are holes.
        let moved = match unsafe { self.uffd.move_pages(slots, addr, n * PAGE) } {
            Ok(()) => n,
            // Stopped at a page it could not move (shared since a fork, say): the pages before
            // it left; the rest stay, and leave one at a time later.
            Err(_) => (0..n)
                .take_while(|&i| {
                    crate::evict::moved_all_the_same(slots + i * PAGE, addr + i * PAGE)
                })
                .count(),
        };
        if moved == 0 {
            return false;
        }
        let mut left = 0u64;
        for i in 0..moved {
            if st.pool_full {
                // The pool refused a page before this one: back in place, eviction paused.
                // SAFETY: slot `i` holds the page moved there; the tier alone maps it.
                let data =
                    unsafe { std::slice::from_raw_parts((slots + i * PAGE) as *const u8, PAGE) };
                self.put_back(addr + i * PAGE, data);
                continue;
            }
            match self.keep(st, page + i, slots + i * PAGE) {
                Outcome::Evicted => left += 1,
                _ => {
                    tier::stats().add(Field::PoolFullStops, 1);
                    st.pool_full = true;
                    if i == 0 {
                        st.policy.refused(page as u32, seq);
                    }
                }
            }
        }
        let w = tier::stats();
        w.add(Field::Evictions, left);
        // The run's time shared among its pages.
        let each = t0.elapsed().as_nanos() as u64 / left.max(1);
        for _ in 0..left {
            w.eviction(each);
        }
        true
    }
}
