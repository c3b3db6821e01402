//! The handler thread: it registers the reserve, counts the pages the program touched before
//! that as resident, makes the pool (so the pool's own mappings and allocations are never the
//! program's), then serves faults one at a time, sleeping in `poll` when there are none. It runs with every signal blocked, so
//! none of the program's handlers runs on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zsmalloc_core::{AnyPool, Backend};
use zsmalloc_tier::stats::{Field, State as TierState, MAGIC};
use zsmalloc_tier::uffd::{Event, Modes, UffdError};

use crate::reserve;
use crate::sys::{self, PAGE};
use crate::tier::{self, Tier, TIER};

/// How long after a fault the handler looks for the next one before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// The handler has begun (tiering, or stepped aside before).
pub static BEGUN: AtomicBool = AtomicBool::new(false);

/// Starts the handler thread.
pub fn spawn() -> Result<(), String> {
    // SAFETY: sigset_t values are plain data filled by sigfillset; the mask is this thread's
    // and restored below, so the new thread alone keeps everything blocked.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut thread: libc::pthread_t = 0;
        let r = libc::pthread_create(&mut thread, std::ptr::null(), main, std::ptr::null_mut());
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if r != 0 {
            return Err(format!("the handler thread could not start (error {r})"));
        }
        libc::pthread_detach(thread);
    }
    Ok(())
}

extern "C" fn main(_: *mut libc::c_void) -> *mut libc::c_void {
    sys::mark_handler();
    crate::handler_cpu::begins();
    // SAFETY: names this thread (NUL-terminated, under 16 bytes) for ps and debuggers.
    unsafe { libc::pthread_setname_np(libc::pthread_self(), c"zsmalloc-tier".as_ptr()) };
    let t = TIER.get().expect("started after the tier was set");
    run(t);
    crate::handler_cpu::store();
    crate::doorbell::HANDLER_STOPPED.store(true, Ordering::Release);
    std::ptr::null_mut()
}

/// Begins, then serves until the tier steps aside.
fn run(t: &Tier) {
    // A forked child's tier registered its reserve before starting this thread.
    let begun = if t.active.load(Ordering::Acquire) { Ok(()) } else { begin(t) };
    BEGUN.store(true, Ordering::Release);
    if let Err(why) = begun {
        tier::stats().set_state(TierState::SteppedAside, &why);
        return;
    }
    if let Err(why) = make_pool(t) {
        t.step_aside(&why);
        return;
    }
    let mut last_fault = Instant::now();
    loop {
        match t.uffd.read_event() {
            Ok(Some(Event::PageFault { address, .. })) => {
                let t0 = Instant::now();
                last_fault = t0;
                let page = address & !(PAGE - 1);
                if reserve::contains(page) {
                    t.serve(page, t0);
                } else if crate::doorbell::is_doorbell(page) && !crate::doorbell::answer(t) {
                    return;
                }
            }
            Ok(Some(_)) => {}
            // Nothing to serve: sleep until a fault comes; over the budget (pages a fork left
            // shared, a pool that was full) eviction is tried again every 50 ms meanwhile.
            Ok(None) => {
                if t.state.with(|st| t.evict_while_idle(st)) {
                    continue;
                }
                // Faults come in runs: a handler that sleeps at once leaves its CPU to halt,
                // and waking a halted CPU is most of a fault's wait in a virtual machine. For
                // a moment after a fault it looks again, yielding its CPU between looks (to
                // the faulting thread, when they share one).
                if last_fault.elapsed() < SPIN {
                    std::thread::yield_now();
                    continue;
                }
                let over = t.state.with(|st| st.pages.over_budget());
                let wait = Duration::from_millis(if over { 50 } else { 3_600_000 });
                crate::handler_cpu::store();
                match t.uffd.poll_with(Some(t.wakeup.fd()), wait) {
                    Ok(false) if over => t.state.with(|st| t.evict_over_budget(st)),
                    Ok(_) => t.wakeup.drain(),
                    Err(e) => return give_up(t, e),
                }
            }
            Err(e) => return give_up(t, e),
        }
    }
}

fn give_up(t: &Tier, e: UffdError) {
    t.step_aside(&format!("the userfaultfd failed: {e}"));
}

/// The pool made, the reserve registered and the pages already touched counted.
fn begin(t: &Tier) -> Result<(), String> {
    t.state.with(|st| {
        t.uffd
            .register(
                reserve::base(),
                reserve::reserve_len(),
                if t.protect { Modes::MISSING_AND_WP } else { Modes::MISSING },
            )
            .map_err(|e| e.to_string())?;
        let pages = reserve::high_water_pages();
        let mut present = vec![0u8; pages];
        // SAFETY: `present` has a byte per page of the reserve's used part, as mincore writes.
        let r = unsafe {
            libc::mincore(reserve::base() as *mut libc::c_void, pages * PAGE, present.as_mut_ptr())
        };
        if r != 0 {
            let _ = t.uffd.unregister(reserve::base(), reserve::reserve_len());
            return Err(format!("mincore: {}", std::io::Error::last_os_error()));
        }
        for (page, _) in present.iter().enumerate().filter(|(_, b)| *b & 1 != 0) {
            t.arrive(st, page);
        }
        crate::user_faults::map_untouched(t, st, 0, pages);
        t.active.store(true, Ordering::Release);
        let w = tier::stats();
        w.set(Field::Magic, MAGIC);
        w.set_state(TierState::Tiering, "");
        Ok(())
    })
}

/// The pool, made once the program may go on. The program's start (its constructors) holds
/// the loader's lock, which the pool's first use on this thread takes (glibc registers the
/// thread's destructors of thread-local data under it), so it is made and used once here,
/// after the start is released, never later in the middle of a fault a `dlopen` waits on.
fn make_pool(t: &Tier) -> Result<(), String> {
    t.state.with(|st| {
        if st.pool.is_some() {
            // A forked child's, inherited: it holds no object (none is stored at a fork).
            t.evict_over_budget(st);
            return Ok(());
        }
        let config = st.config.take().expect("set by start");
        let pool = AnyPool::with_name("tier", config).map_err(|e| e.to_string())?;
        let word = std::sync::atomic::AtomicUsize::new(0);
        // SAFETY: `word` is an empty handle word that stays in place until freed below.
        unsafe {
            pool.store_raw(&word, &[0u8; 64]).map_err(|e| e.to_string())?;
            pool.read_into_raw(&word, &mut st.packed).map_err(|e| e.to_string())?;
            pool.free_raw(&word).map_err(|e| e.to_string())?;
        }
        st.pool = Some(pool);
        t.evict_over_budget(st);
        Ok(())
    })
}
