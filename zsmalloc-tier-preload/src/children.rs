//! `--follow-children`: the programs a tiered program executes keep the library and the tier's
//! variables, so each starts tiered on its own; a child it forks is tiered too, from the
//! fork on: every page is resident then (the parent brought them all back), so the child
//! opens its own userfaultfd in place of the parent's (the registration is not inherited),
//! registers the reserve and a staging area of its own, keeps the page table, arrival order
//! and pool it inherited (they describe its memory exactly: no object is stored at a fork),
//! and starts its own handler thread, which evicts down to the budget. Each process has its
//! own block of the stats file, claimed by a compare-and-swap of its pid word.

use std::sync::atomic::Ordering;

use zsmalloc_tier::stats::{Field, State as TierState};
use zsmalloc_tier::uffd::{Modes, Uffd, Wait};

use crate::reserve;
use crate::tier::{self, Tier};
use crate::{evict, handler, sys};

/// In a forked child (one thread, the forking one; the tier's state as the parent's `prepare`
/// left it: every page resident, eviction paused, the lock released): the child tiered on its
/// own: false when it could not be (nothing is registered then, and the child runs untiered,
/// its pages all there; its block, if it has one, says why).
pub fn tier_the_child(t: &'static Tier) -> bool {
    let Some(block) = crate::figures::claim_block() else { return false };
    tier::use_block(block);
    match start_in_child(t) {
        Ok(()) => true,
        Err(why) => {
            tier::stats().set_state(TierState::SteppedAside, &why);
            false
        }
    }
}

fn start_in_child(t: &'static Tier) -> Result<(), String> {
    let fresh = Uffd::open_for(Wait::NonBlocking, t.features, crate::modes::faults())
        .map_err(|e| format!("the child's userfaultfd: {e}"))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&fresh));
    // The tier's descriptor number is kept (the program may not close it), and made the
    // child's own userfaultfd; the parent's, which names the parent's memory, is closed in
    // the child by the same call.
    // SAFETY: dup3 of two live descriptors of this process; `fresh` closes its own number.
    if unsafe { libc::dup3(fd, t.fd, libc::O_CLOEXEC) } < 0 {
        return Err(format!("dup3: {}", std::io::Error::last_os_error()));
    }
    drop(fresh);
    t.wakeup.renew().map_err(|e| format!("the child's wake-up: {e}"))?;
    t.with_state(|st| {
        st.policy.in_child()?;
        // The fork left the child's pages unprotected: the clock sees them all as written once.
        let modes = if t.protect { Modes::MISSING_AND_WP } else { Modes::MISSING };
        t.uffd
            .register(reserve::base(), reserve::reserve_len(), modes)
            .map_err(|e| format!("the child's registration: {e}"))?;
        match evict::new_staging(&t.uffd, Some(st.staging)) {
            Ok(at) => st.staging = at,
            Err(e) => {
                let _ = t.uffd.unregister(reserve::base(), reserve::reserve_len());
                return Err(format!("the child's staging area: {e}"));
            }
        }
        st.staging_used = 0;
        if let Some(list) = &mut st.inactive {
            if let Err(e) = crate::inactive::renew_list(list, &t.uffd) {
                let _ = t.uffd.unregister(reserve::base(), reserve::reserve_len());
                return Err(format!("the child's inactive list: {e}"));
            }
        }
        st.paused = false;
        // The pages never touched are holes in the child too.
        crate::user_faults::map_untouched(t, st, 0, reserve::high_water_pages());
        crate::doorbell::in_child(&t.uffd)?;
        // The trace is the parent's (written before the fork): the child records nothing.
        st.record = None;
        crate::own_fds::release(crate::own_fds::Own::Record);
        crate::own_fds::keep(crate::own_fds::Own::Uffd, t.fd);
        let w = tier::stats();
        w.set(Field::BudgetPages, st.pages.budget());
        st.pages.publish();
        if let Some(pool) = &st.pool {
            let pages = zsmalloc_core::Backend::total_pages(pool);
            w.set(Field::PoolPages, pages);
            w.raise(Field::MaxPoolPages, pages);
        }
        t.active.store(true, Ordering::Release);
        w.set_state(TierState::Tiering, "");
        Ok::<(), String>(())
    })?;
    sys::unmark_handler();
    if let Err(why) = handler::spawn() {
        t.with_state(|_| {
            let _ = t.uffd.unregister(reserve::base(), reserve::reserve_len());
            t.active.store(false, Ordering::Release);
        });
        return Err(why);
    }
    Ok(())
}
