//! The doorbell: a page of the tier's own, registered with its userfaultfd and kept a hole. A
//! program thread reads it to have the handler do what the thread may not do itself, and the
//! fault holds the thread until the handler has done it:
//!
//! - under `--user-faults-only`, evict (`user_faults.rs`: program threads never evict);
//! - before the program names one of the tier's descriptors in `dup2` or `dup3` (which would
//!   close it), step aside: every page back, nothing registered, the handler stopped, the trace
//!   written and closed (`interpose.rs`); the same before the program's `mlockall`
//!   (`interpose_protection.rs`);
//! - before a fork, bring every page back and pause eviction (`fork.rs`). That reads pool
//!   objects, and the pool's code reaches its thread-local data through the loader, which reads
//!   the thread's vector of it: glibc allocates that vector for every thread but the first with
//!   the program's `calloc`, so it is tiered memory, and may be evicted. A thread that faulted on
//!   it while holding the state's lock would wait for the handler, and the handler for the lock.
//!
//! Program threads otherwise run no pool code but frees (`Tier::free_object`), which touch no
//! thread-local data.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::{Modes, Uffd, UffdError};

use crate::sys::{self, PAGE};
use crate::tier::{self, Tier};

static DOORBELL: AtomicUsize = AtomicUsize::new(0);

/// A fork asks for every page back and eviction paused (one fork at a time: the heap's lock is
/// held from the ask to the fork's end).
static BRING_BACK_ASKED: AtomicBool = AtomicBool::new(false);

/// The handler has stopped (it stepped aside): it touches none of the tier's descriptors again.
pub static HANDLER_STOPPED: AtomicBool = AtomicBool::new(false);

/// Why the handler is asked to step aside: the descriptor a program's `dup2` or `dup3` is
/// about to replace (0 and above), [`LOCK_ALL`], or -1: not asked.
static STEP_ASIDE_FOR: AtomicI32 = AtomicI32::new(-1);
const LOCK_ALL: i32 = -2;

/// Why the program has the tier step aside.
#[derive(Clone, Copy)]
pub enum Aside {
    /// Its `dup2` or `dup3` names this descriptor of the tier's.
    Replacing(i32),
    /// Its `mlockall`.
    LockAll,
}

/// Makes the doorbell.
pub fn make(uffd: &Uffd) -> Result<(), String> {
    let p = sys::own_memory(PAGE)
        .ok_or_else(|| format!("the doorbell page: {}", std::io::Error::last_os_error()))?;
    uffd.register(p, PAGE, Modes::MISSING).map_err(|e| format!("the doorbell: {e}"))?;
    DOORBELL.store(p, Ordering::Release);
    Ok(())
}

/// In a forked child: the doorbell registered with the child's userfaultfd, and a hole.
pub fn in_child(uffd: &Uffd) -> Result<(), String> {
    let at = DOORBELL.load(Ordering::Acquire);
    if at == 0 {
        return Ok(());
    }
    // SAFETY: the doorbell, the tier's own page; emptied, it is a hole again.
    unsafe { sys::madvise(at, PAGE, libc::MADV_DONTNEED) };
    uffd.register(at, PAGE, Modes::MISSING).map_err(|e| format!("the doorbell: {e}"))
}

/// The handler stops: the doorbell unregistered, which wakes its ringers (their read then
/// finds an ordinary page).
pub fn silence(uffd: &Uffd) {
    let at = DOORBELL.load(Ordering::Acquire);
    if at != 0 {
        let _ = uffd.unregister(at, PAGE);
    }
}

pub fn is_doorbell(page: usize) -> bool {
    page != 0 && page == DOORBELL.load(Ordering::Relaxed)
}

/// Rings: the read faults, the handler answers, then the page is made a hole again for the
/// next ring (a thread that finds it mapped meanwhile goes on: the ring it would make was just
/// answered).
pub fn ring() {
    let at = DOORBELL.load(Ordering::Acquire);
    if at == 0 {
        return;
    }
    // SAFETY: a read of the doorbell, a live page of the tier's own (a hole or a zero page).
    unsafe { std::ptr::read_volatile(at as *const u8) };
    // SAFETY: as above; the advice empties the tier's own page.
    unsafe { sys::madvise(at, PAGE, libc::MADV_DONTNEED) };
}

/// For a fork (the heap's lock held, not the state's): every page back and eviction paused,
/// by the handler. Returns once it is done, or once the tier is no longer active (it stepped
/// aside, which brought every page back).
pub fn bring_back_for_fork(t: &Tier) {
    BRING_BACK_ASKED.store(true, Ordering::Release);
    while BRING_BACK_ASKED.load(Ordering::Acquire) && t.active.load(Ordering::Acquire) {
        ring();
    }
    BRING_BACK_ASKED.store(false, Ordering::Release);
}

/// For a `dup2` or `dup3` onto a descriptor of the tier's, or an `mlockall` (the heap's lock
/// not held): the tier steps aside, by the handler, which then stops. Returns once the handler
/// has stopped (at once if it had).
pub fn step_aside_for(t: &Tier, why: Aside) {
    let code = match why {
        Aside::Replacing(fd) => fd,
        Aside::LockAll => LOCK_ALL,
    };
    let _ = STEP_ASIDE_FOR.compare_exchange(-1, code, Ordering::AcqRel, Ordering::Acquire);
    while !HANDLER_STOPPED.load(Ordering::Acquire) {
        if t.active.load(Ordering::Acquire) {
            ring();
        } else {
            // Stepped aside: the handler is on its way out.
            std::thread::yield_now();
        }
    }
}

/// The handler's answer to a ring: what was asked, then eviction down to the budget (paused
/// for a fork), then the doorbell mapped (which wakes the ringers). False when the handler is
/// to stop (it stepped aside).
pub fn answer(t: &Tier) -> bool {
    let code = STEP_ASIDE_FOR.load(Ordering::Acquire);
    if code != -1 {
        t.step_aside(&if code == LOCK_ALL {
            "the program locked all its memory (mlockall): every page was brought back, and \
             the program ran on untiered"
                .to_string()
        } else {
            format!(
                "the program named the tier's descriptor {code} in dup2 or dup3, which would \
                 have closed it: every page was brought back, and the program ran on untiered"
            )
        });
        // The trace is whole: written out, and its descriptor left to the program.
        t.state.with(|st| {
            tier::record(&mut st.record, crate::record::Recorder::flush);
            st.record = None;
        });
        return false;
    }
    t.state.with(|st| {
        if BRING_BACK_ASKED.load(Ordering::Acquire) {
            t.bring_back_all(st);
            st.paused = true;
            tier::stats().add(Field::Forks, 1);
            BRING_BACK_ASKED.store(false, Ordering::Release);
        }
        t.evict_over_budget(st);
    });
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
    true
}
