//! When eviction runs. The handler shares its CPU with the program's threads (on a machine
//! with one free CPU, or pinned), so an eviction made right after a fault is served delays the
//! next thing the program waits for: the woken thread's next fault finds the handler
//! compressing. So a fault evicts nothing until the resident pages exceed the budget by the
//! slack; the handler evicts one page at a time while no fault is pending, reading the
//! userfaultfd between two, and a fault that finds the slack used up evicts down to the budget
//! at once, so that a program faulting without pause pays for its evictions in one fault of
//! every slack's worth rather than in each (`zsmalloc_tier::slack`).

use zsmalloc_tier::slack::deferred_pages;

use crate::tier::{State, Tier};

impl Tier {
    /// After a fault is served: down to the budget once the slack is used up.
    pub fn evict_after_fault(&self, st: &mut State) {
        if st.pages.excess() > deferred_pages(st.pages.budget()) {
            self.evict_over_budget(st);
        }
    }

    /// No fault is pending: one page evicted if the resident ones exceed the budget. False when
    /// nothing was (within the budget, eviction paused, or no page could be moved).
    pub fn evict_while_idle(&self, st: &mut State) -> bool {
        if !st.pages.over_budget() || st.paused || st.pool_full {
            return false;
        }
        let before = st.pages.evictable();
        self.evict_down_to(st, before - 1);
        st.pages.evictable() < before
    }
}
