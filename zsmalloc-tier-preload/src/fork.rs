//! Fork: before it, every evicted page is brought back and eviction pauses, so the child
//! inherits all the data as ordinary pages. The child runs untiered (a registration is not
//! inherited without `UFFD_FEATURE_EVENT_FORK`, and the child has no handler thread); its
//! pages missing read zeros, as those of an untouched mapping do. With `--follow-children`
//! the child is tiered on its own instead (`children.rs`). The parent evicts again
//! after the fork; a page the fork left shared is first made the parent's own (the kernel
//! takes a write fault on it without writing: `MADV_POPULATE_WRITE`), then moved out.

use std::sync::atomic::Ordering;

use crate::heap::HEAP;
use crate::sys;
use crate::tier::{self, IN_CHILD, TIER};

/// The forking thread's signal mask, blocked from `prepare` until `parent` or `child` gives it
/// back: a signal handler of the program run while the fork holds the tier's locks could wait
/// on a fault that only a holder of them serves.
struct ForkMask(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigset_t>>);

// SAFETY: written in `prepare` and read in `parent` or `child` by the forking thread, with the
// heap's lock held from one to the other, so one fork at a time.
unsafe impl Sync for ForkMask {}

static FORK_MASK: ForkMask = ForkMask(std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()));

fn give_back_mask() {
    // SAFETY: `prepare` wrote it, and the heap's lock is still held (see ForkMask).
    sys::restore_signals(unsafe { (*FORK_MASK.0.get()).assume_init_ref() });
}

fn tiered() -> Option<&'static tier::Tier> {
    TIER.get().filter(|_| !IN_CHILD.load(Ordering::Relaxed))
}

extern "C" fn prepare() {
    let mask = sys::block_signals();
    HEAP.lock.lock();
    // SAFETY: the heap's lock is held (see ForkMask).
    unsafe { (*FORK_MASK.0.get()).write(mask) };
    if let Some(t) = tiered() {
        // The handler brings the pages back (`doorbell.rs`: this thread may not read the
        // pool). Asked again if the tier began meanwhile.
        loop {
            if t.active.load(Ordering::Acquire) {
                crate::doorbell::bring_back_for_fork(t);
            }
            t.state.lock.lock();
            // SAFETY: the state's lock is held.
            if !t.active.load(Ordering::Acquire) || unsafe { t.state.held() }.paused {
                break;
            }
            t.state.lock.unlock();
        }
        // The child inherits the record's buffer: written now, it is never written twice.
        // SAFETY: the state's lock is held (above).
        tier::record(&mut unsafe { t.state.held() }.record, crate::record::Recorder::flush);
    }
}

extern "C" fn parent() {
    if let Some(t) = tiered() {
        // SAFETY: `prepare` holds the state's lock.
        let st = unsafe { t.state.held() };
        st.paused = false;
        let over = st.pages.over_budget();
        t.state.lock.unlock();
        // Every page came back: the handler, perhaps asleep within the budget, evicts again.
        if over {
            t.wakeup.ring();
        }
    }
    give_back_mask();
    HEAP.lock.unlock();
}

extern "C" fn child() {
    HEAP.lock.reset();
    in_child();
    give_back_mask();
}

/// The tier in the child: on its own, or untiered.
fn in_child() {
    if let Some(t) = tiered() {
        let was_active = t.active.swap(false, Ordering::AcqRel);
        t.state.lock.reset();
        // With --follow-children the child is tiered on its own (if it can be). Not under
        // --user-faults-only: the child would begin by evicting all it inherited above the
        // budget, the parent's live buffers among them, and its system calls on those would
        // fail (a multiprocessing worker's first read of its pipe did).
        if was_active
            && crate::modes::following()
            && !crate::modes::USER_FAULTS_ONLY.load(Ordering::Relaxed)
            && crate::sys::as_tier(|| crate::children::tier_the_child(t))
        {
            return;
        }
        IN_CHILD.store(true, Ordering::Relaxed);
        crate::own_fds::release_all();
    }
}

pub fn install() {
    // SAFETY: the three handlers are plain functions that live as long as the library.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}
