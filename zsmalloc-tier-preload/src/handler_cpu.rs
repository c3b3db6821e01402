//! The handler thread's CPU time, for the report beside the program's: the handler stores its
//! own (`CLOCK_THREAD_CPUTIME_ID`) each time it goes to sleep and when it stops, and the exit
//! reads it once more through the thread's clock. A process killed, or one that executes
//! another program, keeps what was stored at the handler's last sleep.

use std::sync::atomic::{AtomicI32, Ordering};

use zsmalloc_tier::stats::Field;

use crate::tier;

/// The handler's thread id (0: none started in this process).
static TID: AtomicI32 = AtomicI32::new(0);

/// Called on the handler thread as it begins.
pub fn begins() {
    // SAFETY: gettid has no preconditions.
    TID.store(unsafe { libc::gettid() }, Ordering::Relaxed);
}

/// Called on the handler thread before it sleeps and as it stops.
pub fn store() {
    if let Some(ns) = cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID) {
        tier::stats().raise(Field::HandlerCpuNs, ns);
    }
}

/// At the program's exit, on the exiting thread: the handler's time read through its clock.
pub fn at_exit() {
    let tid = TID.load(Ordering::Relaxed);
    if tid == 0 {
        return;
    }
    // The kernel's clock id of a thread's CPU time (MAKE_THREAD_CPUCLOCK: the tid inverted,
    // CPUCLOCK_PERTHREAD_MASK 4, CPUCLOCK_SCHED 2). The kernel answers only for a thread of
    // this process, so a handler gone (stepped aside) or a forked child's copy of the tid
    // reads nothing.
    let clock = (!(tid as libc::clockid_t) << 3) | 4 | 2;
    if let Some(ns) = cpu_ns(clock) {
        tier::stats().raise(Field::HandlerCpuNs, ns);
    }
}

fn cpu_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec passed; an unknown clock is an error.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}
