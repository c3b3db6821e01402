//! `--user-faults-only`: the userfaultfd takes only the faults of the program's own
//! instructions, so a system call that reads or writes a hole of the reserve fails with
//! `EFAULT` instead of waiting for the handler. The holes are kept to the evicted pages: every
//! page the heap lends (a block or mapping handed out, or pages emptied by `madvise` or a
//! `MAP_FIXED` mapping while still the program's) is mapped at once as the zero page (`UFFDIO_ZEROPAGE`: no memory until written,
//! and a write, by the program or a system call, is the kernel's copy-on-write, no userfault)
//! and counted resident from then on, as a first touch would count it. So a `read(2)` into
//! fresh memory works; into a page evicted since, it fails. Resident pages then include zero
//! pages that hold no memory: the budget holds all the more.

use std::sync::atomic::Ordering;

use zsmalloc_tier::uffd::UffdError;

use crate::serve::FAULT_AROUND;
use crate::sys::PAGE;
use crate::tier::{self, State, Tier, EMPTY, TIER};

fn on() -> bool {
    crate::modes::USER_FAULTS_ONLY.load(Ordering::Relaxed)
        && !tier::IN_CHILD.load(Ordering::Relaxed)
}

/// The pages of `[addr, addr + len)` (page-aligned, in the reserve), emptied and still the
/// program's: lent again.
pub fn lend_range(addr: usize, len: usize) {
    let first = (addr - crate::reserve::base()) / PAGE;
    lend(first, (first + len / PAGE).min(crate::reserve::high_water_pages()));
}

/// Pages `[first, end)` of the reserve were handed out (the heap's lock held): their
/// untouched ones mapped as zero pages, 16 at a time, and over the budget the handler rung to
/// evict (the thread waits for it). A program thread never evicts itself: the pool's code reaches its
/// thread-local data through the loader, which may read the program's memory (a thread's TLS
/// vector is malloc'd) and so fault while the state's lock is held.
pub fn lend(first: usize, end: usize) {
    if !on() {
        return;
    }
    let Some(t) = TIER.get() else { return };
    // By a first touch's pages at most, so that the budget is exceeded by no more than a
    // fault would exceed it.
    for at in (first..end).step_by(FAULT_AROUND) {
        let over = t.with_state(|st| {
            t.active.load(Ordering::Acquire) && {
                map_untouched(t, st, at, (at + FAULT_AROUND).min(end));
                st.pages.over_budget()
            }
        });
        if over {
            crate::doorbell::ring();
        }
    }
}

/// An untouched page the program may read and write (a reservation's pages are lent when the
/// program opens them).
fn lendable(st: &State, page: usize) -> bool {
    st.pages.kind(page) == EMPTY && crate::protection::of(page) == crate::protection::Prot::PLAIN
}

/// Maps the untouched pages of `[first, end)` as the zero page, each arriving (the state's
/// lock held, the tier active); nothing is evicted here. A run that cannot be mapped stays
/// holes: a first touch by the program serves them as before. False when
/// `--user-faults-only` is not in force.
pub fn map_untouched(t: &Tier, st: &mut State, first: usize, end: usize) -> bool {
    if !on() {
        return false;
    }
    let mut p = first;
    while p < end {
        if !lendable(st, p) {
            p += 1;
            continue;
        }
        let run = p;
        while p < end && lendable(st, p) {
            p += 1;
        }
        match t.uffd.zeropage(t.addr(run), (p - run) * PAGE) {
            Ok(()) => (run..p).for_each(|q| t.arrive(st, q)),
            // Some page of the run is there already: page by page, each there counted.
            Err(UffdError::AlreadyMapped { .. }) => {
                for q in run..p {
                    match t.uffd.zeropage(t.addr(q), PAGE) {
                        Ok(()) | Err(UffdError::AlreadyMapped { .. }) => t.arrive(st, q),
                        Err(_) => {}
                    }
                }
            }
            Err(_) => {}
        }
    }
    true
}
