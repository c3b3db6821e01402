//! SIGINT, SIGTERM and SIGHUP: the one handler every command shares. A process that ends on one
//! of them leaves no output half-written and no zram device behind, and ends as the signal
//! would have ended it.
//!
//! [`install`] sets the handler (once; every command's `main` does, and so does the first
//! output file or device made). The handler, in this order:
//!
//! 1. unlinks every temporary output file registered ([`temps`]: the partial files of
//!    [`crate::atomic_file`]), so an interrupted command leaves no partial output and an
//!    existing output untouched;
//! 2. runs the cleanups other modules registered with [`on_signal_also`] — the removal of the
//!    process's live zram devices (`kernel::device`'s part, which keeps its own invariants: its
//!    module documentation). Registered, not called by name, so that this module, which every
//!    output file uses, depends on none of them;
//! 3. re-raises the signal with its default action: the process ends "killed by SIGINT"
//!    (a shell shows status 130; SIGTERM 143, SIGHUP 129).
//!
//! It makes only async-signal-safe calls (`getpid`, `unlink`, `open`/`dup2`/`close`, `write`,
//! `nanosleep`, `signal`, `raise`) and reads only lock-free tables filled before it can need
//! them. A second signal while the first handler runs returns at once: the first ends the
//! process when its work is done. In a child this process forked and that has not yet run
//! `exec`, the handler touches nothing (the tables are its parent's) and only ends the child.
//!
//! A loop that ends cleanly on Ctrl-C (`inspect --watch`) asks for [`StopRequests`] instead:
//! while one lives, SIGINT and SIGTERM only set a flag the loop reads.

pub(crate) mod temps;

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use std::sync::Once;

/// The signals that end a command cleanly.
pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The process that installed the handler (its tables are this process's).
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
/// Set by the first handler, before it cleans anything up: nothing new is registered after.
static ENDING: AtomicBool = AtomicBool::new(false);
/// Live [`StopRequests`] guards.
static STOP_GUARDS: AtomicUsize = AtomicUsize::new(0);
/// A SIGINT or SIGTERM arrived while a [`StopRequests`] lived.
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// Cleanups the handler runs after the temporaries, as `fn()` addresses (0: none).
static CLEANUPS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// Installs the handler and has it run `cleanup` too (once per function; at most four). The
/// function must make only async-signal-safe calls.
pub(crate) fn on_signal_also(cleanup: fn()) {
    install();
    let addr = cleanup as usize;
    for slot in &CLEANUPS {
        match slot.compare_exchange(0, addr, SeqCst, SeqCst) {
            Ok(_) => return,
            Err(existing) if existing == addr => return,
            Err(_) => continue,
        }
    }
    unreachable!("more than four cleanups registered for signals");
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once per process; later calls return).
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: getpid has no preconditions.
        OWNER_PID.store(unsafe { libc::getpid() } as u32, SeqCst);
        for s in SIGNALS {
            // SAFETY: `on_signal` is an `extern "C" fn(c_int)` that only makes async-signal-safe
            // calls; sigaction copies the struct, zeroed then filled (empty flags: a plain
            // handler). The mask holds all three signals: one handler at a time per thread.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut act.sa_mask);
                for m in SIGNALS {
                    libc::sigaddset(&mut act.sa_mask, m);
                }
                libc::sigaction(s, &act, std::ptr::null_mut());
            }
        }
    });
}

/// Whether a handler has started ending the process (read after a slot is claimed: see
/// [`temps`] and the device table).
pub(crate) fn ending() -> bool {
    ENDING.load(SeqCst)
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    // A child forked by this process, signalled before its exec, owns none of the files or
    // devices: the tables are copies of its parent's.
    if pid == OWNER_PID.load(SeqCst) {
        if sig != libc::SIGHUP && STOP_GUARDS.load(SeqCst) > 0 {
            STOP_REQUESTED.store(true, SeqCst);
            return;
        }
        // A second signal (maybe on another thread) returns at once: the first handler ends
        // the process as soon as it has cleaned up.
        if ENDING.swap(true, SeqCst) {
            return;
        }
        temps::unlink_all();
        for slot in &CLEANUPS {
            let addr = slot.load(SeqCst);
            if addr != 0 {
                // SAFETY: every non-zero slot holds the address of a `fn()` stored by
                // `on_signal_also`, whose callers promise it is async-signal-safe.
                let cleanup: fn() = unsafe { std::mem::transmute::<usize, fn()>(addr) };
                cleanup();
            }
        }
    }
    // SAFETY: signal and raise are async-signal-safe; the signal stays blocked until this
    // handler returns, and then its default action ends the process as it would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// While one lives, SIGINT and SIGTERM end nothing: they set [`StopRequests::requested`], for a
/// loop that stops cleanly between two steps. SIGHUP still ends the process.
pub struct StopRequests {
    _private: (),
}

impl StopRequests {
    pub fn new() -> StopRequests {
        install();
        STOP_GUARDS.fetch_add(1, SeqCst);
        StopRequests { _private: () }
    }

    /// Whether SIGINT or SIGTERM arrived since the process started asking.
    pub fn requested(&self) -> bool {
        STOP_REQUESTED.load(SeqCst)
    }
}

impl Default for StopRequests {
    fn default() -> Self {
        StopRequests::new()
    }
}

impl Drop for StopRequests {
    fn drop(&mut self) {
        STOP_GUARDS.fetch_sub(1, SeqCst);
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP on the calling thread while the guard lives, then delivers
/// what arrived meanwhile. Only this thread: other threads may take the signal, and the tables'
/// slot states make that correct (a handler elsewhere waits for a slot this thread holds).
pub(crate) struct Blocked {
    old: libc::sigset_t,
    /// Not `Send`: the mask is restored on the thread that set it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Blocked {
    pub(crate) fn new() -> Blocked {
        // SAFETY: sigset_t is plain data, zeroed then set by sigemptyset before use; the calls
        // only write the sets passed by pointer, both alive on this stack.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked { old, _thread: std::marker::PhantomData }
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask `new` saved, on the thread that saved it (the guard is not
        // `Send`); the set is alive in `self` for the call.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

/// Sleeps `ns` nanoseconds (async-signal-safe: for a handler waiting on another thread).
pub(crate) fn pause(ns: libc::c_long) {
    let t = libc::timespec { tv_sec: 0, tv_nsec: ns };
    // SAFETY: nanosleep is async-signal-safe; it reads `t`, alive on this stack, and may write
    // nothing (null remainder).
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}
