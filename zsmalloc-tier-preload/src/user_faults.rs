//! `--user-faults-only`: the userfaultfd takes only the faults of the program's own
//! instructions, so a system call that reads or writes a hole of the reserve fails with
//! `EFAULT` instead of waiting for the handler. The holes are kept to the evicted pages: every
//! page the heap lends (a block or mapping handed out, or pages emptied by `madvise` or a
//! `MAP_FIXED` mapping while still the program's) is mapped at once as the zero page (`UFFDIO_ZEROPAGE`: no memory until written,
//! and a write, by the program or a system call, is the kernel's copy-on-write, no userfault)
//! and counted resident from then on, as a first touch would count it. So a `read(2)` into
//! fresh memory works; into a page evicted since, it fails. Resident pages then include zero
//! pages that hold no memory: the budget holds all the more.

use std::sync::atomic::{AtomicUsize, Ordering};

use zsmalloc_tier::uffd::{Modes, Uffd, UffdError};

use crate::serve::FAULT_AROUND;
use crate::sys::{self, PAGE};
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
                st.resident > st.budget
            }
        });
        if over {
            ring();
        }
    }
}

/// A page of the tier's own, registered with its userfaultfd and kept a hole: a program
/// thread reads it to have the handler evict (the fault wakes it, and waits until it is done).
static DOORBELL: AtomicUsize = AtomicUsize::new(0);

/// Makes the doorbell (under `--user-faults-only` only).
pub fn make_doorbell(uffd: &Uffd) -> Result<(), String> {
    if !crate::modes::USER_FAULTS_ONLY.load(Ordering::Relaxed) {
        return Ok(());
    }
    // SAFETY: a private anonymous page of the tier's own; it aliases nothing.
    let p = unsafe {
        sys::mmap(
            0,
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("the doorbell page: {}", std::io::Error::last_os_error()));
    }
    uffd.register(p as usize, PAGE, Modes::MISSING).map_err(|e| format!("the doorbell: {e}"))?;
    DOORBELL.store(p as usize, Ordering::Release);
    Ok(())
}

/// In a forked child: the doorbell registered with the child's userfaultfd, and a hole.
pub fn doorbell_in_child(uffd: &Uffd) -> Result<(), String> {
    let at = DOORBELL.load(Ordering::Acquire);
    if at == 0 {
        return Ok(());
    }
    // SAFETY: the doorbell, the tier's own page; emptied, it is a hole again.
    unsafe { sys::madvise(at, PAGE, libc::MADV_DONTNEED) };
    uffd.register(at, PAGE, Modes::MISSING).map_err(|e| format!("the doorbell: {e}"))
}

pub fn is_doorbell(page: usize) -> bool {
    page != 0 && page == DOORBELL.load(Ordering::Relaxed)
}

/// Rings: the read faults, the handler evicts and answers, then the page is made a hole
/// again for the next ring (a thread that finds it mapped meanwhile goes on: the ring it would
/// make was just answered).
fn ring() {
    let at = DOORBELL.load(Ordering::Acquire);
    if at == 0 {
        return;
    }
    // SAFETY: a read of the doorbell, a live page of the tier's own (a hole or a zero page).
    unsafe { std::ptr::read_volatile(at as *const u8) };
    // SAFETY: as above; the advice empties the tier's own page.
    unsafe { sys::madvise(at, PAGE, libc::MADV_DONTNEED) };
}

/// The handler's answer to a ring: eviction down to the budget, then the doorbell mapped
/// (which wakes the ringers).
pub fn answer(t: &Tier) {
    t.state.with(|st| t.evict_over_budget(st));
    let at = DOORBELL.load(Ordering::Relaxed);
    match t.uffd.zeropage(at, PAGE) {
        Ok(()) => {}
        Err(UffdError::AlreadyMapped { .. }) => {
            if let Err(e) = t.uffd.wake(at, PAGE) {
                tier::fatal(&format!("the doorbell's wake: {e}"));
            }
        }
        Err(e) => tier::fatal(&format!("the doorbell could not be answered: {e}")),
    }
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
        if t.entry(st, p).kind() != EMPTY {
            p += 1;
            continue;
        }
        let run = p;
        while p < end && t.entry(st, p).kind() == EMPTY {
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
